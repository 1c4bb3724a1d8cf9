// The model store's routes (store mode only): POST /api/create (ollama's JSON form, or the
// older `modelfile` text; NDJSON {"status": ...} progress when streaming), HEAD /api/blobs/:digest
// (is it there?), POST /api/blobs/:digest (an upload, read in pieces and kept only when its
// sha256 is the digest), POST /api/copy and DELETE /api/delete.
#include "api/ollama.h"
#include "server/server_state.h"
#include "server/stored_models.h"
#include "store/model_create.h"
#include "util/log.h"

namespace hearth::server {

Result<store::ModelName> model_name_field(const api::Json& body, const char* key, const char* old_key) {
  std::string name;
  for (const char* k : {key, old_key}) {
    if (k == nullptr || !body.contains(k)) continue;
    if (!body[k].is_string()) return make_error(ErrorKind::kInvalidArgument, std::string("'") + k + "' must be a string");
    name = body[k].get<std::string>();
    if (!name.empty()) break;
  }
  if (name.empty()) return make_error(ErrorKind::kInvalidArgument, std::string("'") + key + "' is required");
  return store::parse_model_name(name);
}

namespace {

using api::Json;

Result<std::vector<std::pair<std::string, std::string>>> digest_map(const Json& body, const char* key) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!body.contains(key) || body[key].is_null()) return out;
  if (!body[key].is_object()) return make_error(ErrorKind::kInvalidArgument, std::string("'") + key + "' must be an object of file name: digest");
  for (const auto& [file, digest] : body[key].items()) {
    if (!digest.is_string()) return make_error(ErrorKind::kInvalidArgument, std::string("'") + key + "." + file + "' must be a digest string");
    out.emplace_back(file, digest.get<std::string>());
  }
  return out;
}

// ollama's /api/create body as a store request.
Result<store::CreateRequest> create_request(const Json& body) {
  store::CreateRequest r;
  HEARTH_ASSIGN(auto modelfile, api::read_string(body, "modelfile"));
  if (modelfile && !modelfile->empty()) {
    HEARTH_ASSIGN(const store::Modelfile m, store::parse_modelfile(*modelfile));
    r = store::create_request_from(m);
  }
  HEARTH_ASSIGN(auto from, api::read_string(body, "from"));
  if (from) r.from = *from;
  HEARTH_ASSIGN(r.files, digest_map(body, "files"));
  HEARTH_ASSIGN(r.adapters, digest_map(body, "adapters"));
  HEARTH_ASSIGN(auto templ, api::read_string(body, "template"));
  if (templ) r.template_text = *templ;
  HEARTH_ASSIGN(auto system, api::read_string(body, "system"));
  if (system) r.system = *system;
  if (body.contains("license") && !body["license"].is_null()) {
    const Json& l = body["license"];
    if (l.is_string()) {
      r.licenses = {l.get<std::string>()};
    } else {
      HEARTH_ASSIGN(auto list, api::read_string_list(body, "license"));
      r.licenses = list.value_or(std::vector<std::string>{});
    }
  }
  HEARTH_ASSIGN(const Json* params, api::read_object(body, "parameters"));
  if (params) {
    for (const auto& [k, v] : params->items()) r.parameters[k] = v;
  }
  HEARTH_ASSIGN(const Json* messages, api::read_array(body, "messages"));
  if (messages) {
    std::vector<store::ChatMessage> list;
    for (size_t i = 0; i < messages->size(); ++i) {
      const Json& m = (*messages)[i];
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") || !m["content"].is_string()) {
        return make_error(ErrorKind::kInvalidArgument, "'messages[" + std::to_string(i) + "]' needs a string role and content");
      }
      list.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    r.messages = std::move(list);
  }
  HEARTH_ASSIGN(auto quantize, api::read_string(body, "quantize"));
  if (quantize) r.quantize = *quantize;
  return r;
}

