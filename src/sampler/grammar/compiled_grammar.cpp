// GbnfAst → CompiledGrammar (see compiled_grammar.h). Lowering turns each expression into
// symbols: literal code points into single-byte sets, classes into one byte set (ASCII) or a
// helper rule of UTF-8 byte patterns, groups into helper rules, and repetitions into right-
// recursive helper rules (x* as S ::= x S | "", x{0,n} as a chain of n optional rules). The
// repeated item is always a single symbol, so counted repetitions grow the grammar linearly.
// Then: left recursion is an error, and alternatives that cannot finish are dropped.
#include "sampler/grammar/compiled_grammar.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "sampler/grammar/gbnf_parser.h"

namespace hearth::sampler {
namespace {

constexpr size_t kMaxSymbols = size_t{1} << 21;

using Kind = CompiledGrammar::SymbolKind;

enum class RuleOrigin { kUser, kGroup, kStar, kOptional, kClass };

struct BuildRule {
  std::string name;
  uint32_t owner = 0;  // the grammar rule this one was made for
  RuleOrigin origin = RuleOrigin::kUser;
  std::vector<std::vector<uint32_t>> alts;
};

class Compiler {
 public:
  Compiler(std::string_view text, const GbnfAst& ast) : text_(text), ast_(ast) {}

  Result<std::shared_ptr<const CompiledGrammar>> run() {
    HEARTH_TRY(declare_rules());
    for (size_t r = 0; r < ast_.rules.size(); ++r) {
      const GbnfExpr& body = ast_.rules[r].body;
      std::vector<std::vector<uint32_t>> alts;
      if (body.kind == GbnfExpr::Kind::kAlternation) {
        for (const GbnfExpr& child : body.children) {
          std::vector<uint32_t> alt;
          HEARTH_TRY(lower(child, static_cast<uint32_t>(r), alt));
          alts.push_back(std::move(alt));
        }
      } else {
        std::vector<uint32_t> alt;
        HEARTH_TRY(lower(body, static_cast<uint32_t>(r), alt));
        alts.push_back(std::move(alt));
      }
      rules_[r].alts = std::move(alts);
    }
    HEARTH_TRY(check_left_recursion());
    HEARTH_TRY(prune_unfinishable());
    return flatten();
  }

 private:
  static uint32_t rule_symbol(uint32_t r) { return CompiledGrammar::make_symbol(Kind::kRule, r); }

  Status declare_rules() {
    for (size_t r = 0; r < ast_.rules.size(); ++r) {
      const GbnfRule& rule = ast_.rules[r];
      if (!ids_.emplace(rule.name, static_cast<uint32_t>(r)).second) {
        return gbnf_error(text_, rule.offset, "rule '" + rule.name + "' is defined twice");
      }
      BuildRule b;
      b.name = rule.name;
      b.owner = static_cast<uint32_t>(r);
      rules_.push_back(std::move(b));
    }
    auto root = ids_.find("root");
    if (root == ids_.end()) return make_error(ErrorKind::kInvalidArgument, "grammar: there is no 'root' rule");
    root_ = root->second;
    return ok_status();
  }

  Status spend(size_t n) {
    n_symbols_ += n;
    if (n_symbols_ > kMaxSymbols) {
      return make_error(ErrorKind::kInvalidArgument,
                        "grammar: too large once repetitions are expanded (more than " + std::to_string(kMaxSymbols) +
                            " symbols); use smaller repetition counts");
    }
    return ok_status();
  }

  Status emit(std::vector<uint32_t>& out, uint32_t sym) {
    HEARTH_TRY(spend(1));
    out.push_back(sym);
    return ok_status();
  }

  uint32_t new_rule(uint32_t owner, RuleOrigin origin) {
    BuildRule b;
    b.owner = owner;
    b.origin = origin;
    b.name = rules_[owner].name + "-" + std::to_string(rules_.size());
    rules_.push_back(std::move(b));
    return static_cast<uint32_t>(rules_.size() - 1);
  }

