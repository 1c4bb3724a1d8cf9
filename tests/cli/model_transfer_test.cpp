// The client side of create (blob upload by HEAD/POST /api/blobs/sha256:..., then /api/create
// with `files`), of pulling a missing model before running it, and of progress streams and
// their errors, against a small HTTP server in the test that speaks those routes' shapes and
// checks what it receives (the real store routes are tested with the server).
#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <sstream>
#include <thread>

#include "cli/line_reader.h"
#include "cli/model_actions.h"
#include "cli/repl.h"
#include "common/test_paths.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

class TransferServer : public ::testing::Test {
 protected:
  void SetUp() override {
    // cpp-httplib answers HEAD with the GET handler, without the body.
    http_.Get(R"(/api/blobs/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      res.status = blobs_.count(req.matches[1]) ? 200 : 404;
    });
    http_.Post(R"(/api/blobs/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if ("sha256:" + sha256_hex(req.body) != req.matches[1].str()) {
        res.status = 400;
        res.set_content(R"({"error":"digest mismatch"})", "application/json");
        return;
      }
      blobs_[req.matches[1]] = req.body;
      ++uploads_;
      res.status = 201;
    });
    http_.Post("/api/create", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      creates_.push_back(Json::parse(req.body));
      res.set_content(create_stream_, "application/x-ndjson");
    });
    http_.Post("/api/show", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string name = Json::parse(req.body).value("model", "");
      if (!pulled_) {
        res.status = 404;
        res.set_content(Json{{"error", "model '" + name + "' not found"}}.dump(), "application/json");
        return;
      }
      res.set_content(R"({"details":{"family":"llama"}})", "application/json");
    });
    http_.Post("/api/pull", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      pull_body_ = Json::parse(req.body);
      std::string s = R"({"status":"pulling manifest"})" "\n";
      for (int done : {0, 500, 1000}) {
        s += Json{{"status", "pulling 0123456789ab"}, {"digest", "sha256:0123456789ab"}, {"total", 1000}, {"completed", done}}.dump() + "\n";
      }
      s += R"({"status":"verifying sha256 digest"})" "\n" R"({"status":"success"})" "\n";
      pulled_ = true;
      res.set_content(s, "application/x-ndjson");
    });
    http_.Post("/api/generate", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      generates_.push_back(Json::parse(req.body));
      res.set_content(R"({"model":"x","response":"","done":true,"done_reason":"load"})", "application/json");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  void TearDown() override {
    http_.stop();
    thread_.join();
  }

  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::string> blobs_;
  int uploads_ = 0;
  std::vector<Json> creates_;
  std::string create_stream_ = "{\"status\":\"parsing GGUF\"}\n{\"status\":\"writing manifest\"}\n{\"status\":\"success\"}\n";
  bool pulled_ = false;
  std::vector<Json> generates_;
  Json pull_body_;
  std::ostringstream out_, err_;
  Console console_{out_, err_};
};

TEST_F(TransferServer, CreateUploadsTheGgufOnceThenNamesItsDigest) {
  const std::string dir = test::make_temp_dir();
  const std::string gguf = std::string("GGUF") + std::string(3 << 20, 'x');  // bigger than one upload piece
  ASSERT_TRUE(write_file_atomic(dir + "/tiny.gguf", gguf).ok());
  auto modelfile = store::parse_modelfile("FROM ./tiny.gguf\nPARAMETER temperature 0.5\nSYSTEM Be brief.\n");
  ASSERT_TRUE(modelfile.ok());
  auto plan = plan_create(*modelfile, dir, "mine:v1", "");
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  OllamaClient client({"127.0.0.1", port_}, "");
  Status st = create_model(client, *plan, console_);
  ASSERT_TRUE(st.ok()) << st.error().message;
  const std::string digest = "sha256:" + sha256_hex(gguf);
  ASSERT_EQ(creates_.size(), 1u);
  EXPECT_EQ(creates_[0], (Json{{"model", "mine:v1"}, {"stream", true}, {"files", {{"tiny.gguf", digest}}},
                               {"parameters", {{"temperature", 0.5}}}, {"system", "Be brief."}}));
  EXPECT_EQ(blobs_[digest], gguf);
  EXPECT_NE(err_.str().find("parsing GGUF\nwriting manifest\nsuccess\n"), std::string::npos) << err_.str();
  // The server has the blob now: a second create sends no bytes.
  ASSERT_TRUE(create_model(client, *plan, console_).ok());
  EXPECT_EQ(uploads_, 1);
  EXPECT_EQ(creates_.size(), 2u);
}

