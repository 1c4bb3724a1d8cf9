// The fixture of the CLI tests that talk to a real HTTP server: an in-process hearth server on
// a free loopback port whose backend is the scripted test engine (it always answers " The end.").
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/test_paths.h"
#include "scripted_backend.h"
#include "server/http_server.h"

namespace hearth::cli {

class ScriptedServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = test::models_dir() + "/stories260K-llama-f32.gguf";
    HEARTH_REQUIRE_FILE(path);
    backend_ = test::ScriptedBackend::create(path, " The end.");
    ASSERT_NE(backend_, nullptr);
    server::ServerOptions o;
    o.port = 0;
    o.version = "1.2.3";  // what /api/version answers
    server_ = std::make_unique<server::HttpServer>(o);
    ASSERT_TRUE(server_->bind().ok());
    server_->start();
    server_->set_backend(backend_);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  std::shared_ptr<test::ScriptedBackend> backend_;
  std::unique_ptr<server::HttpServer> server_;
};

}  // namespace hearth::cli
