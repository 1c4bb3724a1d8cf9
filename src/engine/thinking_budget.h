// Where the reply's reasoning is (the text between the family's opening and closing markers,
// e.g. <think> ... </think>): ThinkingBudget watches the generated text token by token and counts
// the reasoning tokens (usage's reasoning_tokens); the lazy tool-call grammar watches for its
// trigger only outside reasoning. With a budget, after `budget` tokens of reasoning the engine
// closes the reasoning itself by generating the closing text in place of sampled tokens, and
// the answer continues from there; ThinkingBudget says when that is due.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::engine {

class ThinkingBudget {
 public:
  ThinkingBudget() = default;  // no markers: never inside, never due
  // open_at_start: the prompt ended inside the reasoning (the template opened it). budget < 0:
  // the reasoning is tracked and counted, never cut.
  ThinkingBudget(int32_t budget, bool open_at_start, std::string open, std::string close);

  // Before sampling: the reasoning is open and has used up the budget. True once; the caller
  // then writes the closing text (which on_token sees like any other text).
  bool due();
  // After each generated token, its text.
  void on_token(std::string_view piece);

  bool inside() const { return state_ == State::kInside; }
  int32_t reasoning_tokens() const { return count_; }

 private:
  enum class State { kOff, kBefore, kInside, kDone };
  // Keeps the last bytes of tail_ that could begin `marker` (its length less one).
  void trim_for(const std::string& marker);

  State state_ = State::kOff;
  int32_t budget_ = 0;
  int32_t count_ = 0;
  std::string open_, close_;
  std::string tail_;
};

}  // namespace hearth::engine
