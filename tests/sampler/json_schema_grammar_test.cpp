// JSON Schema → GBNF: each schema's grammar, through the real compiler and matcher, accepts
// hand-written JSON texts the schema allows and rejects ones it does not; unsupported keywords
// and malformed schemas are errors that name the keyword and the place.
#include <gtest/gtest.h>

#include <string>

#include "sampler/grammar/grammar_matcher.h"
#include "sampler/grammar/json_schema_grammar.h"

namespace hearth::sampler {
namespace {

using Json = nlohmann::ordered_json;

class SchemaMatcher {
 public:
  explicit SchemaMatcher(const std::string& schema_text) {
    auto gbnf = json_schema_to_gbnf(Json::parse(schema_text));
    EXPECT_TRUE(gbnf.ok()) << gbnf.error().message;
    if (!gbnf.ok()) return;
    gbnf_ = *gbnf;
    auto g = compile_gbnf(gbnf_);
    EXPECT_TRUE(g.ok()) << g.error().message << "\n" << gbnf_;
    if (g.ok()) grammar_ = *g;
  }
  // The whole text is accepted and complete.
  bool accepts(const std::string& text) const {
    if (!grammar_) return false;
    GrammarMatcher m(grammar_);
    return m.accept_bytes(text) && m.is_complete();
  }
  // Accepted as a prefix that may still be completed.
  bool accepts_prefix(const std::string& text) const {
    if (!grammar_) return false;
    GrammarMatcher m(grammar_);
    return m.accept_bytes(text);
  }
  const std::string& gbnf() const { return gbnf_; }

 private:
  std::string gbnf_;
  std::shared_ptr<const CompiledGrammar> grammar_;
};

Error schema_error(const std::string& schema_text) {
  auto gbnf = json_schema_to_gbnf(Json::parse(schema_text));
  EXPECT_FALSE(gbnf.ok()) << "expected an error, got:\n" << (gbnf.ok() ? *gbnf : "");
  return gbnf.ok() ? Error{} : gbnf.error();
}

TEST(JsonSchemaGrammar, AnyJsonObject) {
  auto g = compile_gbnf(json_object_gbnf());
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto accepts = [&](const std::string& text) {
    GrammarMatcher m(*g);
    return m.accept_bytes(text) && m.is_complete();
  };
  EXPECT_TRUE(accepts("{}"));
  EXPECT_TRUE(accepts(R"({"a": [1, -2.5e3, true, null, "x\"y\u00e9"], "b": {"c": {}}})"));
  EXPECT_TRUE(accepts("{\n  \"a\": 1\n}"));
  EXPECT_FALSE(accepts("[1]"));          // the top level is an object
  EXPECT_FALSE(accepts("\"text\""));
  EXPECT_FALSE(accepts("{\"a\": 01}"));  // no leading zeros
  EXPECT_FALSE(accepts("{\"a\": 1,}"));  // no trailing comma
  EXPECT_FALSE(accepts("{\"a\": \"\x01\"}"));  // control characters must be escaped
  EXPECT_FALSE(accepts("{} "));          // nothing after the value
  // Whitespace is bounded: a newline and up to 20 indentation characters, not more.
  EXPECT_TRUE(accepts("{\n" + std::string(20, ' ') + "\"a\": 1}"));
  EXPECT_FALSE(accepts("{\n" + std::string(21, ' ') + "\"a\": 1}"));
  EXPECT_FALSE(accepts("{  \"a\": 1}"));
  // Numbers are bounded too (16 integer digits).
  EXPECT_TRUE(accepts("{\"a\": " + std::string(16, '9') + "}"));
  EXPECT_FALSE(accepts("{\"a\": " + std::string(17, '9') + "}"));
}

TEST(JsonSchemaGrammar, ObjectPropertiesRequiredAndOrder) {
  SchemaMatcher m(R"({"type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "ok": {"type": "boolean"}},
    "required": ["name", "ok"]})");
  EXPECT_TRUE(m.accepts(R"({"name": "Ann", "age": 31, "ok": true})"));
  EXPECT_TRUE(m.accepts(R"({"name":"Ann","ok":false})"));  // optional age left out
  EXPECT_TRUE(m.accepts("{\n  \"name\": \"Ann\",\n  \"ok\": true\n}"));
  EXPECT_FALSE(m.accepts(R"({"name": "Ann"})"));            // ok is required
  EXPECT_FALSE(m.accepts(R"({"ok": true})"));
  EXPECT_FALSE(m.accepts(R"({"name": "Ann", "age": 3.5, "ok": true})"));  // integer
  EXPECT_FALSE(m.accepts(R"({"name": 7, "ok": true})"));
  EXPECT_FALSE(m.accepts(R"({"name": "Ann", "ok": true, "x": 1})"));  // no extra keys
  EXPECT_FALSE(m.accepts(R"({"ok": true, "name": "Ann"})"));  // the schema's order
}