  uint32_t byte_set_symbol(const ByteSet& set) {
    auto [it, inserted] = set_ids_.emplace(set, static_cast<uint32_t>(byte_sets_.size()));
    if (inserted) byte_sets_.push_back(set);
    return CompiledGrammar::make_symbol(Kind::kBytes, it->second);
  }

  static ByteSet byte_range(uint8_t lo, uint8_t hi) {
    ByteSet s{};
    for (unsigned b = lo; b <= hi; ++b) s[b >> 6] |= uint64_t{1} << (b & 63);
    return s;
  }

  Status lower_class(std::vector<CodePointRange> ranges, uint32_t owner, std::vector<uint32_t>& out) {
    if (ranges.empty() || ranges.back().hi < 0x80) {
      ByteSet set{};
      for (const CodePointRange& r : ranges) {
        const ByteSet part = byte_range(static_cast<uint8_t>(r.lo), static_cast<uint8_t>(r.hi));
        for (int k = 0; k < 4; ++k) set[k] |= part[k];
      }
      return emit(out, byte_set_symbol(set));
    }
    std::vector<uint64_t> key;
    for (const CodePointRange& r : ranges) key.push_back((uint64_t{r.lo} << 32) | r.hi);
    auto cached = class_rules_.find(key);
    if (cached != class_rules_.end()) return emit(out, rule_symbol(cached->second));
    const uint32_t rule = new_rule(owner, RuleOrigin::kClass);
    class_rules_.emplace(std::move(key), rule);
    ByteSet single{};
    bool has_single = false;
    std::vector<std::vector<uint32_t>> alts;
    for (const Utf8Pattern& p : utf8_patterns(ranges)) {
      if (p.length == 1) {
        const ByteSet part = byte_range(p.lo[0], p.hi[0]);
        for (int k = 0; k < 4; ++k) single[k] |= part[k];
        has_single = true;
        continue;
      }
      std::vector<uint32_t> alt;
      for (int i = 0; i < p.length; ++i) HEARTH_TRY(emit(alt, byte_set_symbol(byte_range(p.lo[i], p.hi[i]))));
      alts.push_back(std::move(alt));
    }
    if (has_single) {
      std::vector<uint32_t> alt;
      HEARTH_TRY(emit(alt, byte_set_symbol(single)));
      alts.insert(alts.begin(), std::move(alt));
    }
    rules_[rule].alts = std::move(alts);
    return emit(out, rule_symbol(rule));
  }

  Status lower_repeat(const GbnfExpr& e, uint32_t owner, std::vector<uint32_t>& out) {
    std::vector<uint32_t> body;
    HEARTH_TRY(lower(e.children[0], owner, body));
    if (body.empty() || e.max == 0) return ok_status();  // repeating nothing matches nothing more
    uint32_t item;
    if (body.size() == 1) {
      item = body[0];
    } else {
      const uint32_t group = new_rule(owner, RuleOrigin::kGroup);
      rules_[group].alts.push_back(std::move(body));
      item = rule_symbol(group);
    }
    for (uint32_t k = 0; k < e.min; ++k) HEARTH_TRY(emit(out, item));
    if (e.max == GbnfExpr::kUnbounded) {
      const uint32_t star = new_rule(owner, RuleOrigin::kStar);
      HEARTH_TRY(spend(2));
      rules_[star].alts = {{item, rule_symbol(star)}, {}};
      return emit(out, rule_symbol(star));
    }
    uint32_t chain = 0;
    bool has_chain = false;
    for (uint32_t k = e.min; k < e.max; ++k) {
      const uint32_t opt = new_rule(owner, RuleOrigin::kOptional);
      std::vector<uint32_t> alt = {item};
      if (has_chain) alt.push_back(rule_symbol(chain));
      HEARTH_TRY(spend(alt.size()));
      rules_[opt].alts = {std::move(alt), {}};
      chain = opt;
      has_chain = true;
    }
    if (has_chain) HEARTH_TRY(emit(out, rule_symbol(chain)));
    return ok_status();
  }

