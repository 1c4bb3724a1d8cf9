// The pre-tokenizer regex tables (the split each known tokenizer.ggml.pre value uses) and the
// PCRE2 driver that applies them one after another.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

namespace hearth {

namespace {

// GPT-2's split: contractions, optional-space letters / digits / other, trailing whitespace.
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// o200k (GPT-4o, gpt-oss): words split at case changes, with an optional trailing
// contraction; digits in runs of up to three.
constexpr const char* kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// DeepSeek LLM's letter class, written as code points (several are canonical singletons such
// as U+212A KELVIN SIGN that text normalization would silently turn into other letters).
constexpr const char* kDeepseekLlmLetters =
    "\\s?["
    "\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}"
    "\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}"
    "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}"
    "\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}"
    "]+";
constexpr const char* kCjkRuns = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";  // [一-龥ࠀ-一가-퟿]+

struct PreSpec {
  const char* names[8];
  std::vector<std::string> regexes;
  bool ignore_merges;
};

const std::vector<PreSpec>& pre_specs() {
  static const std::vector<PreSpec> specs = {
      {{"", "default"},
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"},
       false},
      {{"gpt-2", "gpt2", "mpt", "gpt-neox", "olmo", "phi-2", "jais"}, {kGpt2}, false},
      {{"llama-bpe", "llama3"}, {kLlama3}, true},
      {{"dbrx", "smaug-bpe"}, {kLlama3}, false},
      {{"qwen2", "stablelm2", "hunyuan"}, {kQwen2}, false},
      {{"gpt-4o"}, {kGpt4o}, false},
      {{"deepseek-llm"},
       {"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$", kCjkRuns, "\\p{N}+"},
       false},
      {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjkRuns, "\\p{N}"}, false},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}, false},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {"\\p{N}", kGpt2},
       false},
  };
  return specs;
}

const PreSpec* find_spec(std::string_view pre) {
  for (const PreSpec& spec : pre_specs()) {
    for (const char* name : spec.names) {
      if (name != nullptr && pre == name) return &spec;
    }
  }
  return nullptr;
}

}  // namespace

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

std::vector<std::string> PreTokenizer::regexes_for(std::string_view pre) {
  const PreSpec* spec = find_spec(pre);
  return spec ? spec->regexes : std::vector<std::string>{};
}

Result<PreTokenizer> PreTokenizer::from_regexes(const std::vector<std::string>& regexes) {
  PreTokenizer pt;
  for (const std::string& src : regexes) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(src.data()), src.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return make_error(ErrorKind::kInternal, "pre-tokenizer regex '" + src + "' does not compile at offset " +
                                                  std::to_string(err_offset) + ": " +
                                                  reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; interpretation still works
    auto compiled = std::make_shared<Compiled>();
    compiled->code = code;
    pt.regexes_.push_back(std::move(compiled));
  }
  return pt;
}

Result<PreTokenizer> PreTokenizer::for_name(std::string_view pre) {
  const PreSpec* spec = find_spec(pre);
  if (spec == nullptr) {
    return make_error(ErrorKind::kUnsupported, "tokenizer.ggml.pre '" + std::string(pre) +
                                                   "' is not a known BPE pre-tokenizer");
  }
  HEARTH_ASSIGN(PreTokenizer pt, from_regexes(spec->regexes));
  pt.ignore_merges_ = spec->ignore_merges;
  return pt;
}

std::vector<std::pair<size_t, size_t>> PreTokenizer::split(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> pieces;
  if (text.empty()) return pieces;
  pieces.emplace_back(0, text.size());
  std::vector<std::pair<size_t, size_t>> next;
  for (const auto& regex : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex->code, nullptr);
    next.clear();
    for (const auto& [start, len] : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + start);
      size_t pos = 0;     // start of the text not yet emitted
      size_t search = 0;  // where the next match attempt begins
      while (search < len) {
        const int rc = pcre2_match(regex->code, subject, len, search, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc < 0) break;  // no further match (or a matching error: keep the rest whole)
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t m_start = ov[0], m_end = ov[1];
        if (m_end <= m_start) {
          // An empty match splits nothing: retry one character further on.
          search = m_start + 1;
          while (search < len && (static_cast<uint8_t>(text[start + search]) & 0xC0) == 0x80) ++search;
          continue;
        }
        if (m_start > pos) next.emplace_back(start + pos, m_start - pos);
        next.emplace_back(start + m_start, m_end - m_start);
        pos = search = m_end;
      }
      if (pos < len) next.emplace_back(start + pos, len - pos);
    }
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace hearth
