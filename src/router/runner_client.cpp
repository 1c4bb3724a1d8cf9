// The router's proxy of one runner process (see runner_client.h).
#include "router/runner_client.h"

#include <deque>

#include "protocol/codec.h"
#include "util/log.h"

namespace hearth::router {

using protocol::RunnerFrame;
using protocol::RunnerMessage;
using Json = nlohmann::json;

// One stream of a request forwarded to a runner: the reader thread pushes its events.
class RunnerStream final : public protocol::EventStream {
 public:
  RunnerStream(std::weak_ptr<RunnerClient> owner, uint64_t id, uint32_t index) : owner_(std::move(owner)), id_(id), index_(index) {}

  bool next(protocol::Event& out, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !queue_.empty() || (final_seen_ && queue_.empty()); })) return false;
    if (queue_.empty()) return false;  // after the final event
    out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

  void cancel() override {
    {
      std::lock_guard lock(mu_);
      if (final_seen_) return;
    }
    if (auto o = owner_.lock()) o->cancel_stream(id_, index_);
  }

  // Returns true when `e` was the stream's final event.
  bool push(protocol::Event e) {
    const bool final = e.kind != protocol::Event::Kind::kText;
    {
      std::lock_guard lock(mu_);
      if (final_seen_) return false;
      queue_.push_back(std::move(e));
      final_seen_ = final;
    }
    cv_.notify_all();
    return final;
  }

 private:
  std::weak_ptr<RunnerClient> owner_;
  uint64_t id_;
  uint32_t index_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<protocol::Event> queue_;
  bool final_seen_ = false;
};

RunnerClient::RunnerClient(RunnerLaunch launch, std::unique_ptr<RunnerProcess> process)
    : launch_(std::move(launch)), process_(std::move(process)) {}

Result<std::shared_ptr<RunnerClient>> RunnerClient::start(const RunnerLaunch& launch) {
  HEARTH_ASSIGN(auto process, RunnerProcess::spawn(launch.argv));
  auto client = std::shared_ptr<RunnerClient>(new RunnerClient(launch, std::move(process)));
  client->reader_ = std::thread([c = client.get()] { c->read_loop(); });
  std::unique_lock lock(client->mu_);
  const bool settled = client->cv_.wait_for(lock, launch.load_timeout, [&] {
    return client->dead_ || client->state_.phase == protocol::RunnerState::Phase::kFailed ||
           (client->state_.phase == protocol::RunnerState::Phase::kReady && client->have_info_);
  });
  if (settled && !client->dead_ && client->state_.phase == protocol::RunnerState::Phase::kReady) return client;
  Error e;
  if (!settled) {
    e = make_error(ErrorKind::kUnavailable, "the runner for '" + launch.model_name + "' did not finish loading within " +
                                                std::to_string(launch.load_timeout.count() / 1000) + " s; it was stopped");
  } else if (client->state_.phase == protocol::RunnerState::Phase::kFailed) {
    e = client->state_.error;
  } else {
    e = make_error(ErrorKind::kInternal, "the runner for '" + launch.model_name + "' " + client->exit_ + " while loading");
  }
  lock.unlock();
  client->process_->kill_now();
  return e;
}

