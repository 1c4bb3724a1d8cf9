// Helpers for store tests: a fresh store in a temp directory, a small model put into it, and
// the consistency assertion every test ends with (every manifest's blobs exist, no temporary
// files left).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/test_paths.h"
#include "store/model_store.h"

namespace hearth::store::test {

// Puts a config blob and the given layer contents into the store and writes the manifest.
inline StoredModel put_model(const ModelStore& store, const std::string& name, const std::string& weights,
                             const std::string& params = "") {
  Manifest m;
  auto add = [&](const char* type, const std::string& bytes) {
    auto d = store.put_blob(bytes);
    EXPECT_TRUE(d.ok()) << d.error().to_string();
    m.layers.push_back(Layer{type, *d, bytes.size(), ""});
  };
  add(media_type::kModel, weights);
  if (!params.empty()) add(media_type::kParams, params);
  ModelConfig c;
  c.model_family = "llama";
  for (const auto& l : m.layers) c.diff_ids.push_back(l.digest);
  const std::string config = c.to_json().dump();
  auto cd = store.put_blob(config);
  EXPECT_TRUE(cd.ok());
  m.config = Layer{media_type::kConfig, *cd, config.size(), ""};
  auto n = parse_model_name(name);
  EXPECT_TRUE(n.ok()) << name;
  auto st = store.write_manifest(*n, m);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  auto r = store.resolve(*n);
  EXPECT_TRUE(r.ok());
  return *r;
}

}  // namespace hearth::store::test

#define EXPECT_STORE_CONSISTENT(store)                                     \
  do {                                                                     \
    auto hearth_report_ = (store).check_consistency();                     \
    for (const auto& p : hearth_report_.problems) ADD_FAILURE() << p;      \
  } while (0)
