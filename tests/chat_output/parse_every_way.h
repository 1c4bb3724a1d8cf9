// Test helpers for ChatOutputParser: parse a model output whole, cut in two at every byte
// position and byte by byte, and check that all agree (the streaming guarantee).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat_output/chat_output_parser.h"

namespace hearth {

struct Parsed {
  std::string content, reasoning;
  std::vector<ParsedToolCall> calls;
  bool operator==(const Parsed& o) const {
    if (content != o.content || reasoning != o.reasoning || calls.size() != o.calls.size()) return false;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].id != o.calls[i].id || calls[i].name != o.calls[i].name || calls[i].arguments != o.calls[i].arguments) return false;
    }
    return true;
  }
};

inline std::string describe(const Parsed& p) {
  std::string s = "content=[" + p.content + "] reasoning=[" + p.reasoning + "] calls:";
  for (const auto& c : p.calls) s += " " + c.name + c.arguments + (c.id.empty() ? "" : "#" + c.id);
  return s;
}

inline void add(Parsed& p, const ChatOutputDelta& d) {
  p.content += d.content;
  p.reasoning += d.reasoning;
  p.calls.insert(p.calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

inline Parsed parse_chunks(const ChatOutputFormat& format, const std::vector<std::string>& chunks) {
  ChatOutputParser parser(format);
  Parsed p;
  for (const auto& c : chunks) add(p, parser.feed(c));
  add(p, parser.finish());
  return p;
}

// Parses `text` whole, then cut at every byte position, then byte by byte; all must agree.
inline Parsed parse_every_way(const ChatOutputFormat& format, const std::string& text) {
  Parsed whole = parse_chunks(format, {text});
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Parsed split = parse_chunks(format, {text.substr(0, cut), text.substr(cut)});
    EXPECT_TRUE(split == whole) << "cut at " << cut << ": " << describe(split) << " vs " << describe(whole);
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  Parsed streamed = parse_chunks(format, bytes);
  EXPECT_TRUE(streamed == whole) << "byte by byte: " << describe(streamed) << " vs " << describe(whole);
  return whole;
}

inline ChatOutputFormat tools_format(ChatOutputFamily family, bool reasoning = false, bool open = false) {
  return ChatOutputFormat{family, true, reasoning, open, {}};
}

}  // namespace hearth
