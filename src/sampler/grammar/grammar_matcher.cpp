// The grammar matcher's stacks, states and cached transitions (see grammar_matcher.h).
#include "sampler/grammar/grammar_matcher.h"

#include <algorithm>
#include <cstring>

namespace hearth::sampler {
namespace {

using Kind = CompiledGrammar::SymbolKind;

// Past these sizes the caches are dropped and rebuilt from the current position.
constexpr size_t kMaxNodes = size_t{1} << 20;
constexpr size_t kMaxStates = size_t{1} << 13;  // 8 MiB of transitions
constexpr size_t kMaskCacheEntries = 8;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t node_key(uint32_t pos, uint32_t parent) { return ((uint64_t{pos} << 32) | parent) + 1; }

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar) : g_(std::move(grammar)) {
  clear_caches();
  reset();
}

void GrammarMatcher::clear_caches() {
  nodes_.assign(1, Node{0, 0});  // node 0: "nothing below", never interned
  node_keys_.assign(1024, 0);
  node_vals_.assign(1024, 0);
  states_.assign(1, State{0, 0, 0, false});  // state 0: dead
  tops_.clear();
  state_slots_.assign(1024, kUnknown);
  trans_.assign(256, kDead);  // the dead state stays dead
  for (CachedMask& m : mask_cache_) m.state = kUnknown;
  start_ = kUnknown;
  current_ = kDead;
}

void GrammarMatcher::reset() {
  if (start_ == kUnknown) start_ = start_state();
  current_ = start_;
}

bool GrammarMatcher::is_complete() const { return states_[current_].accepting; }
bool GrammarMatcher::can_continue() const { return states_[current_].size > 0; }

uint32_t GrammarMatcher::intern_node(uint32_t pos, uint32_t parent) {
  if ((nodes_.size() + 1) * 2 > node_keys_.size()) {
    std::vector<uint64_t> keys(node_keys_.size() * 2, 0);
    std::vector<uint32_t> vals(keys.size(), 0);
    const size_t mask = keys.size() - 1;
    for (uint32_t id = 1; id < nodes_.size(); ++id) {
      const uint64_t k = node_key(nodes_[id].pos, nodes_[id].parent);
      size_t h = mix(k) & mask;
      while (keys[h] != 0) h = (h + 1) & mask;
      keys[h] = k;
      vals[h] = id;
    }
    node_keys_.swap(keys);
    node_vals_.swap(vals);
  }
  const uint64_t k = node_key(pos, parent);
  const size_t mask = node_keys_.size() - 1;
  size_t h = mix(k) & mask;
  while (node_keys_[h] != 0) {
    if (node_keys_[h] == k) return node_vals_[h];
    h = (h + 1) & mask;
  }
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({pos, parent});
  node_keys_[h] = k;
  node_vals_[h] = id;
  return id;
}

uint32_t GrammarMatcher::return_node(uint32_t pos, uint32_t parent) {
  // A call in last position returns straight to the caller's continuation.
  if (CompiledGrammar::kind_of(g_->symbols[pos]) == Kind::kEnd) return parent;
  return intern_node(pos, parent);
}

// Adds to scratch_ every stack that (pos, parent) leads to once rule calls are entered and
// finished alternatives return, stopping at byte-set symbols; a finished outermost rule makes
// the state accepting. Pairs already expanded for this transition are skipped (seen_*).
void GrammarMatcher::expand(uint32_t pos, uint32_t parent) {
  const auto& sym = g_->symbols;
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    Node w = work_.back();
    work_.pop_back();
    for (;;) {
      // Seen-set: open addressing keyed by (pos, parent), valid for the current stamp.
      if (seen_keys_.empty() || (seen_count_ + 1) * 2 > seen_keys_.size()) {
        std::vector<uint64_t> keys(std::max<size_t>(256, seen_keys_.size() * 2), 0);
        std::vector<uint32_t> stamps(keys.size(), 0);
        const size_t m = keys.size() - 1;
        for (size_t i = 0; i < seen_keys_.size(); ++i) {
          if (seen_stamp_[i] != stamp_) continue;
          size_t h = mix(seen_keys_[i]) & m;
          while (stamps[h] == stamp_ && keys[h] != 0) h = (h + 1) & m;
          keys[h] = seen_keys_[i];
          stamps[h] = stamp_;
        }
        seen_keys_.swap(keys);
        seen_stamp_.swap(stamps);
      }
      const uint64_t k = node_key(w.pos, w.parent);
      const size_t m = seen_keys_.size() - 1;
      size_t h = mix(k) & m;
      bool seen = false;
      while (seen_stamp_[h] == stamp_) {
        if (seen_keys_[h] == k) {
          seen = true;
          break;
        }
        h = (h + 1) & m;
      }
      if (seen) break;
      seen_keys_[h] = k;
      seen_stamp_[h] = stamp_;
      ++seen_count_;

      const uint32_t s = sym[w.pos];
      const Kind kind = CompiledGrammar::kind_of(s);
      if (kind == Kind::kEnd) {
        if (w.parent == 0) {
          scratch_accepting_ = true;
          break;
        }
        w = nodes_[w.parent];
        continue;
      }
      if (kind == Kind::kBytes) {
        scratch_.push_back(intern_node(w.pos, w.parent));
        break;
      }
      const uint32_t rule = CompiledGrammar::value_of(s);
      const uint32_t ret = return_node(w.pos + 1, w.parent);
      for (uint32_t a = g_->rule_alts[rule]; a < g_->rule_alts[rule + 1]; ++a) work_.push_back({g_->alt_begin[a], ret});
      break;
    }
  }
}

