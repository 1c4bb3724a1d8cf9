// The browser UI served at / by `hearth serve`: the files of the web UI's production build
// (compiled into the binary gzip-compressed, see cmake/WebUi.cmake), sent as they are to
// clients that accept gzip and decompressed for the others, with the security headers a page
// needs (a CSP that allows only the server's own scripts, no framing, no sniffing). A build
// without the UI (no node at build time) answers / with a page that says how to get it.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hearth::server {

struct WebAsset {
  const char* path;          // "/index.html", "/assets/index-abc123.js"
  const char* content_type;  // "text/javascript; charset=utf-8"
  const unsigned char* gzip; // the file, gzip-compressed
  size_t gzip_size;
  size_t size;               // uncompressed
};

// The asset that answers `path` ("/" and "/index.html" give index.html), or null.
const WebAsset* find_web_asset(std::span<const WebAsset> assets, std::string_view path);

// True when an Accept-Encoding header allows `coding` ("gzip"): its own entry without q=0, or,
// when it has none, a "*" entry without q=0.
bool accepts_coding(std::string_view accept_encoding, std::string_view coding);
bool accepts_gzip(std::string_view accept_encoding);

// The header with every entry a weight of 0 refuses dropped ("gzip;q=0, br" -> "br"), and "*"
// too when something was refused.
// cpp-httplib compresses any answer whose request's Accept-Encoding merely contains "gzip" or
// "br", q=0 or not; the server hands it this instead (http_server.cpp).
std::string without_refused_codings(std::string_view accept_encoding);

// The asset's bytes uncompressed; nullopt when its gzip data is corrupt.
std::optional<std::string> gunzip_asset(const WebAsset& asset);

// The page a build without the web UI serves at /.
extern const char* const kWebUiMissingPage;

// Content-Security-Policy of the UI's pages.
extern const char* const kWebUiContentSecurityPolicy;

}  // namespace hearth::server
