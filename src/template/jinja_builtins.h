// Jinja's built-in filters (x | trim) and tests (x is defined), plus the Python string helpers
// they share with the str methods. Both entry points throw JinjaError on unknown names or bad
// arguments, naming the filter or test.
#pragma once

#include <string>

#include "template/jinja_value.h"

namespace hearth::jinja {

Value apply_filter(const std::string& name, const Value& value, CallArgs& args);
bool apply_test(const std::string& name, const Value& value, CallArgs& args);

std::string python_title(const std::string& s);
std::string python_capitalize(const std::string& s);
std::string ascii_case(const std::string& s, bool upper);

}  // namespace hearth::jinja
