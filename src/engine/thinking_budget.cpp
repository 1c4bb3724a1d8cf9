// ThinkingBudget (see thinking_budget.h): a marker may arrive split over tokens, so the last
// bytes that could begin one are kept between tokens.
#include "engine/thinking_budget.h"

namespace hearth::engine {

ThinkingBudget::ThinkingBudget(int32_t budget, bool open_at_start, std::string open, std::string close)
    : state_(open.empty() || close.empty() ? State::kOff : open_at_start ? State::kInside : State::kBefore),
      budget_(budget),
      open_(std::move(open)),
      close_(std::move(close)) {}

bool ThinkingBudget::due() {
  if (state_ != State::kInside || budget_ < 0 || count_ < budget_) return false;
  state_ = State::kDone;
  return true;
}

void ThinkingBudget::trim_for(const std::string& marker) {
  const size_t keep = marker.size() - 1;
  if (tail_.size() > keep) tail_.erase(0, tail_.size() - keep);
}

void ThinkingBudget::on_token(std::string_view piece) {
  if (state_ == State::kOff || state_ == State::kDone) return;
  tail_.append(piece);
  if (state_ == State::kBefore) {
    const size_t at = tail_.find(open_);
    if (at == std::string::npos) {
      trim_for(open_);
      return;
    }
    // The token that opens the reasoning is not counted; what follows the marker in it is
    // watched for the closing marker.
    state_ = State::kInside;
    tail_.erase(0, at + open_.size());
  } else {
    ++count_;
  }
  if (tail_.find(close_) != std::string::npos) {
    state_ = State::kDone;
    tail_.clear();
    return;
  }
  trim_for(close_);
}

}  // namespace hearth::engine