RunnerClient::~RunnerClient() {
  {
    // A runner told to stop gets its grace period to exit cleanly (its KV budget entry goes
    // with it); any other is killed.
    std::unique_lock lock(mu_);
    if (stopping_) cv_.wait_for(lock, launch_.stop_grace, [this] { return dead_; });
  }
  process_->kill_now();
  if (reader_.joinable()) reader_.join();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void RunnerClient::read_loop() {
  std::string malformed;  // a runner that speaks garbage is broken: it is killed at once
  for (;;) {
    auto f = process_->channel().receive();
    if (!f.ok()) {
      if (f.error().kind != ErrorKind::kIo) {
        malformed = f.error().message;
        process_->kill_now();
      }
      break;
    }
    switch (f->type) {
      case RunnerMessage::kState: {
        auto s = protocol::decode_runner_state(f->payload);
        if (!s.ok()) {
          log_warn("runner sent a bad state", {{"model", launch_.model_name}, {"error", s.error().to_string()}});
          break;
        }
        const bool loading = s->phase == protocol::RunnerState::Phase::kLoading;
        {
          std::lock_guard lock(mu_);
          state_ = *s;
        }
        cv_.notify_all();
        if (loading && launch_.on_progress) launch_.on_progress(s->progress);
        break;
      }
      case RunnerMessage::kModelInfo: {
        auto info = protocol::decode_model_info(f->payload);
        std::lock_guard lock(mu_);
        if (info.ok() && !have_info_) {
          info_ = std::move(info).value();
          have_info_ = true;
        }
        cv_.notify_all();
        break;
      }
      case RunnerMessage::kSubmitted: {
        std::lock_guard lock(mu_);
        auto it = pending_.find(f->id);
        if (it == pending_.end()) break;
        auto p = it->second;
        pending_.erase(it);
        p->reply = *f;
        p->done = true;
        if (f->index == 0) {
          auto decoded = protocol::decode_submitted(f->payload);
          if (decoded.ok()) {
            for (uint32_t i = 0; i < decoded->first; ++i) {
              auto s = std::make_shared<RunnerStream>(weak_from_this(), f->id, i);
              streams_[{f->id, i}] = s;
              p->streams.push_back(s);
            }
            in_flight_ += static_cast<int32_t>(decoded->first);
          }
        }
        cv_.notify_all();
        break;
      }
      case RunnerMessage::kEvent: {
        auto ev = protocol::decode_event(f->payload);
        std::shared_ptr<RunnerStream> s;
        {
          std::lock_guard lock(mu_);
          auto it = streams_.find({f->id, f->index});
          if (it == streams_.end()) break;
          s = it->second;
          if (!ev.ok() || ev->kind != protocol::Event::Kind::kText) streams_.erase(it);
        }
        if (!ev.ok()) {
          protocol::Event err;
          err.kind = protocol::Event::Kind::kError;
          err.error = ev.error();
          ev = err;
        }
        if (s->push(std::move(ev).value())) --in_flight_;
        break;
      }
      case RunnerMessage::kReply: {
        std::lock_guard lock(mu_);
        auto it = pending_.find(f->id);
        if (it == pending_.end()) break;
        it->second->reply = *f;
        it->second->done = true;
        pending_.erase(it);
        cv_.notify_all();
        break;
      }
      default:
        break;
    }
  }
  // The channel closed: the runner exited, was stopped or was killed.
  if (!process_->wait_exit(std::chrono::seconds(2))) {
    process_->kill_now();
    process_->wait_exit(std::chrono::seconds(5));
  }
  Error e;
  {
    std::lock_guard lock(mu_);
    dead_ = true;
    exit_ = malformed.empty() ? process_->exit_description() : "sent a malformed message (" + malformed + ") and was killed";
    e = died_error();
  }
  if (!stopping_) log_warn("model runner ended", {{"model", launch_.model_name}, {"pid", process_->pid()}, {"how", exit_}});
  fail_everything(e);
  cv_.notify_all();
}

Error RunnerClient::died_error() const {
  if (stopping_) return make_error(ErrorKind::kUnavailable, "the model '" + launch_.model_name + "' was unloaded");
  return make_error(ErrorKind::kInternal, "the runner of model '" + launch_.model_name + "' stopped unexpectedly (" + exit_ +
                                              "); the next request starts it again");
}

void RunnerClient::fail_everything(const Error& e) {
  std::map<std::pair<uint64_t, uint32_t>, std::shared_ptr<RunnerStream>> streams;
  {
    std::lock_guard lock(mu_);
    streams.swap(streams_);
    for (auto& [id, p] : pending_) {
      p->failed = true;
      p->error = e;
      p->done = true;
    }
    pending_.clear();
  }
  for (auto& [key, s] : streams) {
    protocol::Event ev;
    ev.kind = protocol::Event::Kind::kError;
    ev.error = e;
    if (s->push(std::move(ev))) --in_flight_;
  }
  cv_.notify_all();
}

Result<std::pair<std::vector<std::shared_ptr<protocol::EventStream>>, std::vector<protocol::PromptInfo>>> RunnerClient::submit_frame(
    RunnerMessage type, std::string payload) {
  auto p = std::make_shared<Pending>();
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (dead_ || stopping_) return died_error();
    id = next_id_++;
    pending_[id] = p;
  }
  if (auto st = process_->channel().send({type, id, 0, std::move(payload)}); !st.ok()) {
    std::lock_guard lock(mu_);
    pending_.erase(id);
    return dead_ ? died_error() : st.error();
  }
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, launch_.call_timeout, [&] { return p->done; })) {
    pending_.erase(id);
    return make_error(ErrorKind::kUnavailable, "the runner of model '" + launch_.model_name + "' did not answer");
  }
  if (p->failed) return p->error;
  if (p->reply.index != 0) {
    auto ev = protocol::decode_event(p->reply.payload);
    if (!ev.ok()) return ev.error();
    return ev->error;
  }
  auto decoded = protocol::decode_submitted(p->reply.payload);
  if (!decoded.ok()) return decoded.error();
  return std::make_pair(std::move(p->streams), std::move(decoded->second));
}

Result<protocol::CompletionSubmission> RunnerClient::submit(const protocol::CompletionRequest& request) {
  HEARTH_ASSIGN(auto r, submit_frame(RunnerMessage::kSubmitCompletion, protocol::encode(request)));
  return protocol::CompletionSubmission{std::move(r.first), std::move(r.second)};
}

