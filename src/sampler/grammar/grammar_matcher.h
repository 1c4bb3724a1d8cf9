// Incremental matching of generated text against a compiled grammar, byte by byte, and the
// per-step mask of tokens the grammar allows.
//
// A parse position is a stack: the symbol to match next on top, the places to return to after
// finishing each rule below it. The matcher keeps the set of all stacks the bytes so far allow
// (ambiguous grammars keep several). Stacks are interned as linked nodes (position, parent),
// sets of stacks as numbered states, and the transition state --byte--> state is cached the
// first time it is computed: the matcher builds, lazily, the part of the grammar's automaton
// that generation actually visits. Repeating constructs (string characters, array items) come
// back to the same states, so after a few tokens a mask is a walk over the vocabulary trie
// made of table lookups. A right-recursive rule call in last position reuses its caller's
// return node, so `x*` does not grow the stack.
//
// The masks of the last few states are kept too: inside a string the state at each token
// boundary is the same, so its mask is copied instead of walked.
//
// Allocation: the caches grow when generation reaches parse states this matcher has not seen
// (1 KiB of transitions per state); once warm (a repeated structure), accept_bytes() and
// fill_mask() allocate nothing. Between calls, caches past a budget are rebuilt from the
// current position alone.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sampler/grammar/compiled_grammar.h"
#include "sampler/grammar/token_trie.h"

namespace hearth::sampler {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Back to the start: nothing matched yet.
  void reset();
  // Matches `bytes` after what was matched so far. False (and nothing changes) when the
  // grammar does not allow them.
  bool accept_bytes(std::string_view bytes);
  // Whether accept_bytes(bytes) would succeed; the position does not change.
  bool can_accept_bytes(std::string_view bytes);
  // A sampled token: its bytes, or for an end-of-generation token, whether the grammar may end
  // here (nothing changes either way).
  bool accept_token(const TokenTrie& vocab, int32_t token);

  // The text so far is a complete match (the grammar may end here).
  bool is_complete() const;
  // Some byte may still follow.
  bool can_continue() const;

  // Sets bit t of `allowed` (vocab.n_vocab() bits, 64 per word) for each token the grammar
  // allows next: tokens whose bytes keep a match possible, and end-of-generation tokens when
  // the text so far is complete. Every other bit is cleared.
  void fill_mask(const TokenTrie& vocab, std::span<uint64_t> allowed);

  // Turns the per-state mask cache off (benchmarks of the walk itself) or back on.
  void set_mask_cache(bool enabled) { mask_cache_enabled_ = enabled; }

  // Cache sizes, for tests and benchmarks.
  size_t n_states() const { return states_.size(); }
  size_t n_nodes() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t pos;     // index into grammar symbols
    uint32_t parent;  // node to continue with after the rule at `pos` ends; 0: the end
  };
  struct State {
    uint32_t begin;  // its top nodes: tops_[begin, begin + size), sorted
    uint32_t size;
    uint32_t hash;
    bool accepting;
  };
  static constexpr uint32_t kDead = 0;       // the state with no stack
  static constexpr uint32_t kUnknown = UINT32_MAX;

  uint32_t step(uint32_t state, uint8_t byte) {
    const uint32_t next = trans_[static_cast<size_t>(state) * 256 + byte];
    return next != kUnknown ? next : step_slow(state, byte);
  }
  uint32_t step_slow(uint32_t state, uint8_t byte);
  uint32_t start_state();
  void expand(uint32_t pos, uint32_t parent);
  uint32_t intern_node(uint32_t pos, uint32_t parent);
  uint32_t return_node(uint32_t pos, uint32_t parent);
  uint32_t intern_state();  // from scratch_ and scratch_accepting_
  void begin_transition();  // clears scratch_ and the seen-set
  void clear_caches();
  void walk_mask(const TokenTrie& vocab, std::span<uint64_t> allowed);
  void compact_if_needed();

  std::shared_ptr<const CompiledGrammar> g_;
  uint32_t current_ = kDead;
  uint32_t start_ = kUnknown;

  std::vector<Node> nodes_;
  std::vector<uint64_t> node_keys_;   // open addressing: (pos << 32 | parent) + 1, 0 empty
  std::vector<uint32_t> node_vals_;
  std::vector<State> states_;
  std::vector<uint32_t> tops_;
  std::vector<uint32_t> state_slots_;  // open addressing over state ids, kUnknown empty
  std::vector<uint32_t> trans_;        // 256 transitions per state, kUnknown until computed

  // Masks of recently seen states (a state's allowed tokens never change).
  struct CachedMask {
    uint32_t state = kUnknown;
    uint64_t last_used = 0;
    std::vector<uint64_t> bits;
  };
  std::vector<CachedMask> mask_cache_;
  uint64_t mask_clock_ = 0;
  bool mask_cache_enabled_ = true;

  // Scratch for computing one transition.
  std::vector<uint32_t> scratch_;
  bool scratch_accepting_ = false;
  std::vector<Node> work_;
  std::vector<uint64_t> seen_keys_;
  std::vector<uint32_t> seen_stamp_;
  size_t seen_count_ = 0;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> walk_;  // the trie walk's state per depth
};

}  // namespace hearth::sampler