  Status lower(const GbnfExpr& e, uint32_t owner, std::vector<uint32_t>& out) {
    switch (e.kind) {
      case GbnfExpr::Kind::kSequence:
        for (const GbnfExpr& child : e.children) HEARTH_TRY(lower(child, owner, out));
        return ok_status();
      case GbnfExpr::Kind::kAlternation: {
        std::vector<std::vector<uint32_t>> alts;
        for (const GbnfExpr& child : e.children) {
          std::vector<uint32_t> alt;
          HEARTH_TRY(lower(child, owner, alt));
          alts.push_back(std::move(alt));
        }
        const uint32_t group = new_rule(owner, RuleOrigin::kGroup);
        rules_[group].alts = std::move(alts);
        return emit(out, rule_symbol(group));
      }
      case GbnfExpr::Kind::kLiteral: {
        std::vector<uint8_t> bytes;
        for (char32_t cp : e.text) append_utf8(cp, bytes);
        for (uint8_t b : bytes) HEARTH_TRY(emit(out, byte_set_symbol(byte_range(b, b))));
        return ok_status();
      }
      case GbnfExpr::Kind::kClass: {
        std::vector<CodePointRange> ranges = normalize_ranges(e.ranges);
        if (e.negated) ranges = complement_ranges(ranges);
        return lower_class(std::move(ranges), owner, out);
      }
      case GbnfExpr::Kind::kAny: return lower_class(complement_ranges({}), owner, out);
      case GbnfExpr::Kind::kRuleRef: {
        auto it = ids_.find(e.name);
        if (it == ids_.end()) return gbnf_error(text_, e.offset, "rule '" + e.name + "' is not defined");
        return emit(out, rule_symbol(it->second));
      }
      case GbnfExpr::Kind::kRepeat: return lower_repeat(e, owner, out);
    }
    return ok_status();
  }

  // Rules for which some alternative has every symbol "ok": a byte set when set_ok says so,
  // a rule when it is itself ok. Worklist fixpoint, linear in the grammar's size.
  template <typename SetOk>
  std::vector<char> fixpoint(SetOk set_ok) const {
    const size_t n = rules_.size();
    std::vector<char> ok(n, 0);
    std::vector<std::vector<uint32_t>> users(n);  // alternatives (numbered globally) using rule r
    std::vector<uint32_t> pending;
    std::vector<uint32_t> alt_rule;
    std::vector<uint32_t> queue;
    for (uint32_t r = 0; r < n; ++r) {
      for (const auto& alt : rules_[r].alts) {
        const auto a = static_cast<uint32_t>(pending.size());
        uint32_t count = 0;
        bool dead = false;
        for (uint32_t sym : alt) {
          if (CompiledGrammar::kind_of(sym) == Kind::kBytes) {
            dead = dead || !set_ok(byte_sets_[CompiledGrammar::value_of(sym)]);
          } else {
            ++count;
            users[CompiledGrammar::value_of(sym)].push_back(a);
          }
        }
        pending.push_back(dead ? UINT32_MAX : count);
        alt_rule.push_back(r);
        if (!dead && count == 0) queue.push_back(r);
      }
    }
    while (!queue.empty()) {
      const uint32_t r = queue.back();
      queue.pop_back();
      if (ok[r]) continue;
      ok[r] = 1;
      for (uint32_t a : users[r]) {
        if (pending[a] != UINT32_MAX && --pending[a] == 0) queue.push_back(alt_rule[a]);
      }
    }
    return ok;
  }