void create(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return;
  auto name = model_name_field(*body, "model", "name");
  auto request = name.ok() ? create_request(*body) : Result<store::CreateRequest>(name.error());
  auto stream = api::read_bool(*body, "stream");
  if (!request.ok() || !stream.ok()) {
    send_status_error(call, request.ok() ? stream.error() : request.error());
    return;
  }
  auto store = call.state.options.store;
  store::CreateOptions options;
  options.allow_local_paths = call.state.options.allow_local_files;
  options.base_dir = "/";
  const store::ModelName model = *name;
  const store::CreateRequest req = *request;
  if (!stream->value_or(true)) {
    auto created = store::create_model(*store, model, req, options, [](const std::string&) {});
    if (!created.ok()) {
      send_status_error(call, created.error());
      return;
    }
    send_json(call.res, Json{{"status", "success"}});
    return;
  }
  call.res.set_chunked_content_provider("application/x-ndjson", [store, model, req, options](size_t, httplib::DataSink& sink) {
    bool client_gone = false;
    auto line = [&](const Json& j) {
      const std::string text = api::dump_json(j) + "\n";
      if (!client_gone && !sink.write(text.data(), text.size())) client_gone = true;
    };
    auto created = store::create_model(*store, model, req, options, [&](const std::string& status) { line(Json{{"status", status}}); });
    if (created.ok()) {
      line(Json{{"status", "success"}});
    } else {
      log_warn("create failed", {{"model", model.display()}, {"error", created.error().to_string()}});
      line(Json{{"error", created.error().message}});
    }
    sink.done();
    return !client_gone;
  });
}

void blob_exists(const RouteCall& call) {
  auto digest = store::parse_digest(call.req.matches[1].str());
  if (!digest.ok()) {
    send_status_error(call, digest.error());
    return;
  }
  if (call.state.options.store->has_blob(*digest)) {
    call.res.status = 200;
  } else {
    send_error(call.res, call.dialect, http_not_found("blob " + *digest));
  }
}

void blob_upload(const RouteCall& call, const httplib::ContentReader& reader) {
  auto digest = store::parse_digest(call.req.matches[1].str());
  if (!digest.ok()) {
    send_status_error(call, digest.error());
    return;
  }
  const store::ModelStore& store = *call.state.options.store;
  if (store.has_blob(*digest)) {
    call.res.status = 200;  // the body is left unread: the connection closes after this answer
    return;
  }
  auto writer = store.begin_blob();
  if (!writer.ok()) {
    send_status_error(call, writer.error());
    return;
  }
  Status written = ok_status();
  const bool read_all = reader([&](const char* data, size_t n) {
    written = writer->append(std::string_view(data, n));
    return written.ok() && !call.state.stopping.load();
  });
  if (!written.ok()) {
    send_status_error(call, written.error());
    return;
  }
  if (!read_all) {
    send_error(call.res, call.dialect, HttpError{400, "the upload ended before its body was complete"});
    return;
  }
  auto committed = writer->commit(*digest);
  if (!committed.ok()) {
    send_status_error(call, committed.error());
    return;
  }
  log_info("blob uploaded", {{"digest", *committed}, {"bytes", static_cast<long long>(writer->size())}});
  call.res.status = 201;
}

void copy(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return;
  auto from = model_name_field(*body, "source", nullptr);
  auto to = from.ok() ? model_name_field(*body, "destination", nullptr) : from;
  if (!to.ok()) {
    send_status_error(call, to.error());
    return;
  }
  if (auto st = call.state.options.store->copy(*from, *to); !st.ok()) {
    if (st.error().kind == ErrorKind::kNotFound && st.error().message.find("blob") == std::string::npos) {
      send_error(call.res, call.dialect, http_model_not_found((*body)["source"].get<std::string>()));
    } else {
      send_status_error(call, st.error());
    }
    return;
  }
  call.res.status = 200;
}

void remove(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return;
  auto name = model_name_field(*body, "model", "name");
  if (!name.ok()) {
    send_status_error(call, name.error());
    return;
  }
  unload_stored_model(call.state, name->display());
  if (auto st = call.state.options.store->remove(*name); !st.ok()) {
    if (st.error().kind == ErrorKind::kNotFound) send_error(call.res, call.dialect, http_model_not_found(name->display()));
    else send_status_error(call, st.error());
    return;
  }
  call.res.status = 200;
}

}  // namespace

void register_store_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOllama;
  add_route(s, kDialect, "POST", "/api/create", create);
  // GET also answers HEAD (cpp-httplib), which is what clients send.
  add_route(s, kDialect, "GET", "/api/blobs/([^/]+)", blob_exists);
  add_upload_route(s, kDialect, "/api/blobs/([^/]+)", blob_upload);
  add_route(s, kDialect, "POST", "/api/copy", copy);
  add_route(s, kDialect, "DELETE", "/api/delete", remove);
}

}  // namespace hearth::server
