// PLACEHOLDER test: delete when real tests exist.
#include <gtest/gtest.h>
TEST(Placeholder, Builds) { SUCCEED(); }
