// One streamed model turn (see chat_turn.h).
#include "cli/chat_turn.h"

#include <ostream>

#include "cli/interrupt_watch.h"
#include "cli/reply_printer.h"

namespace hearth::cli {

using Json = nlohmann::json;

Json session_request(const SessionOptions& o) {
  Json body = {{"model", o.model}, {"stream", true}};
  if (!o.parameters.empty()) body["options"] = o.parameters;
  if (!o.format.empty()) body["format"] = o.format;
  if (!o.keep_alive.empty()) body["keep_alive"] = o.keep_alive;
  if (!o.think.is_null()) body["think"] = o.think;
  return body;
}

Result<ReplyOutcome> stream_reply(OllamaClient& client, const std::string& path, const Json& body, const SessionOptions& o,
                                  Console& console) {
  ReplyPrinter printer(console.out, o.word_wrap && console.out_terminal ? console.width - 1 : 0, o.hide_thinking,
                       console.out_terminal);
  ReplyOutcome outcome;
  Status status = ok_status();
  outcome.interrupted = run_interruptible(
      [&] {
        status = client.stream(path, body, [&](const Json& chunk) {
          printer.on_chunk(chunk);
          if (chunk.value("done", false)) outcome.stats = chat_stats_from_json(chunk);
          return true;
        });
      },
      [&] { client.cancel(); });
  printer.finish(!outcome.interrupted);
  outcome.content = printer.content();
  outcome.thinking = printer.thinking();
  if (outcome.interrupted) return outcome;
  if (!status.ok()) {
    if (!outcome.content.empty() || !outcome.thinking.empty()) console.out << "\n";  // end the partial reply's line
    return status.error();
  }
  return outcome;
}

Status preload_model(OllamaClient& client, const SessionOptions& o) {
  Json body = {{"model", o.model}, {"stream", false}};
  if (!o.keep_alive.empty()) body["keep_alive"] = o.keep_alive;
  auto r = client.call("POST", "/api/generate", &body);
  if (!r.ok()) return r.error();
  return ok_status();
}

}  // namespace hearth::cli
