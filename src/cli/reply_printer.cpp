// Streamed reply output (see reply_printer.h).
#include "cli/reply_printer.h"

namespace hearth::cli {
namespace {

std::string string_at(const nlohmann::json& j, const char* object, const char* key) {
  const nlohmann::json* holder = &j;
  if (object != nullptr) {
    auto it = j.find(object);
    if (it == j.end() || !it->is_object()) return "";
    holder = &*it;
  }
  auto it = holder->find(key);
  return it != holder->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

void ReplyPrinter::end_thinking() {
  if (!in_thinking_) return;
  in_thinking_ = false;
  out_ << wrap_.flush() << "\n...done thinking.\n\n" << (color_ ? "\x1b[0m" : "");
  wrap_.reset();
}

void ReplyPrinter::on_chunk(const nlohmann::json& chunk) {
  std::string thinking = string_at(chunk, "message", "thinking");
  if (thinking.empty()) thinking = string_at(chunk, nullptr, "thinking");
  std::string content = string_at(chunk, "message", "content");
  if (content.empty()) content = string_at(chunk, nullptr, "response");
  if (!thinking.empty()) {
    thinking_ += thinking;
    if (!hide_thinking_) {
      if (!in_thinking_) {
        in_thinking_ = true;
        out_ << (color_ ? "\x1b[90m" : "") << "Thinking...\n";
        wrap_.reset();
      }
      out_ << wrap_.feed(thinking);
    }
  }
  if (!content.empty()) {
    end_thinking();
    content_ += content;
    out_ << wrap_.feed(content);
  }
  out_.flush();
}

void ReplyPrinter::finish(bool print_held_word) {
  end_thinking();
  const std::string held = wrap_.flush();
  if (print_held_word) out_ << held;
  out_.flush();
}

}  // namespace hearth::cli
