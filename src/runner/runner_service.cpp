// The runner's frame loop (see runner_service.h).
#include "runner/runner_service.h"

#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "protocol/codec.h"
#include "util/log.h"

namespace hearth::runner {
namespace {

using protocol::RunnerFrame;
using protocol::RunnerMessage;
using Json = nlohmann::json;

// One accepted stream being forwarded to the router.
struct Pump {
  std::thread thread;
  std::atomic<bool> done{false};
};

class Service {
 public:
  Service(protocol::RunnerChannel& ch, std::shared_ptr<protocol::InferenceBackend> backend, const RunnerHooks& hooks)
      : ch_(ch), backend_(std::move(backend)), hooks_(hooks) {}

  int run() {
    if (!ch_.send({RunnerMessage::kModelInfo, 0, 0, protocol::encode(backend_->model_info())}).ok()) return 1;
    send_state();
    std::thread heartbeat([this] { heartbeat_loop(); });
    int status = 1;
    for (;;) {
      auto f = ch_.receive();
      if (!f.ok()) {
        log_warn("runner: the router is gone; stopping", {{"error", f.error().to_string()}});
        break;
      }
      if (f->type == RunnerMessage::kStop) {
        status = 0;
        break;
      }
      handle(*f);
      reap(false);
    }
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    backend_->shut_down();  // running streams end with an error event, pumped out below
    reap(true);
    heartbeat.join();
    return status;
  }

 private:
  void send_state() {
    protocol::RunnerState s = hooks_.sample_state ? hooks_.sample_state() : protocol::RunnerState{};
    s.phase = protocol::RunnerState::Phase::kReady;
    (void)ch_.send({RunnerMessage::kState, 0, 0, protocol::encode_runner_state(s)});
  }

  void heartbeat_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      if (stopping_) break;
      lock.unlock();
      send_state();
      lock.lock();
    }
  }

  void handle(const RunnerFrame& f) {
    switch (f.type) {
      case RunnerMessage::kSubmitCompletion: {
        auto req = protocol::decode_completion_request(f.payload);
        if (!req.ok()) return refuse(f.id, req.error());
        auto sub = backend_->submit(*req);
        if (!sub.ok()) return refuse(f.id, sub.error());
        accept(f.id, sub->streams, sub->prompts);
        return;
      }
      case RunnerMessage::kSubmitEmbedding: {
        auto req = protocol::decode_embedding_request(f.payload);
        if (!req.ok()) return refuse(f.id, req.error());
        auto sub = backend_->submit(*req);
        if (!sub.ok()) return refuse(f.id, sub.error());
        accept(f.id, sub->streams, {});
        return;
      }
      case RunnerMessage::kCancel: {
        std::shared_ptr<protocol::EventStream> s;
        {
          std::lock_guard lock(mu_);
          auto it = live_.find({f.id, f.index});
          if (it != live_.end()) s = it->second.lock();
        }
        if (s) s->cancel();
        return;
      }
      case RunnerMessage::kCall:
        (void)ch_.send({RunnerMessage::kReply, f.id, 0, call(f.payload)});
        return;
      case RunnerMessage::kSetKvLimit: {
        Json j = Json::parse(f.payload, nullptr, false);
        if (hooks_.shrink_kv && j.is_object() && j.value("shrink", false)) {
          hooks_.shrink_kv();
        } else if (hooks_.set_kv_limit && j.is_object() && j.contains("bytes") && j["bytes"].is_number_unsigned()) {
          hooks_.set_kv_limit(j["bytes"].get<uint64_t>());
        }
        send_state();
        return;
      }
      default:
        log_warn("runner: ignoring an unexpected message", {{"type", static_cast<int>(f.type)}});
    }
  }

  void refuse(uint64_t id, const Error& e) {
    protocol::Event ev;
    ev.kind = protocol::Event::Kind::kError;
    ev.error = e;
    (void)ch_.send({RunnerMessage::kSubmitted, id, 1, protocol::encode(ev)});
  }