TEST(JsonSchemaGrammar, AllOptionalPropertiesAndCommas) {
  SchemaMatcher m(R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}})");
  for (const char* ok : {"{}", R"({"a": 1})", R"({"b": 2})", R"({"c": 3})", R"({"a": 1, "c": 3})",
                         R"({"b": 2, "c": 3})", R"({"a": 1, "b": 2, "c": 3})"}) {
    EXPECT_TRUE(m.accepts(ok)) << ok;
  }
  for (const char* bad : {R"({, "a": 1})", R"({"a": 1,})", R"({"a": 1 "b": 2})", R"({"a": 1, "a": 1})"}) {
    EXPECT_FALSE(m.accepts(bad)) << bad;
  }
}

TEST(JsonSchemaGrammar, AdditionalProperties) {
  SchemaMatcher open(R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                         "additionalProperties": true})");
  EXPECT_TRUE(open.accepts(R"({"id": 1, "x": [1, 2], "y": "z"})"));
  EXPECT_TRUE(open.accepts(R"({"id": 1})"));
  EXPECT_FALSE(open.accepts(R"({"x": 1})"));

  SchemaMatcher typed(R"({"type": "object", "additionalProperties": {"type": "number"}})");
  EXPECT_TRUE(typed.accepts(R"({"a": 1, "b": 2.5})"));
  EXPECT_TRUE(typed.accepts("{}"));
  EXPECT_FALSE(typed.accepts(R"({"a": "x"})"));

  SchemaMatcher closed(R"({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": false})");
  EXPECT_TRUE(closed.accepts(R"({"id": 1})"));
  EXPECT_FALSE(closed.accepts(R"({"id": 1, "x": 2})"));

  SchemaMatcher any_object(R"({"type": "object"})");
  EXPECT_TRUE(any_object.accepts(R"({"anything": {"nested": [null]}})"));
  EXPECT_FALSE(any_object.accepts("[]"));

  // Required names without a schema of their own take any value.
  SchemaMatcher required_only(R"({"required": ["x"]})");
  EXPECT_TRUE(required_only.accepts(R"({"x": [true]})"));
  EXPECT_FALSE(required_only.accepts("{}"));
}

TEST(JsonSchemaGrammar, Arrays) {
  SchemaMatcher bounded(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  EXPECT_FALSE(bounded.accepts("[]"));
  EXPECT_TRUE(bounded.accepts("[1]"));
  EXPECT_TRUE(bounded.accepts("[1, 2, 3]"));
  EXPECT_FALSE(bounded.accepts("[1, 2, 3, 4]"));
  EXPECT_FALSE(bounded.accepts("[1, \"2\"]"));

  SchemaMatcher any_items(R"({"type": "array"})");
  EXPECT_TRUE(any_items.accepts("[]"));
  EXPECT_TRUE(any_items.accepts(R"([1, "a", {"b": null}])"));

  SchemaMatcher at_least_two(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2})");
  EXPECT_FALSE(at_least_two.accepts("[true]"));
  EXPECT_TRUE(at_least_two.accepts("[true, false, true, true]"));

  SchemaMatcher tuple(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})");
  EXPECT_TRUE(tuple.accepts(R"(["a", 1])"));
  EXPECT_FALSE(tuple.accepts(R"(["a", 1, 2])"));
  EXPECT_FALSE(tuple.accepts(R"([1, "a"])"));

  SchemaMatcher tuple_rest(R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "null"}})");
  EXPECT_TRUE(tuple_rest.accepts(R"(["a", null, null])"));
  EXPECT_FALSE(tuple_rest.accepts(R"(["a", 1])"));

  SchemaMatcher empty(R"({"type": "array", "maxItems": 0})");
  EXPECT_TRUE(empty.accepts("[]"));
  EXPECT_FALSE(empty.accepts("[1]"));
}

