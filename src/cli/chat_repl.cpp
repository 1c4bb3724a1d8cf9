// The chat REPL (see chat_repl.h).
#include "cli/chat_repl.h"

#include <cstdio>
#include <istream>
#include <ostream>

namespace hearth::cli {
namespace {

void print_help(std::ostream& out) {
  out << "Commands:\n"
         "  /bye, /exit   leave\n"
         "  /clear        forget the conversation so far\n"
         "  /help         this text\n";
}

// One exchange: sends the history, streams the reply to `out`, appends it to the history.
bool exchange(OllamaClient& client, const ChatReplOptions& options, std::vector<ChatMessage>& history, std::ostream& out,
              std::ostream& err) {
  std::string reply;
  auto stats = client.chat(options.model, history, options.options, [&](std::string_view piece) {
    reply.append(piece);
    out << piece;
    out.flush();
    return true;
  });
  out << "\n";
  if (!stats.ok()) {
    err << "hearth chat: " << stats.error().message << "\n";
    history.pop_back();  // the unanswered message leaves the history
    return false;
  }
  history.push_back({"assistant", reply});
  if (options.show_stats) {
    const double secs = static_cast<double>(stats->eval_duration_ns) / 1e9;
    char line[160];
    std::snprintf(line, sizeof(line), "[prompt %lld tokens | reply %lld tokens, %.1f tokens/s | %s]\n",
                  static_cast<long long>(stats->prompt_eval_count), static_cast<long long>(stats->eval_count),
                  secs > 0 ? static_cast<double>(stats->eval_count) / secs : 0.0, stats->done_reason.c_str());
    err << line;
  }
  return true;
}

std::vector<ChatMessage> fresh_history(const ChatReplOptions& options) {
  std::vector<ChatMessage> h;
  if (!options.system.empty()) h.push_back({"system", options.system});
  return h;
}

}  // namespace

int run_chat_repl(OllamaClient& client, const ChatReplOptions& options, std::istream& in, std::ostream& out,
                  std::ostream& err) {
  std::vector<ChatMessage> history = fresh_history(options);
  if (options.interactive) out << "Chatting with " << options.model << ". Type /help for commands, /bye to leave.\n";
  std::string line;
  int status = 0;
  for (;;) {
    if (options.interactive) {
      out << ">>> ";
      out.flush();
    }
    if (!std::getline(in, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line == "/bye" || line == "/exit") break;
    if (line == "/clear") {
      history = fresh_history(options);
      out << "(conversation cleared)\n";
      continue;
    }
    if (line == "/help" || line == "/?") {
      print_help(out);
      continue;
    }
    if (line[0] == '/') {
      err << "unknown command '" << line << "'; /help lists them\n";
      continue;
    }
    history.push_back({"user", line});
    if (!exchange(client, options, history, out, err)) status = 1;
  }
  if (options.interactive) out << "\n";
  return status;
}

int run_chat_once(OllamaClient& client, const ChatReplOptions& options, const std::string& message, std::ostream& out,
                  std::ostream& err) {
  std::vector<ChatMessage> history = fresh_history(options);
  history.push_back({"user", message});
  return exchange(client, options, history, out, err) ? 0 : 1;
}

}  // namespace hearth::cli
