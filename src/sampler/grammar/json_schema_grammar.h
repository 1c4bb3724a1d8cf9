// Structured output: GBNF grammars for JSON. `format: "json"` (ollama) and
// `response_format: {type: "json_object"}` (OpenAI) ask for any JSON object; a JSON Schema asks
// for a value the schema accepts. The grammars feed the same matcher as user-written GBNF.
//
// The language of a schema's grammar is a subset of the JSON texts valid against the schema,
// chosen so that a small model cannot wander forever and every output still validates:
//  - whitespace between tokens is nothing, one space, or a newline and at most 20 spaces/tabs;
//    nothing follows the top-level value (the grammar ends there, so generation stops);
//  - numbers have at most 16 integer digits, 16 fraction digits and a 3-digit exponent;
//  - object properties come in the schema's order; absent `additionalProperties` allows no
//    extra keys when `properties` is given (any keys otherwise); extra keys come last;
//  - array items absent beside prefixItems mean no further items; oneOf is treated as anyOf.
// Keywords that only annotate (title, description, examples, default, $schema, $id, $comment,
// unknown string formats, ...) are ignored; keywords that would restrict validity in ways the
// grammar does not express (not, allOf of several, if/then/else, patternProperties, minimum
// other than 0, maximum, multipleOf, uniqueItems, contains, minProperties, a pattern beyond a
// simple regex (json_schema_pattern.h), ...) are kUnsupported errors naming the keyword and where it is.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::sampler {

// GBNF for any JSON object (top level an object; values of any JSON type inside).
std::string json_object_gbnf();

// GBNF (root rule `root`) for JSON values valid against `schema` (draft 2020-12 keywords, with
// `definitions`, array-form `items` and `nullable` from older drafts / OpenAPI). Errors:
// kInvalidArgument for a malformed schema, kUnsupported for keywords the grammar cannot honour;
// messages start "json schema: " and give the place as a JSON pointer ("#/properties/age").
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);

}  // namespace hearth::sampler
