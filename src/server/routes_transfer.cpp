// POST /api/pull and POST /api/push (store mode): ollama's request ({"model"|"name", "insecure",
// "stream"}) and its NDJSON progress ({"status":"pulling <12 hex>","digest":...,"total":N,
// "completed":M} ... {"status":"success"}; an {"error": ...} line when it fails midway), or one
// JSON answer with "stream": false. A client that goes away cancels the transfer: the store
// publishes a pulled manifest only after every blob is verified, so nothing half-written is seen.
#include "api/ollama.h"
#include "server/server_state.h"
#include "server/stored_models.h"
#include "transfer/model_transfer.h"
#include "util/log.h"

namespace hearth::server {
namespace {

using api::Json;

enum class Direction { kPull, kPush };

Json event_json(const transfer::ProgressEvent& e) {
  Json j{{"status", e.status}};
  if (!e.digest.empty()) {
    j["digest"] = e.digest;
    j["total"] = e.total;
    j["completed"] = e.completed;
  }
  return j;
}

Status run_transfer(Direction direction, const store::ModelStore& store, const store::ModelName& name,
                    const transfer::TransferOptions& options, const transfer::ProgressCallback& progress) {
  if (direction == Direction::kPull) {
    auto pulled = transfer::pull_model(store, name, options, progress);
    return pulled.ok() ? ok_status() : Status(pulled.error());
  }
  auto pushed = transfer::push_model(store, name, options, progress);
  return pushed.ok() ? ok_status() : Status(pushed.error());
}

// What went wrong on the registry's side (a corrupt blob, a bad manifest) is a bad gateway, not
// a bad request.
HttpError transfer_http_error(const Error& e) {
  if (e.kind == ErrorKind::kCorrupt) return {502, e.message};
  return http_error_from(e);
}

void transfer_route(const RouteCall& call, Direction direction) {
  auto body = require_json(call);
  if (!body) return;
  auto name = model_name_field(*body, "model", "name");
  auto insecure = name.ok() ? api::read_bool(*body, "insecure") : Result<std::optional<bool>>(name.error());
  auto stream = insecure.ok() ? api::read_bool(*body, "stream") : insecure;
  if (!stream.ok()) {
    send_status_error(call, stream.error());
    return;
  }
  transfer::TransferOptions options;
  options.insecure = insecure->value_or(false);
  auto store = call.state.options.store;
  const store::ModelName model = *name;
  const char* verb = direction == Direction::kPull ? "pull" : "push";
  State* state = &call.state;
  if (!stream->value_or(true)) {
    auto progress = [state](const transfer::ProgressEvent&) { return state->keep_serving(); };
    if (Status st = run_transfer(direction, *store, model, options, progress); !st.ok()) {
      log_warn(std::string(verb) + " failed", {{"model", model.display()}, {"error", st.error().to_string()}});
      send_error(call.res, call.dialect, transfer_http_error(st.error()));
      return;
    }
    send_json(call.res, Json{{"status", "success"}});
    return;
  }
  call.res.set_chunked_content_provider("application/x-ndjson", [state, store, model, options, direction, verb](size_t, httplib::DataSink& sink) {
    bool client_gone = false;
    auto line = [&](const Json& j) {
      const std::string text = api::dump_json(j) + "\n";
      if (!client_gone && !sink.write(text.data(), text.size())) client_gone = true;
      if (!client_gone && !sink.is_writable()) client_gone = true;
      return !client_gone && !state->stopping.load();
    };
    auto progress = [&](const transfer::ProgressEvent& e) { return line(event_json(e)); };
    Status st = run_transfer(direction, *store, model, options, progress);
    if (st.ok()) {
      line(Json{{"status", "success"}});
    } else {
      log_warn(std::string(verb) + " failed", {{"model", model.display()}, {"error", st.error().to_string()}});
      line(Json{{"error", st.error().message}});
    }
    sink.done();
    return !client_gone;
  });
}

}  // namespace

void register_transfer_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOllama;
  add_route(s, kDialect, "POST", "/api/pull", [](const RouteCall& call) { transfer_route(call, Direction::kPull); });
  add_route(s, kDialect, "POST", "/api/push", [](const RouteCall& call) { transfer_route(call, Direction::kPush); });
}

}  // namespace hearth::server
