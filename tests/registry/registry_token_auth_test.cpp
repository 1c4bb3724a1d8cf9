// The bearer-token flow against docker-registry configured for token auth: the registry
// answers 401 with `WWW-Authenticate: Bearer realm=...,service=...,scope=...`; the client gets
// a token from the realm (a small token server here, signing RS256 JWTs with a key whose
// self-signed certificate the registry trusts) and retries with `Authorization: Bearer`.
// Basic credentials, when given, go to the token server, which refuses a wrong password.
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/require_docker_registry.h"
#include "common/test_paths.h"
#include "registry/registry_client.h"
#include "registry/registry_test_model.h"

namespace hearth::registry {
namespace {

std::string base64(const std::string& bytes, bool url) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  if (url) {
    while (!out.empty() && out.back() == '=') out.pop_back();
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  return out;
}

// A token server: GET /token?service=S&scope=repository:NAME:ACTIONS → {"token": JWT}.
class TokenServer {
 public:
  TokenServer(const std::string& key_pem, const std::string& cert_pem, std::string service)
      : service_(std::move(service)) {
    BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    key_ = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    unsigned char* der = nullptr;
    int len = i2d_X509(cert, &der);
    cert_der_ = std::string(reinterpret_cast<char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
    X509_free(cert);
    server_.Get("/token", [this](const httplib::Request& req, httplib::Response& res) { answer(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket listens once bound: connections wait in its backlog until the thread accepts.
  }
  ~TokenServer() {
    server_.stop();
    thread_.join();
    EVP_PKEY_free(key_);
  }
  int port() const { return port_; }
  void require_password(std::string basic) { required_basic_ = std::move(basic); }
  int tokens_issued() {
    std::lock_guard<std::mutex> lock(mu_);
    return issued_;
  }
  std::vector<std::string> scopes() {
    std::lock_guard<std::mutex> lock(mu_);
    return scopes_;
  }

 private:
  void answer(const httplib::Request& req, httplib::Response& res) {
    if (!required_basic_.empty() && req.get_header_value("Authorization") != "Basic " + base64(required_basic_, false)) {
      res.status = 401;
      return;
    }
    std::string scope = req.get_param_value("scope");
    nlohmann::json access = nlohmann::json::array();
    // scope = repository:NAME:ACTION[,ACTION]
    if (auto first = scope.find(':'), last = scope.rfind(':'); first != std::string::npos && last > first) {
      nlohmann::json actions = nlohmann::json::array();
      std::string list = scope.substr(last + 1);
      for (size_t pos = 0; pos <= list.size();) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        actions.push_back(list.substr(pos, comma - pos));
        pos = comma + 1;
      }
      access.push_back({{"type", scope.substr(0, first)}, {"name", scope.substr(first + 1, last - first - 1)},
                        {"actions", actions}});
    }
    long now = static_cast<long>(std::time(nullptr));
    nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}, {"x5c", {base64(cert_der_, false)}}};
    nlohmann::json claims = {{"iss", "hearth-test-issuer"}, {"sub", "tester"}, {"aud", service_},
                             {"exp", now + 300}, {"nbf", now - 10}, {"iat", now - 10},
                             {"jti", std::to_string(now) + "-" + std::to_string(issued_)}, {"access", access}};
    std::string signing_input = base64(header.dump(), true) + "." + base64(claims.dump(), true);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    size_t sig_len = 0;
    EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_);
    EVP_DigestSign(ctx, nullptr, &sig_len, reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size());
    std::string sig(sig_len, '\0');
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &sig_len,
                   reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size());
    EVP_MD_CTX_free(ctx);
    sig.resize(sig_len);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++issued_;
      scopes_.push_back(scope);
    }
    res.set_content(nlohmann::json{{"token", signing_input + "." + base64(sig, true)}}.dump(), "application/json");
  }

  std::string service_;
  EVP_PKEY* key_ = nullptr;
  std::string cert_der_;
  std::string required_basic_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  int issued_ = 0;
  std::vector<std::string> scopes_;
};

class RegistryTokenAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::make_temp_dir();
    std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir_ + "/key.pem -out " + dir_ +
                      "/cert.pem -days 1 -subj /CN=hearth-test-token >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make a test certificate";
    tokens_ = std::make_unique<TokenServer>(test::read_whole_file(dir_ + "/key.pem"),
                                            test::read_whole_file(dir_ + "/cert.pem"), "hearth-test");
    std::string auth = "auth:\n  token:\n    realm: http://127.0.0.1:" + std::to_string(tokens_->port()) +
                       "/token\n    service: hearth-test\n    issuer: hearth-test-issuer\n    rootcertbundle: " + dir_ +
                       "/cert.pem\n";
    HEARTH_START_DOCKER_REGISTRY_WITH(registry_, auth);
    model_ = test::make_test_model(dir_, 200000, 3);
  }
  void TearDown() override {
    registry_.reset();
    tokens_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  RegistryClientOptions options() const {
    RegistryClientOptions o;
    o.endpoint = *parse_registry_endpoint(registry_->address(), true);
    o.limits.retry_budget = std::chrono::seconds(3);
    return o;
  }

  std::string dir_;
  std::unique_ptr<TokenServer> tokens_;
  std::unique_ptr<test::DockerRegistry> registry_;
  test::TestModel model_;
};

TEST_F(RegistryTokenAuth, PushAndPullGetBearerTokensFromTheRealm) {
  RegistryClient client(options());
  PushRequest push;
  push.repository = "library/tiny";
  push.reference = "latest";
  push.manifest_bytes = model_.manifest;
  push.blob_path = [&](const std::string& d) { return model_.blob_path(d); };
  auto pushed = client.push(push);
  ASSERT_TRUE(pushed.ok()) << pushed.error().to_string();
  EXPECT_GE(tokens_->tokens_issued(), 1);
  bool asked_push = false;
  // The registry lists the actions in no fixed order ("pull,push" or "push,pull").
  for (const auto& s : tokens_->scopes()) {
    asked_push |= s.starts_with("repository:library/tiny:") && s.find("push") != std::string::npos;
  }
  EXPECT_TRUE(asked_push);

  std::string out = test::make_temp_dir();
  RegistryClient fresh(options());  // no token yet: the first request meets the challenge
  PullRequest pull;
  pull.repository = "library/tiny";
  pull.reference = "latest";
  pull.has_blob = [&](const std::string& d) { return std::filesystem::exists(test::blob_file(out, d)); };
  pull.blob_path = [&](const std::string& d) { return test::blob_file(out, d); };
  auto pulled = fresh.pull(pull);
  ASSERT_TRUE(pulled.ok()) << pulled.error().to_string();
  EXPECT_EQ(pulled->manifest_bytes, model_.manifest);
  EXPECT_EQ(test::read_whole_file(test::blob_file(out, model_.model_layer().digest)),
            test::read_whole_file(model_.blob_path(model_.model_layer().digest)));
  std::filesystem::remove_all(out);
}

TEST_F(RegistryTokenAuth, WrongCredentialsAreAClearError) {
  tokens_->require_password("alice:secret");
  RegistryClientOptions o = options();
  o.credentials = {"alice", "wrong"};
  RegistryClient client(o);
  auto manifest = client.fetch_manifest("library/tiny", "latest");
  ASSERT_FALSE(manifest.ok());
  EXPECT_NE(manifest.error().message.find("HTTP 401"), std::string::npos) << manifest.error().message;
  EXPECT_NE(manifest.error().message.find("HEARTH_REGISTRY_USERNAME"), std::string::npos) << manifest.error().message;

  o.credentials = {"alice", "secret"};
  RegistryClient right(o);
  auto missing = right.fetch_manifest("library/tiny", "latest");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound) << missing.error().to_string();  // authorized, just absent
}

}  // namespace
}  // namespace hearth::registry