  void accept(uint64_t id, const std::vector<std::shared_ptr<protocol::EventStream>>& streams,
              const std::vector<protocol::PromptInfo>& prompts) {
    // kSubmitted goes out before any event of the request (the pumps start after it).
    (void)ch_.send({RunnerMessage::kSubmitted, id, 0, protocol::encode_submitted(streams.size(), prompts)});
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < streams.size(); ++i) {
      live_[{id, i}] = streams[i];
      auto& p = pumps_.emplace_back();
      p.thread = std::thread([this, id, i, stream = streams[i], &p] {
        pump(id, i, *stream);
        {
          std::lock_guard l(mu_);
          live_.erase({id, i});
        }
        p.done = true;
      });
    }
  }

  void pump(uint64_t id, uint32_t index, protocol::EventStream& stream) {
    protocol::Event ev;
    for (;;) {
      if (!stream.next(ev, std::chrono::milliseconds(500))) continue;
      const bool final = ev.kind != protocol::Event::Kind::kText;
      if (!ch_.send({RunnerMessage::kEvent, id, index, protocol::encode(ev)}).ok()) {
        stream.cancel();  // the router is gone; the engine stops the request
      }
      if (final) return;
    }
  }

  // Joins finished pumps (all of them when `all`).
  void reap(bool all) {
    std::list<Pump> finished;
    {
      std::lock_guard lock(mu_);
      for (auto it = pumps_.begin(); it != pumps_.end();) {
        if (all || it->done) {
          auto next = std::next(it);
          finished.splice(finished.end(), pumps_, it);
          it = next;
        } else {
          ++it;
        }
      }
    }
    for (auto& p : finished) p.thread.join();
  }

  std::string call(const std::string& payload) {
    Json j = Json::parse(payload, nullptr, false);
    auto fail = [](const Error& e) { return Json{{"error", protocol::error_to_json(e)}}.dump(); };
    if (!j.is_object() || !j.contains("op") || !j["op"].is_string()) {
      return fail(make_error(ErrorKind::kCorrupt, "runner call without an op"));
    }
    const std::string op = j["op"];
    auto reply = [](Json result) { return Json{{"result", std::move(result)}}.dump(-1, ' ', false, Json::error_handler_t::replace); };
    try {
      if (op == "metrics") return reply(protocol::metrics_to_json(backend_->metrics()));
      if (op == "slots") return reply(protocol::slots_to_json(backend_->slots()));
      if (op == "tokenize") {
        auto r = backend_->tokenize(j.value("text", ""), j.value("add_special", true), j.value("parse_special", false),
                                    j.value("with_pieces", false));
        if (!r.ok()) return fail(r.error());
        Json list = Json::array();
        for (const auto& t : *r) list.push_back(Json{{"id", t.id}, {"piece", t.piece}});
        return reply(std::move(list));
      }
      if (op == "detokenize") {
        auto r = backend_->detokenize(j.value("ids", std::vector<int32_t>{}));
        if (!r.ok()) return fail(r.error());
        return reply(*r);
      }
      if (op == "apply_template") {
        auto r = backend_->apply_template(nlohmann::ordered_json(j.value("chat", Json::object())));
        if (!r.ok()) return fail(r.error());
        return reply(*r);
      }
      if (op == "render_prompt") {
        // The source travels as a one-prompt completion request, reusing its codec.
        auto req = protocol::decode_completion_request(j.value("request", std::string()));
        if (!req.ok()) return fail(req.error());
        if (req->prompts.size() != 1) return fail(make_error(ErrorKind::kCorrupt, "render_prompt needs one prompt"));
        auto r = backend_->render_prompt(req->prompts[0]);
        if (!r.ok()) return fail(r.error());
        return reply(protocol::prompt_info_to_json(*r));
      }
    } catch (const Json::exception& e) {
      return fail(make_error(ErrorKind::kCorrupt, std::string("runner call '") + op + "': " + e.what()));
    }
    return fail(make_error(ErrorKind::kUnsupported, "runner call: unknown op '" + op + "'"));
  }

  protocol::RunnerChannel& ch_;
  std::shared_ptr<protocol::InferenceBackend> backend_;
  RunnerHooks hooks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::pair<uint64_t, uint32_t>, std::weak_ptr<protocol::EventStream>> live_;
  std::list<Pump> pumps_;
};

}  // namespace

int serve_runner(protocol::RunnerChannel& channel, std::shared_ptr<protocol::InferenceBackend> backend, const RunnerHooks& hooks) {
  Service service(channel, std::move(backend), hooks);
  return service.run();
}

}  // namespace hearth::runner
