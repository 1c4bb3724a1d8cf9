// Unit tests for each sampler on hand-made logits.
#include "sampler/samplers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace hearth::sampler {
namespace {

Candidates make(std::vector<float> logits) {
  Candidates c;
  c.load(logits.data(), logits.size());
  return c;
}

std::set<int32_t> ids(const Candidates& c) {
  std::set<int32_t> s;
  for (const auto& t : c) s.insert(t.id);
  return s;
}

// Logits whose softmax is exactly the given probabilities.
std::vector<float> from_probs(std::vector<double> p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

TEST(Samplers, TopKKeepsTheKBest) {
  auto c = make({1, 5, 3, 4, 2});
  apply_top_k(c, 2, 1);
  EXPECT_EQ(ids(c), (std::set<int32_t>{1, 3}));
  EXPECT_TRUE(c.sorted);
  EXPECT_EQ(c.items[0].id, 1);
  auto d = make({1, 5, 3});
  apply_top_k(d, 0, 1);  // off
  EXPECT_EQ(d.size, 3u);
  auto e = make({1, 5, 3});
  apply_top_k(e, 1, 2);  // min_keep wins
  EXPECT_EQ(e.size, 2u);
}

TEST(Samplers, TopPKeepsSmallestSetReachingP) {
  auto c = make(from_probs({0.5, 0.3, 0.15, 0.05}));
  apply_top_p(c, 0.75f, 1);
  EXPECT_EQ(ids(c), (std::set<int32_t>{0, 1}));
  auto d = make(from_probs({0.5, 0.3, 0.15, 0.05}));
  apply_top_p(d, 0.85f, 1);
  EXPECT_EQ(ids(d), (std::set<int32_t>{0, 1, 2}));
}

TEST(Samplers, MinPDropsTokensBelowFractionOfBest) {
  auto c = make(from_probs({0.5, 0.3, 0.15, 0.05}));
  apply_min_p(c, 0.2f, 1);  // keep p >= 0.1
  EXPECT_EQ(ids(c), (std::set<int32_t>{0, 1, 2}));
}

TEST(Samplers, TypicalPPrefersTokensNearTheEntropy) {
  // One dominant token and many small ones: the entropy is low, so the dominant token is
  // "typical" and p=0.5 keeps just it.
  auto c = make(from_probs({0.7, 0.1, 0.1, 0.1}));
  apply_typical_p(c, 0.5f, 1);
  EXPECT_EQ(ids(c), (std::set<int32_t>{0}));
  // Uniform: everything is equally typical, so the set grows until p is covered.
  auto d = make(from_probs({0.25, 0.25, 0.25, 0.25}));
  apply_typical_p(d, 0.6f, 1);
  EXPECT_EQ(d.size, 3u);
}

TEST(Samplers, TopNSigmaKeepsLogitsWithinNStdOfMax) {
  // mean 2, std sqrt(2): max 4, threshold 4 - 1*1.414 = 2.586
  auto c = make({0, 1, 2, 3, 4});
  apply_top_n_sigma(c, 1.0f);
  EXPECT_EQ(ids(c), (std::set<int32_t>{3, 4}));
}

TEST(Samplers, TemperatureScalesAndZeroIsGreedy) {
  auto c = make({1, 2, 4});
  apply_temperature(c, 2.0f);
  EXPECT_FLOAT_EQ(c.items[2].logit, 2.0f);
  auto d = make({1, 7, 4});
  apply_temperature(d, 0.0f);
  ASSERT_EQ(d.size, 1u);
  EXPECT_EQ(d.items[0].id, 1);
}

TEST(Samplers, DynamicTemperatureStaysInRange) {
  // Uniform distribution: normalised entropy 1 -> max temperature (1 + 0.5).
  auto c = make({3, 3, 3, 3});
  apply_dynamic_temperature(c, 1.0f, 0.5f, 1.0f);
  EXPECT_NEAR(c.items[0].logit, 3.0f / 1.5f, 1e-5);
}

TEST(Samplers, PenaltiesAffectOnlySeenTokens) {
  auto c = make({2, -2, 2, 1});
  std::vector<uint32_t> counts(4, 0);
  std::vector<int32_t> recent = {0, 1, 1};
  apply_penalties(c, recent, 2.0f, 0.5f, 0.25f, counts);
  EXPECT_FLOAT_EQ(c.items[0].logit, 2.0f / 2 - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(c.items[1].logit, -2.0f * 2 - 0.5f - 0.5f);
  EXPECT_FLOAT_EQ(c.items[2].logit, 2.0f);
  EXPECT_TRUE(std::all_of(counts.begin(), counts.end(), [](uint32_t x) { return x == 0; }));
}

TEST(Samplers, DryPenalisesTheTokenThatContinuesARepeat) {
  // History: 5 6 7 8 | 5 6 7  -> the next token 8 would repeat "5 6 7 8" (match length 3).
  auto c = make({0, 0, 0, 0, 0, 0, 0, 0, 0});
  std::vector<int32_t> history = {5, 6, 7, 8, 5, 6, 7};
  std::vector<DryHit> hits;
  apply_dry(c, history, 1.0f, 2.0f, 2, {}, hits);
  EXPECT_FLOAT_EQ(c.items[8].logit, -1.0f * std::pow(2.0f, 1.0f));
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(c.items[i].logit, 0.0f) << i;
  // A breaker inside the suffix stops the match.
  auto d = make({0, 0, 0, 0, 0, 0, 0, 0, 0});
  std::vector<int32_t> breakers = {6};
  apply_dry(d, history, 1.0f, 2.0f, 2, breakers, hits);
  EXPECT_FLOAT_EQ(d.items[8].logit, 0.0f);
}

TEST(Samplers, XtcRemovesTopChoicesButKeepsTheLastAboveThreshold) {
  std::mt19937_64 rng(1);
  auto c = make(from_probs({0.4, 0.3, 0.2, 0.1}));
  apply_xtc(c, 1.0f, 0.15f, 1, rng);
  EXPECT_EQ(ids(c), (std::set<int32_t>{2, 3}));
  auto d = make(from_probs({0.4, 0.3, 0.2, 0.1}));
  apply_xtc(d, 0.0f, 0.15f, 1, rng);  // probability 0: never
  EXPECT_EQ(d.size, 4u);
}

TEST(Samplers, DrawFollowsTheDistribution) {
  std::mt19937_64 rng(42);
  std::vector<int> hist(3, 0);
  for (int i = 0; i < 20000; ++i) {
    auto c = make(from_probs({0.6, 0.3, 0.1}));
    hist[static_cast<size_t>(c.items[sample_index(c, rng)].id)]++;
  }
  EXPECT_NEAR(hist[0] / 20000.0, 0.6, 0.02);
  EXPECT_NEAR(hist[1] / 20000.0, 0.3, 0.02);
  EXPECT_NEAR(hist[2] / 20000.0, 0.1, 0.02);
}

TEST(Samplers, MirostatV2TruncatesBySurpriseAndUpdatesMu) {
  std::mt19937_64 rng(3);
  auto c = make(from_probs({0.5, 0.25, 0.125, 0.125}));
  float mu = 1.5f;  // keeps surprise <= 1.5 bits: only token 0 (1 bit)
  int32_t t = sample_mirostat_v2(c, 3.0f, 0.1f, mu, rng);
  EXPECT_EQ(t, 0);
  EXPECT_NEAR(mu, 1.5f - 0.1f * (0.0f - 3.0f), 1e-5);  // p renormalised to 1: surprise 0
}

TEST(Samplers, MirostatV1PicksFromATruncatedSet) {
  std::mt19937_64 rng(3);
  std::vector<double> p;
  double z = 0;
  for (int i = 1; i <= 50; ++i) z += 1.0 / i;
  for (int i = 1; i <= 50; ++i) p.push_back(1.0 / i / z);
  auto c = make(from_probs(p));
  float mu = 2.0f;
  int32_t t = sample_mirostat_v1(c, 1.0f, 0.1f, 50, mu, rng);
  EXPECT_GE(t, 0);
  EXPECT_LT(c.size, 50u);
}

}  // namespace
}  // namespace hearth::sampler
