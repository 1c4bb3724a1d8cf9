// Serving the embedded web UI (see web_ui.h): asset lookup, gzip negotiation, the routes (GET /,
// /index.html, /assets/...) and their headers.
#include "server/web_ui.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "server/server_state.h"

namespace hearth::server {

const char* const kWebUiContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'; object-src 'none'";

const char* const kWebUiMissingPage = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hearth</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>Hearth is running</h1>
<p>This <code>hearth</code> binary was built without its web UI, because node and npm were missing when it was built
(or it was configured with <code>-DHEARTH_WEBUI=OFF</code>).</p>
<p>To get the chat UI in the browser: run <code>scripts/setup.sh</code> (it installs nodejs and npm), then rebuild
(<code>cmake --build build/release --target hearth</code>) and restart <code>hearth serve</code>.</p>
<p>The APIs work without it: OpenAI (<code>/v1/chat/completions</code>), ollama (<code>/api/chat</code>) and
Anthropic (<code>/v1/messages</code>).</p>
</body></html>
)";

const WebAsset* find_web_asset(std::span<const WebAsset> assets, std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const auto& a : assets) {
    if (path == a.path) return &a;
  }
  return nullptr;
}

namespace {

// One Accept-Encoding entry: its coding (lower-cased) and whether its weight refuses it (q=0).
struct CodingEntry {
  std::string coding;
  bool refused = false;
};

std::vector<CodingEntry> coding_entries(std::string_view header) {
  std::vector<CodingEntry> out;
  size_t start = 0;
  while (start <= header.size()) {
    size_t comma = header.find(',', start);
    if (comma == std::string_view::npos) comma = header.size();
    std::string_view item = header.substr(start, comma - start);
    start = comma + 1;
    const size_t semi = item.find(';');
    CodingEntry e;
    for (char c : item.substr(0, semi)) {
      if (!std::isspace(static_cast<unsigned char>(c))) e.coding += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (e.coding.empty()) continue;
    if (semi != std::string_view::npos) {
      // Parameters: ";q=0", ";q=0.0", ";Q = 0.000" refuse; any other weight accepts.
      std::string params;
      for (char c : item.substr(semi + 1)) {
        if (!std::isspace(static_cast<unsigned char>(c))) params += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      for (size_t p = 0; p < params.size();) {
        size_t end = params.find(';', p);
        if (end == std::string::npos) end = params.size();
        const std::string param = params.substr(p, end - p);
        if (param.rfind("q=0", 0) == 0 && param.find_first_not_of("0.", 2) == std::string::npos) e.refused = true;
        p = end + 1;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

bool accepts_coding(std::string_view header, std::string_view coding) {
  // The coding's own entry decides; without one, "*" does (RFC 9110, 12.5.3).
  std::optional<bool> star;
  for (const auto& e : coding_entries(header)) {
    if (e.coding == coding) return !e.refused;
    if (e.coding == "*") star = !e.refused;
  }
  return star.value_or(false);
}

bool accepts_gzip(std::string_view header) { return accepts_coding(header, "gzip"); }

std::string without_refused_codings(std::string_view header) {
  const auto entries = coding_entries(header);
  // Once any coding is refused, "*" goes too: read after the rewrite it would let the refused
  // coding back in ("*;q=0.5, gzip;q=0" -> nothing: identity, which is always acceptable).
  const bool some_refused = std::any_of(entries.begin(), entries.end(), [](const CodingEntry& e) { return e.refused; });
  std::string out;
  for (const auto& e : entries) {
    if (e.refused || (some_refused && e.coding == "*")) continue;
    if (!out.empty()) out += ", ";
    out += e.coding;
  }
  return out;
}

std::optional<std::string> gunzip_asset(const WebAsset& asset) {
  std::string out(asset.size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  zs.next_in = const_cast<Bytef*>(asset.gzip);
  zs.avail_in = static_cast<uInt>(asset.gzip_size);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  const bool ok = rc == Z_STREAM_END && zs.total_out == asset.size;
  inflateEnd(&zs);
  if (!ok) return std::nullopt;
  return out;
}

namespace {

void set_page_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy", kWebUiContentSecurityPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
  res.set_header("Cross-Origin-Resource-Policy", "same-origin");
  res.set_header("Permissions-Policy", "camera=(), microphone=(), geolocation=()");
}

void serve_asset(const RouteCall& call, std::string_view path) {
  httplib::Response& res = call.res;
  const auto assets = call.state.options.web_ui;
  if (assets.empty() && (path == "/" || path == "/index.html")) {
    set_page_headers(res);
    res.set_header("Cache-Control", "no-cache");
    res.set_content(kWebUiMissingPage, "text/html; charset=utf-8");
    return;
  }
  const WebAsset* asset = find_web_asset(assets, path);
  if (!asset) {
    send_error(res, call.dialect, http_not_found("no web UI file " + std::string(path)));
    return;
  }
  set_page_headers(res);
  // Hashed file names under /assets/ never change content; index.html names the current ones.
  res.set_header("Cache-Control", path.rfind("/assets/", 0) == 0 ? "public, max-age=31536000, immutable" : "no-cache");
  res.set_header("Vary", "Accept-Encoding");
  if (accepts_gzip(call.req.get_header_value("Accept-Encoding"))) {
    // A provider with a length: cpp-httplib sends it as it is (it compresses only bodies and
    // chunked providers), so the stored gzip bytes go out once, with their encoding named.
    res.set_header("Content-Encoding", "gzip");
    res.set_content_provider(asset->gzip_size, asset->content_type,
                             [asset](size_t offset, size_t length, httplib::DataSink& sink) {
                               return sink.write(reinterpret_cast<const char*>(asset->gzip) + offset, length);
                             });
    return;
  }
  auto raw = gunzip_asset(*asset);
  if (!raw) {
    send_error(res, call.dialect, HttpError{500, "the embedded web UI file " + std::string(path) + " is corrupt"});
    return;
  }
  res.set_content(std::move(*raw), asset->content_type);
}

}  // namespace

bool path_is_web_ui(const std::string& path) {
  return path == "/" || path == "/index.html" || path.rfind("/assets/", 0) == 0;
}

void register_web_ui_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOpenAI;
  add_route(s, kDialect, "GET", "/", [](const RouteCall& call) { serve_asset(call, "/"); });
  add_route(s, kDialect, "GET", "/index.html", [](const RouteCall& call) { serve_asset(call, "/index.html"); });
  add_route(s, kDialect, "GET", R"(/assets/[A-Za-z0-9._\-]{1,200})", [](const RouteCall& call) { serve_asset(call, call.req.path); });
}

}  // namespace hearth::server