TEST(JsonSchemaGrammar, Strings) {
  SchemaMatcher len(R"({"type": "string", "minLength": 2, "maxLength": 4})");
  EXPECT_FALSE(len.accepts(R"("a")"));
  EXPECT_TRUE(len.accepts(R"("ab")"));
  EXPECT_TRUE(len.accepts(R"("a\nbé")"));  // an escape and a 2-byte character count once
  EXPECT_FALSE(len.accepts(R"("abcde")"));

  SchemaMatcher en(R"({"type": "string", "enum": ["red", "green", "say \"hi\""]})");
  EXPECT_TRUE(en.accepts(R"("red")"));
  EXPECT_TRUE(en.accepts(R"("say \"hi\"")"));
  EXPECT_FALSE(en.accepts(R"("blue")"));
  EXPECT_FALSE(en.accepts(R"("re")"));

  SchemaMatcher c(R"({"const": "fixed"})");
  EXPECT_TRUE(c.accepts(R"("fixed")"));
  EXPECT_FALSE(c.accepts(R"("other")"));

  SchemaMatcher date(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(date.accepts(R"("2024-02-29")"));
  EXPECT_FALSE(date.accepts(R"("2024-13-01")"));
  SchemaMatcher date_time(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(date_time.accepts(R"("2024-02-29T13:45:00Z")"));
  EXPECT_TRUE(date_time.accepts(R"("2024-02-29T13:45:00.123+02:00")"));
  EXPECT_FALSE(date_time.accepts(R"("2024-02-29 13:45")"));
  SchemaMatcher uuid(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(uuid.accepts(R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(uuid.accepts(R"("123e4567")"));
  SchemaMatcher email(R"({"type": "string", "format": "email"})");  // annotation only
  EXPECT_TRUE(email.accepts(R"("anything")"));
}

TEST(JsonSchemaGrammar, SimplePatterns) {
  SchemaMatcher phone(R"({"type": "string", "pattern": "^\\d{3}-\\d{4}$"})");
  EXPECT_TRUE(phone.accepts(R"("555-1234")"));
  EXPECT_FALSE(phone.accepts(R"("555-12345")"));
  EXPECT_FALSE(phone.accepts(R"("55-1234")"));

  SchemaMatcher code(R"({"type": "string", "pattern": "^(?:[A-Z][a-z]+|x{2,3})(_[0-9a-f]+)?$"})");
  for (const char* ok : {R"("Abc")", R"("xx")", R"("xxx_0af")", R"("Zz_9")"}) EXPECT_TRUE(code.accepts(ok)) << ok;
  for (const char* bad : {R"("abc")", R"("x")", R"("xxxx")", R"("Abc_")", R"("Abc_g")"}) EXPECT_FALSE(code.accepts(bad)) << bad;

  // Unanchored: the match may sit anywhere in the string.
  SchemaMatcher contains(R"({"type": "string", "pattern": "cat"})");
  EXPECT_TRUE(contains.accepts(R"("a cat here")"));
  EXPECT_TRUE(contains.accepts(R"("cat")"));
  EXPECT_FALSE(contains.accepts(R"("dog")"));

  // Characters JSON escapes are produced escaped; a negated class never yields a bare quote.
  SchemaMatcher quoted(R"({"type": "string", "pattern": "^\"[^\"]*\"\\.$"})");
  EXPECT_TRUE(quoted.accepts(R"("\"hi\".")")) << quoted.gbnf();
  EXPECT_FALSE(quoted.accepts(R"("\"hi\"x")"));
  SchemaMatcher dot(R"({"type": "string", "pattern": "^.{2}$"})");
  EXPECT_TRUE(dot.accepts(R"("aé")"));
  EXPECT_FALSE(dot.accepts(R"("a")"));

  for (const char* unsupported : {R"(^(?=a)b$)", R"(^(a)\\1$)", R"(\\bword)", R"(^a$b)", R"(^[[:alpha:]]$)", R"(a**)", R"(\\p{L})"}) {
    Error e = schema_error(std::string(R"({"type": "string", "pattern": ")") + unsupported + "\"}");
    EXPECT_EQ(e.kind, ErrorKind::kUnsupported) << unsupported;
    EXPECT_NE(e.message.find("'pattern'"), std::string::npos) << e.message;
  }
  // Deep group nesting is refused, not a stack overflow.
  std::string deep = std::string(5000, '(') + "a" + std::string(5000, ')');
  EXPECT_EQ(schema_error(R"({"type": "string", "pattern": ")" + deep + "\"}").kind, ErrorKind::kUnsupported);
}

TEST(JsonSchemaGrammar, NumbersBooleansNullAndEnumsOfAnyJson) {
  SchemaMatcher num(R"({"type": "number"})");
  for (const char* ok : {"0", "-1", "3.25", "1e5", "-2.5E-3"}) EXPECT_TRUE(num.accepts(ok)) << ok;
  for (const char* bad : {"01", "+1", ".5", "1.", "NaN", "\"1\""}) EXPECT_FALSE(num.accepts(bad)) << bad;
  SchemaMatcher count(R"({"type": "integer", "minimum": 0})");
  EXPECT_TRUE(count.accepts("42"));
  EXPECT_FALSE(count.accepts("-1"));
  EXPECT_FALSE(count.accepts("1.5"));

  SchemaMatcher b(R"({"type": "boolean"})");
  EXPECT_TRUE(b.accepts("true"));
  EXPECT_FALSE(b.accepts("1"));
  SchemaMatcher n(R"({"type": "null"})");
  EXPECT_TRUE(n.accepts("null"));
  EXPECT_FALSE(n.accepts("nul"));

  SchemaMatcher mixed(R"({"enum": [1, "two", null, [3], {"four": 4}]})");
  for (const char* ok : {"1", R"("two")", "null", "[3]", R"({"four":4})"}) EXPECT_TRUE(mixed.accepts(ok)) << ok;
  EXPECT_FALSE(mixed.accepts("2"));
}

TEST(JsonSchemaGrammar, TypeArraysAnyOfAndNullable) {
  SchemaMatcher t(R"({"type": ["string", "null"], "maxLength": 2})");
  EXPECT_TRUE(t.accepts("null"));
  EXPECT_TRUE(t.accepts(R"("ab")"));
  EXPECT_FALSE(t.accepts(R"("abc")"));
  EXPECT_FALSE(t.accepts("1"));

  SchemaMatcher any_of(R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"k": {"const": true}}, "required": ["k"]}]})");
  EXPECT_TRUE(any_of.accepts("7"));
  EXPECT_TRUE(any_of.accepts(R"({"k": true})"));
  EXPECT_FALSE(any_of.accepts(R"({"k": false})"));
  EXPECT_FALSE(any_of.accepts(R"("7")"));

  SchemaMatcher one_of(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})");
  EXPECT_TRUE(one_of.accepts("false"));
  EXPECT_TRUE(one_of.accepts("null"));

  SchemaMatcher nullable(R"({"type": "integer", "nullable": true})");
  EXPECT_TRUE(nullable.accepts("null"));
  EXPECT_TRUE(nullable.accepts("5"));
}