void GrammarMatcher::begin_transition() {
  scratch_.clear();
  scratch_accepting_ = false;
  seen_count_ = 0;
  if (++stamp_ == 0) {  // wrapped: old stamps could look current
    std::fill(seen_stamp_.begin(), seen_stamp_.end(), 0);
    stamp_ = 1;
  }
}

uint32_t GrammarMatcher::intern_state() {
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  if (scratch_.empty() && !scratch_accepting_) return kDead;
  uint64_t h64 = scratch_accepting_ ? 0x9e3779b97f4a7c15ULL : 0;
  for (uint32_t t : scratch_) h64 = mix(h64 ^ t);
  const auto hash = static_cast<uint32_t>(h64);
  if ((states_.size() + 1) * 2 > state_slots_.size()) {
    std::vector<uint32_t> slots(state_slots_.size() * 2, kUnknown);
    const size_t m = slots.size() - 1;
    for (uint32_t id = 1; id < states_.size(); ++id) {
      size_t h = states_[id].hash & m;
      while (slots[h] != kUnknown) h = (h + 1) & m;
      slots[h] = id;
    }
    state_slots_.swap(slots);
  }
  const size_t m = state_slots_.size() - 1;
  size_t h = hash & m;
  while (state_slots_[h] != kUnknown) {
    const State& s = states_[state_slots_[h]];
    if (s.hash == hash && s.accepting == scratch_accepting_ && s.size == scratch_.size() &&
        std::memcmp(tops_.data() + s.begin, scratch_.data(), scratch_.size() * sizeof(uint32_t)) == 0) {
      return state_slots_[h];
    }
    h = (h + 1) & m;
  }
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back({static_cast<uint32_t>(tops_.size()), static_cast<uint32_t>(scratch_.size()), hash, scratch_accepting_});
  tops_.insert(tops_.end(), scratch_.begin(), scratch_.end());
  trans_.resize(trans_.size() + 256, kUnknown);
  state_slots_[h] = id;
  return id;
}

uint32_t GrammarMatcher::start_state() {
  begin_transition();
  for (uint32_t a = g_->rule_alts[g_->root]; a < g_->rule_alts[g_->root + 1]; ++a) expand(g_->alt_begin[a], 0);
  return intern_state();
}

uint32_t GrammarMatcher::step_slow(uint32_t state, uint8_t byte) {
  begin_transition();
  const State s = states_[state];
  for (uint32_t k = s.begin; k < s.begin + s.size; ++k) {
    const Node top = nodes_[tops_[k]];
    const ByteSet& set = g_->byte_sets[CompiledGrammar::value_of(g_->symbols[top.pos])];
    if (byte_set_has(set, byte)) expand(top.pos + 1, top.parent);
  }
  const uint32_t next = intern_state();
  trans_[static_cast<size_t>(state) * 256 + byte] = next;
  return next;
}