TEST_F(TransferServer, AnErrorInTheStreamFailsTheCreate) {
  create_stream_ = "{\"status\":\"parsing GGUF\"}\n{\"error\":\"unsupported architecture 'mamba'\"}\n";
  auto modelfile = store::parse_modelfile("FROM base\n");
  ASSERT_TRUE(modelfile.ok());
  auto plan = plan_create(*modelfile, ".", "mine", "");
  ASSERT_TRUE(plan.ok());
  OllamaClient client({"127.0.0.1", port_}, "");
  Status st = create_model(client, *plan, console_);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "unsupported architecture 'mamba'");
  EXPECT_EQ(creates_[0]["from"], "base");
}

TEST_F(TransferServer, RunPullsAMissingModelFirst) {
  OllamaClient client({"127.0.0.1", port_}, "");
  auto shown = ensure_model(client, "qwen3", true, console_);
  ASSERT_TRUE(shown.ok()) << shown.error().message;
  EXPECT_EQ((*shown)["details"]["family"], "llama");
  EXPECT_EQ(pull_body_, (Json{{"model", "qwen3"}, {"stream", true}, {"insecure", true}}));
  const std::string err = err_.str();
  EXPECT_NE(err.find("pulling manifest\n"), std::string::npos) << err;
  EXPECT_NE(err.find("pulling 0123456789ab: 100% "), std::string::npos) << err;
  EXPECT_NE(err.find("success\n"), std::string::npos) << err;
}

TEST_F(TransferServer, ReplLoadPullsAndSaveCreatesFromTheSession) {
  OllamaClient client({"127.0.0.1", port_}, "");
  SessionOptions session;
  session.model = "base";
  session.keep_alive = "10m";
  std::istringstream in("/load qwen3\n/set parameter temperature 0.2\n/set parameter stop END\n/set system Be brief.\n/save mine\n/bye\n");
  std::ostringstream prompts;
  auto reader = make_stream_line_reader(in, prompts);
  EXPECT_EQ(run_repl(client, session, *reader, console_), 0);
  EXPECT_EQ(session.model, "qwen3");
  EXPECT_EQ(pull_body_["model"], "qwen3");  // /load pulled the model it did not have
  ASSERT_EQ(generates_.size(), 1u);        // and loaded it with the session's keep_alive
  EXPECT_EQ(generates_[0], (Json{{"model", "qwen3"}, {"stream", false}, {"keep_alive", "10m"}}));
  ASSERT_EQ(creates_.size(), 1u);
  EXPECT_EQ(creates_[0], (Json{{"model", "mine"}, {"from", "qwen3"}, {"stream", true},
                               {"parameters", {{"temperature", 0.2}, {"stop", {"END"}}}}, {"system", "Be brief."}}));
  EXPECT_NE(out_.str().find("Loading model 'qwen3'\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("Created new model 'mine'\n"), std::string::npos) << out_.str();
}

TEST_F(TransferServer, UnreachableServerSaysWhatToDo) {
  OllamaClient client({"127.0.0.1", 1}, "");
  auto r = show_model(client, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(r.error().message.find("cannot reach the server at 127.0.0.1:1"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("hearth serve"), std::string::npos);
}

}  // namespace
}  // namespace hearth::cli
