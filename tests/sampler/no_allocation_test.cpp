// Sampling a token must not touch the heap once the chain is built and warmed up: every
// sampler in the chain works in buffers allocated at construction. This test counts calls to
// the global operator new around many sample() calls with every sampler enabled.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "sampler/sampler_chain.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow form too (std::stable_sort's buffer, in the tokenizer other tests of this binary
// load): left to the sanitizer's allocator, its blocks would come back through the free() above
// and ASan would report an alloc-dealloc mismatch.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace hearth::sampler {
namespace {

TEST(SamplerAllocation, SampleDoesNotAllocate) {
  SamplerParams p;
  p.seed = 7;
  p.temperature = 0.9f;
  p.dynatemp_range = 0.3f;
  p.top_k = 50;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.typical_p = 0.9f;
  p.top_n_sigma = 2.0f;
  p.xtc_probability = 0.5f;
  p.xtc_threshold = 0.05f;
  p.repeat_penalty = 1.1f;
  p.presence_penalty = 0.2f;
  p.frequency_penalty = 0.1f;
  p.dry_multiplier = 0.8f;
  p.n_probs = 5;
  p.logit_bias = {{3, 1.0f}};
  const size_t n_vocab = 4096;
  auto chain = SamplerChain::create(p, n_vocab, 128);
  ASSERT_TRUE(chain.ok());
  std::vector<float> logits(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) logits[i] = std::sin(static_cast<float>(i) * 1.3f) * 4.0f;
  for (int i = 0; i < 300; ++i) chain->sample(logits.data());  // warm up: history wraps, DRY scratch grows
  long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) chain->sample(logits.data());
  EXPECT_EQ(g_allocations.load() - before, 0);
  for (int mirostat : {1, 2}) {
    SamplerParams m = p;
    m.mirostat = mirostat;
    auto mc = SamplerChain::create(m, n_vocab, 128);
    ASSERT_TRUE(mc.ok());
    for (int i = 0; i < 300; ++i) mc->sample(logits.data());
    before = g_allocations.load();
    for (int i = 0; i < 100; ++i) mc->sample(logits.data());
    EXPECT_EQ(g_allocations.load() - before, 0) << "mirostat " << mirostat;
  }
}

TEST(SamplerAllocation, GrammarSamplingDoesNotAllocateOnceWarm) {
  // A vocabulary of single letters, letter pairs and a few structural pieces; the grammar is a
  // repeating structure, so after warm-up every parse state has been seen.
  std::vector<std::string> pieces = {"", "[", "]", ",", " ", "\"", "\","};
  for (char a = 'a'; a <= 'z'; ++a) {
    pieces.push_back(std::string(1, a));
    for (char b = 'a'; b <= 'z'; ++b) pieces.push_back(std::string{a, b});
  }
  std::vector<uint8_t> eog(pieces.size(), 0);
  eog[0] = 1;
  auto grammar = compile_gbnf("root ::= \"[\" (\"\\\"\" [a-z]{0,3} \"\\\",\" \" \"?)* \"]\"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  SamplerParams p;
  p.seed = 11;
  p.temperature = 1.0f;
  p.top_k = 20;
  p.repeat_penalty = 1.1f;
  const size_t n_vocab = pieces.size();
  auto chain = SamplerChain::create(p, n_vocab, 128, {*grammar, TokenTrie::build(pieces, eog), {}});
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  std::vector<float> logits(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) logits[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.0f;
  logits[2] = -20.0f;  // "]" rarely, so the array goes on
  logits[0] = -20.0f;
  for (int i = 0; i < 400; ++i) ASSERT_GE(chain->sample(logits.data()).token, 0);
  long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) chain->sample(logits.data());
  EXPECT_EQ(g_allocations.load() - before, 0);
  EXPECT_FALSE(chain->grammar_finished());
}

}  // namespace
}  // namespace hearth::sampler
