// The Go-template subset for ollama's `template` override (see go_template.h). The source is
// split into text and actions; if/else/end form a tree walked once.
#include "template/go_template.h"

#include <cctype>
#include <memory>
#include <vector>

namespace hearth {
namespace {

struct Node {
  enum class Kind { kText, kField, kIf };
  Kind kind = Kind::kText;
  std::string value;               // text, or the field name (kField, kIf condition)
  std::vector<Node> then_branch;   // kIf
  std::vector<Node> else_branch;   // kIf
};

struct Action {
  std::string body;  // trimmed inside of {{ }}
  bool trim_left = false, trim_right = false;
};

Error template_error(const std::string& message) {
  return make_error(ErrorKind::kInvalidArgument, "template: " + message);
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// A field reference ".Name" → "Name"; anything else is refused.
Result<std::string> field_name(const std::string& expr) {
  if (expr.size() < 2 || expr[0] != '.') return template_error("unsupported expression '" + expr + "'");
  for (size_t i = 1; i < expr.size(); ++i) {
    if (!std::isalnum(static_cast<unsigned char>(expr[i])) && expr[i] != '_') {
      return template_error("unsupported expression '" + expr + "'");
    }
  }
  std::string name = expr.substr(1);
  if (name != "System" && name != "Prompt" && name != "Response" && name != "Suffix") {
    return template_error("unsupported field '" + expr + "' (supported: .System, .Prompt, .Response, .Suffix)");
  }
  return name;
}

class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src) {}

  Result<std::vector<Node>> parse() {
    std::vector<Node> root;
    std::string stop;
    HEARTH_TRY(parse_list(root, stop));
    if (!stop.empty()) return template_error("unexpected {{" + stop + "}}");
    return root;
  }

 private:
  // Parses until end of input or an `else`/`end` action, which is returned in `stop`.
  Status parse_list(std::vector<Node>& out, std::string& stop) {
    while (pos_ < src_.size()) {
      size_t open = src_.find("{{", pos_);
      std::string text(src_.substr(pos_, open == std::string_view::npos ? std::string_view::npos : open - pos_));
      if (open == std::string_view::npos) {
        pos_ = src_.size();
        append_text(out, text);
        break;
      }
      HEARTH_ASSIGN(Action action, read_action(open));
      if (action.trim_left) text = rtrim(text);
      append_text(out, text);
      trim_next_ = action.trim_right;
      const std::string& body = action.body;
      if (body.rfind("/*", 0) == 0) continue;  // comment
      if (body == "else" || body == "end") {
        stop = body;
        return ok_status();
      }
      if (body.rfind("if ", 0) == 0) {
        if (++depth_ > kMaxDepth) return template_error("{{if}} nested too deeply");
        Node node;
        node.kind = Node::Kind::kIf;
        HEARTH_ASSIGN(node.value, field_name(trim(body.substr(3))));
        std::string inner_stop;
        HEARTH_TRY(parse_list(node.then_branch, inner_stop));
        if (inner_stop == "else") {
          HEARTH_TRY(parse_list(node.else_branch, inner_stop));
        }
        if (inner_stop != "end") return template_error("{{if}} without {{end}}");
        --depth_;
        out.push_back(std::move(node));
        continue;
      }
      Node node;
      node.kind = Node::Kind::kField;
      HEARTH_ASSIGN(node.value, field_name(body));
      out.push_back(std::move(node));
    }
    return ok_status();
  }

  Result<Action> read_action(size_t open) {
    size_t close = src_.find("}}", open + 2);
    if (close == std::string_view::npos) return template_error("unclosed '{{'");
    std::string_view inner = src_.substr(open + 2, close - open - 2);
    Action a;
    if (inner.size() >= 2 && inner[0] == '-' && std::isspace(static_cast<unsigned char>(inner[1]))) {
      a.trim_left = true;
      inner.remove_prefix(1);
    }
    if (inner.size() >= 2 && inner.back() == '-' && std::isspace(static_cast<unsigned char>(inner[inner.size() - 2]))) {
      a.trim_right = true;
      inner.remove_suffix(1);
    }
    a.body = trim(inner);
    if (a.body.rfind("/*", 0) == 0 && (a.body.size() < 4 || a.body.compare(a.body.size() - 2, 2, "*/") != 0)) {
      return template_error("unclosed comment");
    }
    pos_ = close + 2;
    return a;
  }

  void append_text(std::vector<Node>& out, std::string text) {
    if (trim_next_) {  // a preceding "-}}" trims the whitespace right after it
      size_t b = 0;
      while (b < text.size() && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
      text.erase(0, b);
      trim_next_ = false;
    }
    if (text.empty()) return;
    Node n;
    n.kind = Node::Kind::kText;
    n.value = std::move(text);
    out.push_back(std::move(n));
  }

  static std::string rtrim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  }

  static constexpr int kMaxDepth = 32;
  std::string_view src_;
  size_t pos_ = 0;
  bool trim_next_ = false;
  int depth_ = 0;
};

void render(const std::vector<Node>& nodes, const std::map<std::string, std::string>& fields, std::string& out) {
  for (const auto& n : nodes) {
    switch (n.kind) {
      case Node::Kind::kText: out += n.value; break;
      case Node::Kind::kField: {
        auto it = fields.find(n.value);
        if (it != fields.end()) out += it->second;
        break;
      }
      case Node::Kind::kIf: {
        auto it = fields.find(n.value);
        bool truthy = it != fields.end() && !it->second.empty();
        render(truthy ? n.then_branch : n.else_branch, fields, out);
        break;
      }
    }
  }
}

}  // namespace

Result<std::string> render_go_template(std::string_view source, const std::map<std::string, std::string>& fields) {
  Parser parser(source);
  HEARTH_ASSIGN(auto nodes, parser.parse());
  std::string out;
  render(nodes, fields, out);
  return out;
}

Result<std::string> render_go_template_chat(std::string_view source, const std::vector<GoTemplateMessage>& messages) {
  Parser parser(source);
  HEARTH_ASSIGN(auto nodes, parser.parse());
  // Marks where the last turn's response would begin; cut there.
  const std::string kResponseMark = "\x01hearth-response\x01";
  std::string out;
  std::map<std::string, std::string> turn;
  auto append = [](std::string& field, const std::string& text) { field += (field.empty() ? "" : "\n\n") + text; };
  for (const auto& m : messages) {
    if (m.role == "system") {
      append(turn["System"], m.content);
    } else if (m.role == "assistant") {
      turn["Response"] = m.content;
      render(nodes, turn, out);
      turn.clear();
    } else {
      append(turn["Prompt"], m.content);
    }
  }
  turn["Response"] = kResponseMark;
  std::string last;
  render(nodes, turn, last);
  const size_t cut = last.find(kResponseMark);
  out += cut == std::string::npos ? last : last.substr(0, cut);
  return out;
}

}  // namespace hearth
