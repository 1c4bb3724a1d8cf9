// Request-field reading: malformed bodies and wrong types give messages naming the field.
#include <gtest/gtest.h>

#include "api/json_fields.h"

namespace hearth::api {
namespace {

TEST(JsonFields, ParseRejectsMalformedBodies) {
  struct Case {
    std::string body;
    std::string expect;
  };
  const Case cases[] = {
      {"", "not valid JSON"},
      {"{", "not valid JSON"},
      {"{\"a\":1,}", "not valid JSON"},
      {"[1,2]", "must be a JSON object, got array"},
      {"\"text\"", "must be a JSON object, got string"},
      {"null", "must be a JSON object, got null"},
      {std::string("{\"a\":\"\xff\xfe\"}"), "not valid JSON"},  // invalid UTF-8 inside a string
      {std::string("{\"a\":\"\xc3\"}"), "not valid JSON"},      // truncated UTF-8 sequence
      {"{\"a\":599e555}", "not valid JSON"},                          // number beyond double: out_of_range, not parse_error
      {"{\"a\":" + std::string(1000000, '[') + "}", "nests arrays and objects deeper than 128 levels"},
  };
  for (const auto& c : cases) {
    auto r = parse_json_object(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
  }
  auto ok = parse_json_object("{\"text\": \"h\\u00e9llo\"}");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["text"], "h\xc3\xa9llo");
}

TEST(JsonFields, TypedReadsNameTheField) {
  Json body = Json::parse(R"({"s": 3, "n": "x", "i": 2.5, "b": 1, "list": [1], "obj": [], "null": null,
                             "good_i": 4.0, "good_n": 7, "stop": "a"})");
  auto s = read_string(body, "s");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "'s' must be a string, got number");
  auto n = read_number(body, "n", "options.");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message, "'options.n' must be a number, got string");
  EXPECT_FALSE(read_integer(body, "i").ok());
  EXPECT_FALSE(read_bool(body, "b").ok());
  EXPECT_FALSE(read_string_list(body, "list").ok());
  EXPECT_FALSE(read_object(body, "obj").ok());

  auto absent = read_integer(body, "missing");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
  auto null_is_absent = read_string(body, "null");
  ASSERT_TRUE(null_is_absent.ok());
  EXPECT_FALSE(null_is_absent->has_value());
  auto integral_float = read_integer(body, "good_i");
  ASSERT_TRUE(integral_float.ok());
  EXPECT_EQ(**integral_float, 4);
  auto number = read_number(body, "good_n");
  ASSERT_TRUE(number.ok());
  EXPECT_EQ(**number, 7.0);
  auto stop = read_string_list(body, "stop");
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(**stop, std::vector<std::string>{"a"});
}

TEST(JsonFields, DumpReplacesInvalidUtf8) {
  Json j = {{"piece", std::string("a\xe2\x82")}};  // a partial UTF-8 sequence from one token
  EXPECT_EQ(dump_json(j), "{\"piece\":\"a\xef\xbf\xbd\"}");
}

TEST(JsonFields, RangeCheck) {
  EXPECT_TRUE(check_range("n", 3, 1, 16).ok());
  auto r = check_range("n", 0, 1, 16);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "'n' must be between 1 and 16, got 0");
}

}  // namespace
}  // namespace hearth::api
