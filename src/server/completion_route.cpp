// Shared completion handling for every dialect (see completion_route.h).
#include "server/completion_route.h"

#include "server/parsed_event_stream.h"

#include <chrono>
#include <thread>

#include "api/ollama.h"
#include "server/completion_driver.h"
#include "server/stored_models.h"

namespace hearth::server {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

// A plain streaming response: bytes go straight to the socket; when the client is gone the
// generation is cancelled (the provider fails, and the releaser cancels whatever still runs).
void stream_directly(State& s, httplib::Response& res, std::shared_ptr<CompletionDriver> driver) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  State* state = &s;
  res.set_chunked_content_provider(
      driver->content_type(),
      [driver, state](size_t, httplib::DataSink& sink) {
        std::string out;
        for (;;) {
          const bool more = driver->pump(out, kPollInterval);
          if (!out.empty()) {
            if (!sink.write(out.data(), out.size())) {
              driver->cancel();
              state->count_disconnect();
              return false;
            }
            if (!more) sink.done();
            return true;
          }
          if (!more) {
            sink.done();
            return true;
          }
          if (!sink.is_writable()) {
            driver->cancel();
            state->count_disconnect();
            return false;
          }
        }
      },
      [driver](bool) { driver->cancel(); });
}

// A non-streaming response: waits for every choice, giving up when the client leaves.
void answer_whole(State& s, httplib::Response& res, CompletionDriver& driver, api::Dialect dialect) {
  std::string body;
  while (driver.pump(body, kPollInterval)) {
    if (!s.keep_serving()) {
      driver.cancel();
      return;
    }
  }
  if (driver.error()) {
    send_error(res, dialect, *driver.error());
    return;
  }
  res.status = 200;
  res.set_content(body, driver.content_type());
}

bool is_event_stream(const std::string& content_type) {
  return content_type == "text/event-stream" || content_type == "application/x-ndjson";
}

// The connection that started a resumable stream reads the stream's live tap, never its replay
// buffer: it gets every byte and the final event even when the buffer drops the oldest bytes
// (only a later resume from a dropped offset is refused, with 410). When this client leaves the
// tap is detached and the stream runs on for a resume.
void serve_stream_live(State& s, httplib::Response& res, std::shared_ptr<ResumableStream> stream) {
  res.set_header("X-Conversation-Id", stream->id());
  res.set_header("X-Stream-Offset", "0");
  if (!is_event_stream(stream->content_type())) {
    std::string body;
    for (;;) {
      const auto got = stream->live().read(body, kPollInterval);
      if (got == LiveTap::ReadStatus::kEnd) break;
      if (got == LiveTap::ReadStatus::kTimeout && !s.keep_serving()) {
        stream->live().detach();
        return;
      }
    }
    res.status = stream->status();
    res.set_content(body, stream->content_type());
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      stream->content_type(),
      [stream](size_t, httplib::DataSink& sink) {
        for (;;) {
          std::string out;
          switch (stream->live().read(out, kPollInterval)) {
            case LiveTap::ReadStatus::kData:
              if (sink.write(out.data(), out.size())) return true;
              stream->live().detach();
              return false;
            case LiveTap::ReadStatus::kEnd:
              sink.done();
              return true;
            case LiveTap::ReadStatus::kTimeout:
              if (!sink.is_writable()) {
                stream->live().detach();  // the client left; the stream goes on for a resume
                return false;
              }
              break;
          }
        }
      },
      [stream](bool) { stream->live().detach(); });
}

}  // namespace