Result<protocol::EmbeddingSubmission> RunnerClient::submit(const protocol::EmbeddingRequest& request) {
  HEARTH_ASSIGN(auto r, submit_frame(RunnerMessage::kSubmitEmbedding, protocol::encode(request)));
  return protocol::EmbeddingSubmission{std::move(r.first)};
}

Result<Json> RunnerClient::call(Json op) const {
  auto p = std::make_shared<Pending>();
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (dead_ || stopping_) return died_error();
    id = next_id_++;
    pending_[id] = p;
  }
  if (auto st = process_->channel().send({RunnerMessage::kCall, id, 0, op.dump(-1, ' ', false, Json::error_handler_t::replace)});
      !st.ok()) {
    std::lock_guard lock(mu_);
    pending_.erase(id);
    return st.error();
  }
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, launch_.call_timeout, [&] { return p->done; })) {
    pending_.erase(id);
    return make_error(ErrorKind::kUnavailable, "the runner of model '" + launch_.model_name + "' did not answer");
  }
  if (p->failed) return p->error;
  Json j = Json::parse(p->reply.payload, nullptr, false);
  if (!j.is_object()) return make_error(ErrorKind::kCorrupt, "runner: malformed reply");
  if (j.contains("error")) return protocol::error_from_json(j["error"]);
  if (!j.contains("result")) return make_error(ErrorKind::kCorrupt, "runner: reply without a result");
  return j["result"];
}

Result<protocol::PromptInfo> RunnerClient::render_prompt(const protocol::PromptSource& source) const {
  protocol::CompletionRequest carrier;
  carrier.prompts.push_back(source);
  HEARTH_ASSIGN(const Json r, call(Json{{"op", "render_prompt"}, {"request", protocol::encode(carrier)}}));
  return protocol::prompt_info_from_json(r);
}

Result<std::vector<protocol::TokenPiece>> RunnerClient::tokenize(const std::string& text, bool add_special, bool parse_special,
                                                                 bool with_pieces) const {
  HEARTH_ASSIGN(const Json r, call(Json{{"op", "tokenize"}, {"text", text}, {"add_special", add_special},
                                        {"parse_special", parse_special}, {"with_pieces", with_pieces}}));
  std::vector<protocol::TokenPiece> out;
  if (!r.is_array()) return out;
  for (const auto& t : r) out.push_back({t.value("id", 0), t.value("piece", std::string())});
  return out;
}

Result<std::string> RunnerClient::detokenize(const std::vector<int32_t>& ids) const {
  HEARTH_ASSIGN(const Json r, call(Json{{"op", "detokenize"}, {"ids", ids}}));
  return r.is_string() ? r.get<std::string>() : std::string();
}

Result<std::string> RunnerClient::apply_template(const nlohmann::ordered_json& chat) const {
  HEARTH_ASSIGN(const Json r, call(Json{{"op", "apply_template"}, {"chat", Json::parse(chat.dump())}}));
  return r.is_string() ? r.get<std::string>() : std::string();
}

protocol::EngineMetrics RunnerClient::metrics() const {
  auto r = call(Json{{"op", "metrics"}});
  return r.ok() ? protocol::metrics_from_json(*r) : protocol::EngineMetrics{};
}

std::vector<protocol::SlotInfo> RunnerClient::slots() const {
  auto r = call(Json{{"op", "slots"}});
  return r.ok() ? protocol::slots_from_json(*r) : std::vector<protocol::SlotInfo>{};
}

bool RunnerClient::alive() const {
  std::lock_guard lock(mu_);
  return !dead_ && !stopping_;
}

protocol::RunnerState RunnerClient::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

uint64_t RunnerClient::memory_bytes() const {
  std::lock_guard lock(mu_);
  return state_.resident_bytes;
}

uint64_t RunnerClient::kv_committed_bytes() const {
  std::lock_guard lock(mu_);
  return state_.kv_committed_bytes;
}

void RunnerClient::shrink_kv() { (void)process_->channel().send({RunnerMessage::kSetKvLimit, 0, 0, Json{{"shrink", true}}.dump()}); }

void RunnerClient::cancel_stream(uint64_t id, uint32_t index) {
  (void)process_->channel().send({RunnerMessage::kCancel, id, index, ""});
}

void RunnerClient::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (dead_) return;
  }
  (void)process_->channel().send({RunnerMessage::kStop, 0, 0, ""});
  // Past the grace period the process is killed; the reader then reaps it.
  watchdog_ = std::thread([this] {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, launch_.stop_grace, [this] { return dead_; })) {
      log_warn("model runner did not stop in time; killing it", {{"model", launch_.model_name}, {"pid", process_->pid()}});
      process_->kill_now();
    }
  });
}

}  // namespace hearth::router