TEST(JsonSchemaGrammar, ReferencesIncludingRecursion) {
  SchemaMatcher defs(R"({"type": "object",
    "properties": {"home": {"$ref": "#/$defs/address"}, "work": {"$ref": "#/definitions/address"}},
    "required": ["home"],
    "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    "definitions": {"address": {"$ref": "#/$defs/address", "description": "same"}}})");
  EXPECT_TRUE(defs.accepts(R"({"home": {"city": "Oslo"}, "work": {"city": "Bergen"}})"));
  EXPECT_FALSE(defs.accepts(R"({"home": {"town": "Oslo"}})"));

  SchemaMatcher tree(R"({"$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"]}},
    "$ref": "#/$defs/node"})");
  EXPECT_TRUE(tree.accepts(R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
  EXPECT_FALSE(tree.accepts(R"({"v": 1, "kids": [{"kids": []}]})"));

  // Recursion through the root itself.
  SchemaMatcher list(R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}, "required": ["next"]})");
  EXPECT_TRUE(list.accepts(R"({"next": {"next": {"next": null}}})"));
}

TEST(JsonSchemaGrammar, AnnotationsAreIgnored) {
  SchemaMatcher m(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d",
    "type": "object", "properties": {"a": {"type": "boolean", "description": "x", "examples": [true], "default": false}},
    "required": ["a"]})");
  EXPECT_TRUE(m.accepts(R"({"a": true})"));
  SchemaMatcher empty("{}");
  EXPECT_TRUE(empty.accepts(R"([1, {"x": null}])"));
}