void serve_stream_follow(const RouteCall& call, std::shared_ptr<ResumableStream> stream, uint64_t from) {
  State& s = call.state;
  httplib::Response& res = call.res;
  if (from < stream->buffer().start_offset()) {
    send_error(res, call.dialect,
               http_gone("bytes before offset " + std::to_string(stream->buffer().start_offset()) +
                         " of this stream were dropped (the replay buffer keeps the newest " +
                         std::to_string(stream->buffer().capacity()) + " bytes)"));
    return;
  }
  res.set_header("X-Conversation-Id", stream->id());
  res.set_header("X-Stream-Offset", std::to_string(from));
  if (!is_event_stream(stream->content_type())) {
    while (stream->state() == StreamState::kRunning) {
      if (!s.keep_serving()) return;
      std::this_thread::sleep_for(kPollInterval);
    }
    std::string body;
    while (stream->buffer().read(from + body.size(), body, std::chrono::milliseconds(0)) ==
           ReplayBuffer::ReadStatus::kData) {
    }
    res.status = stream->status();
    res.set_content(body, stream->content_type());
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto offset = std::make_shared<uint64_t>(from);
  res.set_chunked_content_provider(stream->content_type(), [stream, offset](size_t, httplib::DataSink& sink) {
    for (;;) {
      std::string out;
      switch (stream->buffer().read(*offset, out, kPollInterval)) {
        case ReplayBuffer::ReadStatus::kData:
          *offset += out.size();
          return sink.write(out.data(), out.size());
        case ReplayBuffer::ReadStatus::kEnd:
          sink.done();
          return true;
        case ReplayBuffer::ReadStatus::kGone:
          return false;  // this reader fell behind by more than the buffer; end the connection
        case ReplayBuffer::ReadStatus::kTimeout:
          if (!sink.is_writable()) return false;  // the reader left; the stream goes on
          break;
      }
    }
  });
}

void serve_completion(const RouteCall& call, Result<api::CompletionJob> parsed, EncoderFactory make_encoder,
                      const std::string& id_prefix) {
  State& s = call.state;
  const httplib::Request& req = call.req;
  httplib::Response& res = call.res;
  const api::Dialect dialect = call.dialect;
  if (!parsed.ok()) {
    send_error(res, dialect, http_error_from(parsed.error()));
    return;
  }
  api::CompletionJob job = std::move(parsed).value();
  std::shared_ptr<protocol::InferenceBackend> model;
  std::shared_ptr<router::ModelLease> lease;  // router mode: the model stays loaded until submitted
  if (s.store_mode()) {
    if (job.load_only && job.unload) {
      // keep_alive 0 with nothing to generate: unload (ollama's way to free a model).
      unload_stored_model(s, job.request.model);
      send_json(res, api::ollama_load_response(job.request.model, req.path == "/api/chat", true));
      return;
    }
    auto chosen = require_stored_model(call, job.request.model, dialect != api::Dialect::kOllama, job.request.keep_alive_ms);
    if (!chosen) return;
    model = chosen->backend;
    lease = chosen->lease;
    if (chosen->description) apply_stored_prompt(job, *chosen->description);
  } else {
    model = require_model(call);
    if (!model) return;
    if (dialect == api::Dialect::kOllama && !model->model_info().answers_to(job.request.model)) {
      send_error(res, dialect, http_model_not_found(job.request.model));
      return;
    }
  }
  const protocol::ModelInfo& card = model->model_info();
  if (job.load_only) {
    const bool chat = req.path == "/api/chat";
    send_json(res, api::ollama_load_response(job.request.model, chat, job.unload));
    return;
  }
  const std::string conversation = req.get_header_value("X-Conversation-Id");
  if (!conversation.empty() && !StreamRegistry::valid_id(conversation)) {
    send_error(res, dialect, HttpError{400, "X-Conversation-Id must be 1-128 characters of A-Z a-z 0-9 . _ : -"});
    return;
  }
  job.request.tag = req.path + (conversation.empty() ? "" : " conversation=" + conversation);
  auto submitted = model->submit(job.request);
  if (!submitted.ok()) {
    send_error(res, dialect, http_error_from(submitted.error()));
    return;
  }

  api::ResponseMeta meta;
  meta.id = s.new_id(id_prefix);
  meta.model = job.request.model.empty() ? card.name : job.request.model;
  meta.created_time = std::chrono::system_clock::now();
  meta.created = std::chrono::duration_cast<std::chrono::seconds>(meta.created_time.time_since_epoch()).count();
  meta.started = std::chrono::steady_clock::now();
  // Chat replies with tools or reasoning are split into answer, thinking and tool calls here,
  // once, for every dialect's encoder (streams are prompt-major, n_choices per prompt).
  const size_t per_prompt = static_cast<size_t>(std::max(1, job.request.n_choices));
  for (size_t i = 0; i < submitted->streams.size() && i / per_prompt < submitted->prompts.size(); ++i) {
    auto counter = std::make_shared<int>(0);
    submitted->streams[i] = ParsedEventStream::wrap(std::move(submitted->streams[i]), submitted->prompts[i / per_prompt].output,
                                                    [base = s.new_id("call_"), counter]() { return base + std::to_string((*counter)++); });
  }
  for (auto& prompt : submitted->prompts) {
    meta.prompt_tokens.push_back(prompt.n_tokens);
    meta.prompt_ids.push_back(std::move(prompt.ids));
    meta.prompt_texts.push_back(std::move(prompt.text));
  }
  auto driver = std::make_shared<CompletionDriver>(std::move(submitted->streams), make_encoder(job, std::move(meta)),
                                                   dialect, job.stream);

  if (!conversation.empty()) {
    const bool streaming = job.stream;
    StreamSource source;
    source.pump = [driver, dialect, streaming](std::string& out, int& status) {
      const bool more = driver->pump(out, std::chrono::milliseconds(100));
      if (!more && !streaming && driver->error()) {
        status = driver->error()->status;
        out += api::dump_json(api::error_body(dialect, driver->error()->status, driver->error()->message));
      }
      return more;
    };
    source.cancel = [driver] { driver->cancel(); };
    HttpError conflict;
    auto stream = s.streams.start(conversation, driver->content_type(), std::move(source), &conflict);
    if (!stream.ok()) {
      driver->cancel();
      send_error(res, dialect, conflict);
      return;
    }
    serve_stream_live(s, res, *stream);
    return;
  }
  if (job.stream) {
    stream_directly(s, res, driver);
  } else {
    answer_whole(s, res, *driver, dialect);
  }
}

}  // namespace hearth::server