  Status check_left_recursion() const {
    const std::vector<char> nullable = fixpoint([](const ByteSet&) { return false; });
    const size_t n = rules_.size();
    std::vector<std::vector<uint32_t>> edges(n);
    for (uint32_t r = 0; r < n; ++r) {
      for (const auto& alt : rules_[r].alts) {
        for (uint32_t sym : alt) {
          if (CompiledGrammar::kind_of(sym) != Kind::kRule) break;
          const uint32_t target = CompiledGrammar::value_of(sym);
          edges[r].push_back(target);
          if (!nullable[target]) break;
        }
      }
    }
    std::vector<uint8_t> color(n, 0);  // 0 unvisited, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;
    for (uint32_t start = 0; start < n; ++start) {
      if (color[start] != 0) continue;
      path.push_back({start, 0});
      color[start] = 1;
      while (!path.empty()) {
        auto& [r, next] = path.back();
        if (next == edges[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t target = edges[r][next++];
        if (color[target] == 1) return left_recursion_error(path, target);
        if (color[target] == 0) {
          color[target] = 1;
          path.push_back({target, 0});
        }
      }
    }
    return ok_status();
  }

  Error left_recursion_error(const std::vector<std::pair<uint32_t, size_t>>& path, uint32_t target) const {
    size_t from = 0;
    while (path[from].first != target) ++from;
    std::vector<std::string> names;
    bool repeats_empty = false;
    for (size_t k = from; k < path.size(); ++k) {
      const BuildRule& rule = rules_[path[k].first];
      repeats_empty = repeats_empty || rule.origin == RuleOrigin::kStar;
      const std::string& owner = rules_[rule.owner].name;
      if (names.empty() || names.back() != owner) names.push_back(owner);
    }
    if (names.size() > 1 && names.front() == names.back()) names.pop_back();
    if (repeats_empty) {
      return make_error(ErrorKind::kInvalidArgument,
                        "grammar: rule '" + names.front() +
                            "' repeats (with *, + or {m,}) an expression that can match the empty string, which "
                            "would never finish");
    }
    std::string cycle;
    for (const std::string& name : names) cycle += name + " -> ";
    cycle += names.front();
    return make_error(ErrorKind::kInvalidArgument,
                      "grammar: left recursion: rule '" + names.front() +
                          "' can reach itself before matching any input (" + cycle +
                          "); rewrite it with repetition, e.g. list ::= item (\",\" item)*");
  }

  Status prune_unfinishable() {
    const std::vector<char> productive = fixpoint([](const ByteSet& s) { return (s[0] | s[1] | s[2] | s[3]) != 0; });
    if (!productive[root_]) {
      return make_error(ErrorKind::kInvalidArgument, "grammar: 'root' cannot match any complete text");
    }
    for (BuildRule& rule : rules_) {
      auto finishable = [&](const std::vector<uint32_t>& alt) {
        for (uint32_t sym : alt) {
          const uint32_t v = CompiledGrammar::value_of(sym);
          if (CompiledGrammar::kind_of(sym) == Kind::kRule ? !productive[v] : !productive_set(byte_sets_[v])) return false;
        }
        return true;
      };
      rule.alts.erase(std::remove_if(rule.alts.begin(), rule.alts.end(), [&](const auto& a) { return !finishable(a); }),
                      rule.alts.end());
    }
    return ok_status();
  }

  static bool productive_set(const ByteSet& s) { return (s[0] | s[1] | s[2] | s[3]) != 0; }

  std::shared_ptr<const CompiledGrammar> flatten() const {
    auto g = std::make_shared<CompiledGrammar>();
    g->symbols.reserve(n_symbols_ + 4 * rules_.size());
    for (const BuildRule& rule : rules_) {
      g->rule_alts.push_back(static_cast<uint32_t>(g->alt_begin.size()));
      for (const auto& alt : rule.alts) {
        g->alt_begin.push_back(static_cast<uint32_t>(g->symbols.size()));
        g->symbols.insert(g->symbols.end(), alt.begin(), alt.end());
        g->symbols.push_back(CompiledGrammar::make_symbol(Kind::kEnd, 0));
      }
      g->rule_names.push_back(rule.name);
    }
    g->rule_alts.push_back(static_cast<uint32_t>(g->alt_begin.size()));
    g->byte_sets = byte_sets_;
    g->root = root_;
    return g;
  }

  std::string_view text_;
  const GbnfAst& ast_;
  std::vector<BuildRule> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  uint32_t root_ = 0;
  std::vector<ByteSet> byte_sets_;
  std::map<ByteSet, uint32_t> set_ids_;
  std::map<std::vector<uint64_t>, uint32_t> class_rules_;
  size_t n_symbols_ = 0;
};

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text) {
  HEARTH_ASSIGN(GbnfAst ast, parse_gbnf(text));
  if (ast.rules.empty()) return make_error(ErrorKind::kInvalidArgument, "grammar: the grammar is empty (it needs a 'root' rule)");
  return Compiler(text, ast).run();
}

}  // namespace hearth::sampler
