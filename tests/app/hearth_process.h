// Runs the built `hearth` executable with arguments (and optional stdin text) the way a user's
// shell would, capturing stdout, stderr and the exit status, for the CLI tests.
#pragma once

#include <string>

namespace hearth::test {

struct HearthRun {
  int status = -1;
  std::string out;
  std::string err;
};

std::string shell_quote(const std::string& s);
// `args` is appended to the command line as is (quote each word with shell_quote).
HearthRun run_hearth(const std::string& args, const std::string* stdin_text = nullptr);

}  // namespace hearth::test