TEST(JsonSchemaGrammar, KeyNamesAreEscapedAndRuleNamesAreSafe) {
  SchemaMatcher m(R"({"type": "object", "properties": {"a \"q\" \\ b": {"type": "integer"}, "ünï": {"type": "integer"},
    "json": {"type": "integer"}, "ws": {"type": "integer"}}, "required": ["a \"q\" \\ b", "ünï", "json", "ws"]})");
  EXPECT_TRUE(m.accepts(R"({"a \"q\" \\ b": 1, "ünï": 2, "json": 3, "ws": 4})"));
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
  struct Case {
    const char* schema;
    const char* keyword;
    const char* where;
  };
  const Case cases[] = {
      {R"({"type": "integer", "minimum": 3})", "minimum", "#"},
      {R"({"type": "number", "maximum": 3})", "maximum", "#"},
      {R"({"type": "integer", "multipleOf": 2})", "multipleOf", "#"},
      {R"({"properties": {"s": {"type": "string", "pattern": "^(?!x)\\w+$"}}})", "pattern", "#/properties/s"},
      {R"({"not": {"type": "null"}})", "not", "#"},
      {R"({"allOf": [{"type": "object"}, {"required": ["a"]}]})", "allOf", "#"},
      {R"({"type": "object", "patternProperties": {"^x": {}}})", "patternProperties", "#"},
      {R"({"type": "object", "minProperties": 1})", "minProperties", "#"},
      {R"({"type": "array", "uniqueItems": true})", "uniqueItems", "#"},
      {R"({"type": "array", "contains": {"type": "integer"}})", "contains", "#"},
      {R"({"if": {}, "then": {}})", "if", "#"},
      {R"({"items": {"minimum": 1}})", "minimum", "#/items"},
  };
  for (const auto& c : cases) {
    Error e = schema_error(c.schema);
    EXPECT_EQ(e.kind, ErrorKind::kUnsupported) << c.schema;
    EXPECT_NE(e.message.find(std::string("'") + c.keyword + "'"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find(std::string(" at ") + c.where + " "), std::string::npos) << e.message;
  }
  EXPECT_EQ(schema_error(R"({"$ref": "https://example.com/s.json"})").kind, ErrorKind::kUnsupported);
}

TEST(JsonSchemaGrammar, MalformedSchemasAreInvalidArguments) {
  for (const char* bad : {R"("string")", "false", R"({"type": "text"})", R"({"type": 3})", R"({"enum": []})",
                          R"({"properties": []})", R"({"required": "a"})", R"({"type": "string", "maxLength": -1})",
                          R"({"type": "string", "minLength": 3, "maxLength": 2})", R"({"$ref": "#/$defs/missing"})",
                          R"({"anyOf": {}})", R"({"properties": {"a": false}, "required": ["a"]})"}) {
    Error e = schema_error(bad);
    EXPECT_EQ(e.kind, ErrorKind::kInvalidArgument) << bad << ": " << e.message;
    EXPECT_EQ(e.message.rfind("json schema: ", 0), 0u) << e.message;
  }
  // Nesting is bounded (each level is a C++ stack frame).
  std::string deep = R"({"type": "integer"})";
  for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_EQ(schema_error(deep).kind, ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace hearth::sampler
