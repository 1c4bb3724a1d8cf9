// The web UI at /: a server without UI files (what a build without node embeds) answers with
// the page saying how to get the UI; one with files serves them gzip-compressed to clients that
// accept gzip and decompressed to the others, with the page security headers, without the API
// key (the page holds no data) but still behind the Host check; the API stays behind the key.
#include <gtest/gtest.h>
#include <httplib.h>
#include <zlib.h>

#include "server/http_server.h"
#include "server/web_ui.h"

namespace hearth::test {
namespace {

std::string gzip(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

class RunningServer {
 public:
  explicit RunningServer(server::ServerOptions o) : server_(std::move(o)) {
    EXPECT_TRUE(server_.bind().ok());
    server_.start();
  }
  ~RunningServer() { server_.stop(); }
  httplib::Result get(const std::string& path, httplib::Headers headers = {}) {
    httplib::Client cli("127.0.0.1", server_.port());
    cli.set_decompress(false);  // see the bytes as sent
    return cli.Get(path, headers);
  }

 private:
  server::HttpServer server_;
};

TEST(WebUi, WithoutUiFilesRootSaysHowToGetTheUi) {
  server::ServerOptions o;
  o.port = 0;
  RunningServer s(o);
  auto r = s.get("/", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(r->body.find("built without its web UI"), std::string::npos);
  EXPECT_NE(r->body.find("scripts/setup.sh"), std::string::npos);
  EXPECT_EQ(r->get_header_value("Content-Security-Policy"), server::kWebUiContentSecurityPolicy);
  EXPECT_EQ(r->get_header_value("X-Frame-Options"), "DENY");
  auto asset = s.get("/assets/index-abc.js");
  ASSERT_TRUE(asset);
  EXPECT_EQ(asset->status, 404);
}

class WebUiFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    index_gz_ = gzip(index_);
    js_gz_ = gzip(js_);
    assets_[0] = {"/index.html", "text/html; charset=utf-8", reinterpret_cast<const unsigned char*>(index_gz_.data()),
                  index_gz_.size(), index_.size()};
    assets_[1] = {"/assets/app-1a2b.js", "text/javascript; charset=utf-8", reinterpret_cast<const unsigned char*>(js_gz_.data()),
                  js_gz_.size(), js_.size()};
  }
  server::ServerOptions options() {
    server::ServerOptions o;
    o.port = 0;
    o.web_ui = assets_;
    return o;
  }
  std::string index_ = "<!doctype html><title>ui</title><script type=module src=/assets/app-1a2b.js></script>";
  std::string js_ = std::string(5000, 'x') + "console.log('hearth')";
  std::string index_gz_, js_gz_;
  server::WebAsset assets_[2];
};

TEST_F(WebUiFiles, GzipToClientsThatAcceptItPlainToOthers) {
  RunningServer s(options());
  auto gz = s.get("/assets/app-1a2b.js", {{"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->status, 200);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(gz->body, js_gz_);  // the stored bytes, not compressed twice
  EXPECT_EQ(gz->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(gz->get_header_value("X-Content-Type-Options"), "nosniff");

  auto plain = s.get("/assets/app-1a2b.js", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  EXPECT_EQ(plain->body, js_);

  auto refused = s.get("/", {{"Accept-Encoding", "deflate"}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->body, index_);
  EXPECT_EQ(refused->get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(refused->get_header_value("Content-Security-Policy"), server::kWebUiContentSecurityPolicy);

  auto missing = s.get("/assets/nope.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(WebUiFiles, PageNeedsNoKeyButApiDoesAndHostIsStillChecked) {
  auto o = options();
  o.api_key = "sekret";
  {
    RunningServer s(o);
    auto page = s.get("/", {{"Accept-Encoding", "identity"}});
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->body, index_);
    auto api = s.get("/v1/models");
    ASSERT_TRUE(api);
    EXPECT_EQ(api->status, 401);
    auto with_key = s.get("/props", {{"Authorization", "Bearer sekret"}});
    ASSERT_TRUE(with_key);
    EXPECT_NE(with_key->status, 401);
  }
  RunningServer open(options());  // no key: the Host check guards against DNS rebinding
  auto rebound = open.get("/", {{"Host", "attacker.example:8080"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  auto local = open.get("/", {{"Host", "localhost:8080"}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
}

// A weight of 0 refuses a coding, whatever else the header holds, and cpp-httplib (which
// compresses on any mention of gzip or br) is never shown the refused ones.
TEST_F(WebUiFiles, RefusedCodingsAreHonoured) {
  RunningServer s(options());
  for (const char* refusing : {"gzip;q=0", "gzip;q=0, identity", "*;q=0.5, gzip;q=0", "br;q=0, gzip;q=0", "*;q=0"}) {
    for (const char* path : {"/", "/assets/app-1a2b.js", "/health"}) {
      auto r = s.get(path, {{"Accept-Encoding", refusing}});
      ASSERT_TRUE(r) << refusing << " " << path;
      if (std::string(path) != "/health") EXPECT_EQ(r->status, 200) << refusing << " " << path;  // JSON (503: no model)
      EXPECT_FALSE(r->has_header("Content-Encoding")) << refusing << " " << path << ": " << r->get_header_value("Content-Encoding");
    }
    EXPECT_EQ(s.get("/assets/app-1a2b.js", {{"Accept-Encoding", refusing}})->body, js_) << refusing;
  }
  auto star = s.get("/assets/app-1a2b.js", {{"Accept-Encoding", "gzip;q=0, *"}});
  ASSERT_TRUE(star);
  EXPECT_FALSE(star->has_header("Content-Encoding")) << "gzip's own entry wins over *";
  auto ok = s.get("/assets/app-1a2b.js", {{"Accept-Encoding", "br;q=0, gzip;q=0.1"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(ok->body, js_gz_);
}

TEST(WebUiUnits, AcceptEncodingParsing) {
  EXPECT_FALSE(server::accepts_gzip("*;q=0.5, gzip;q=0"));  // gzip's own entry decides
  EXPECT_FALSE(server::accepts_gzip("gzip;q=0, *"));
  EXPECT_TRUE(server::accepts_gzip("*;q=0, gzip"));
  EXPECT_FALSE(server::accepts_gzip("*;q=0"));
  EXPECT_FALSE(server::accepts_gzip("gzip;Q=0"));
  EXPECT_TRUE(server::accepts_gzip("gzip;q=0.001"));
  EXPECT_EQ(server::without_refused_codings("gzip;q=0, br, deflate;q=0.0, *;q=0.5"), "br");
  EXPECT_EQ(server::without_refused_codings("GZIP, br;q=0.5"), "gzip, br");
  EXPECT_EQ(server::without_refused_codings("gzip;q=0"), "");
  EXPECT_TRUE(server::accepts_gzip("gzip"));
  EXPECT_TRUE(server::accepts_gzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(server::accepts_gzip("*"));
  EXPECT_FALSE(server::accepts_gzip(""));
  EXPECT_FALSE(server::accepts_gzip("br, deflate"));
  EXPECT_FALSE(server::accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(server::accepts_gzip("gzip; q=0.000"));
  EXPECT_FALSE(server::accepts_gzip("xgzip"));
}

TEST(WebUiUnits, CorruptAssetIsRefusedNotServed) {
  const unsigned char junk[] = {0x1f, 0x8b, 8, 0, 1, 2, 3};
  server::WebAsset bad{"/index.html", "text/html", junk, sizeof(junk), 100};
  EXPECT_FALSE(server::gunzip_asset(bad).has_value());
}

}  // namespace
}  // namespace hearth::test
