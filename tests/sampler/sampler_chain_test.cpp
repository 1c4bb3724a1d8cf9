// Tests for the sampler chain: reproducible seeds, greedy, logit bias, logprobs, validation.
#include "sampler/sampler_chain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace hearth::sampler {
namespace {

std::vector<float> ramp(size_t n) {
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) l[i] = std::sin(static_cast<float>(i) * 0.7f) * 3.0f;
  return l;
}

std::vector<int32_t> run(const SamplerParams& p, int steps) {
  auto chain = SamplerChain::create(p, 100, 256);
  EXPECT_TRUE(chain.ok());
  std::vector<int32_t> out;
  auto logits = ramp(100);
  for (int i = 0; i < steps; ++i) {
    out.push_back(chain->sample(logits.data()).token);
    std::rotate(logits.begin(), logits.begin() + 7, logits.end());
  }
  return out;
}

TEST(SamplerChain, SameSeedSameTokens) {
  SamplerParams p;
  p.seed = 1234;
  p.temperature = 1.5f;
  p.top_k = 0;
  p.top_p = 1.0f;
  auto a = run(p, 50);
  auto b = run(p, 50);
  EXPECT_EQ(a, b);
  p.seed = 99;
  EXPECT_NE(run(p, 50), a);
}

TEST(SamplerChain, ZeroTemperatureIsGreedy) {
  SamplerParams p;
  p.temperature = 0;
  auto chain = SamplerChain::create(p, 100, 16);
  ASSERT_TRUE(chain.ok());
  auto logits = ramp(100);
  int32_t best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  EXPECT_EQ(chain->sample(logits.data()).token, best);
}

TEST(SamplerChain, LogitBiasCanBanAndForce) {
  SamplerParams p;
  p.temperature = 0;
  auto logits = ramp(100);
  int32_t best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  p.logit_bias = {{best, -INFINITY}, {5, 100.0f}};
  auto chain = SamplerChain::create(p, 100, 16);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->sample(logits.data()).token, 5);
  p.logit_bias = {{100, 1.0f}};
  EXPECT_FALSE(SamplerChain::create(p, 100, 16).ok());
}

TEST(SamplerChain, LogprobsAreLogSoftmaxOfRawLogits) {
  SamplerParams p;
  p.temperature = 0;
  p.n_probs = 3;
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.0f};
  auto chain = SamplerChain::create(p, 4, 16);
  ASSERT_TRUE(chain.ok());
  auto r = chain->sample(logits.data());
  double z = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + std::exp(0.0));
  EXPECT_EQ(r.token, 1);
  EXPECT_NEAR(r.logprob, 3.0 - z, 1e-5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].id, 1);
  EXPECT_EQ(r.top[1].id, 2);
  EXPECT_EQ(r.top[2].id, 0);
  EXPECT_NEAR(r.top[2].logprob, 1.0 - z, 1e-5);
}

TEST(SamplerChain, HistoryIsBoundedAndFeedsPenalties) {
  SamplerParams p;
  p.temperature = 0;
  p.repeat_penalty = 100.0f;
  p.repeat_last_n = 2;
  auto chain = SamplerChain::create(p, 3, 4);
  ASSERT_TRUE(chain.ok());
  std::vector<float> logits = {3.0f, 2.0f, 1.0f};
  EXPECT_EQ(chain->sample(logits.data()).token, 0);
  EXPECT_EQ(chain->sample(logits.data()).token, 1);  // 0 was penalised
  EXPECT_EQ(chain->sample(logits.data()).token, 2);  // 0 and 1 in the window
  EXPECT_EQ(chain->sample(logits.data()).token, 0);  // 0 left the window of 2
  for (int i = 0; i < 20; ++i) chain->accept(i % 3);
  EXPECT_EQ(chain->history().size(), 4u);
}

TEST(SamplerChain, ValidationNamesTheField) {
  SamplerParams p;
  p.top_p = 1.5f;
  auto r = SamplerChain::create(p, 10, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("top_p"), std::string::npos);
  EXPECT_TRUE(sampler_kind_from_name("top-k").ok());
  EXPECT_FALSE(sampler_kind_from_name("bogus").ok());
}

}  // namespace
}  // namespace hearth::sampler