void GrammarMatcher::compact_if_needed() {
  if (nodes_.size() <= kMaxNodes && states_.size() <= kMaxStates) return;
  // Keep the current stacks (as position lists, top first), forget everything else.
  const State cur = states_[current_];
  std::vector<std::vector<uint32_t>> stacks;
  for (uint32_t k = cur.begin; k < cur.begin + cur.size; ++k) {
    std::vector<uint32_t> chain;
    for (uint32_t n = tops_[k]; n != 0; n = nodes_[n].parent) chain.push_back(nodes_[n].pos);
    stacks.push_back(std::move(chain));
  }
  clear_caches();
  begin_transition();
  for (const auto& chain : stacks) {
    uint32_t parent = 0;
    for (size_t i = chain.size(); i-- > 0;) parent = intern_node(chain[i], parent);
    scratch_.push_back(parent);
  }
  scratch_accepting_ = cur.accepting;
  current_ = intern_state();
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  compact_if_needed();
  uint32_t s = current_;
  for (char c : bytes) {
    s = step(s, static_cast<uint8_t>(c));
    if (s == kDead) return false;
  }
  current_ = s;
  return true;
}

bool GrammarMatcher::can_accept_bytes(std::string_view bytes) {
  compact_if_needed();
  uint32_t s = current_;
  for (char c : bytes) {
    s = step(s, static_cast<uint8_t>(c));
    if (s == kDead) return false;
  }
  return true;
}

bool GrammarMatcher::accept_token(const TokenTrie& vocab, int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= vocab.n_vocab()) return false;
  if (vocab.is_eog(token)) return is_complete();
  const std::string_view piece = vocab.piece(token);
  if (piece.empty()) return false;
  return accept_bytes(piece);
}

void GrammarMatcher::fill_mask(const TokenTrie& vocab, std::span<uint64_t> allowed) {
  compact_if_needed();
  if (!mask_cache_enabled_) {
    walk_mask(vocab, allowed);
    return;
  }
  ++mask_clock_;
  CachedMask* slot = nullptr;
  for (CachedMask& m : mask_cache_) {
    if (m.state == current_ && m.bits.size() == allowed.size()) {
      m.last_used = mask_clock_;
      std::copy(m.bits.begin(), m.bits.end(), allowed.begin());
      return;
    }
    if (slot == nullptr || m.last_used < slot->last_used) slot = &m;
  }
  walk_mask(vocab, allowed);
  if (mask_cache_.size() < kMaskCacheEntries) {
    mask_cache_.emplace_back();
    slot = &mask_cache_.back();
  }
  slot->state = current_;
  slot->last_used = mask_clock_;
  slot->bits.assign(allowed.begin(), allowed.end());
}

void GrammarMatcher::walk_mask(const TokenTrie& vocab, std::span<uint64_t> allowed) {
  std::fill(allowed.begin(), allowed.end(), 0);
  auto set_bit = [&](int32_t id) { allowed[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); };
  if (is_complete()) {
    for (int32_t id : vocab.eog_tokens()) set_bit(id);
  }
  if (!can_continue()) return;
  const std::span<const TokenTrie::Node> nodes = vocab.nodes();
  const std::span<const int32_t> ids = vocab.token_ids();
  if (walk_.size() < vocab.max_depth() + 1) walk_.resize(vocab.max_depth() + 1);
  uint32_t* walk = walk_.data();
  const uint32_t* trans = trans_.data();  // refreshed after step_slow, which may grow trans_
  const TokenTrie::Node* node = nodes.data();
  const size_t n_nodes = nodes.size();
  walk[0] = current_;
  size_t i = 1;
  while (i < n_nodes) {
    const TokenTrie::Node& nd = node[i];
    const uint32_t from = walk[nd.depth - 1u];
    uint32_t s = trans[static_cast<size_t>(from) * 256 + nd.byte];
    if (s == kUnknown) {
      s = step_slow(from, nd.byte);
      trans = trans_.data();
    }
    if (s == kDead) {
      i = nd.subtree_end;
      continue;
    }
    walk[nd.depth] = s;
    for (uint32_t k = nd.tokens_begin; k < nd.tokens_end; ++k) set_bit(ids[k]);
    ++i;
  }
}

}  // namespace hearth::sampler
