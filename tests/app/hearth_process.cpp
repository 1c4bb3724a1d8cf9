// Running the hearth executable from tests (see hearth_process.h).
#include "app/hearth_process.h"

#include <sys/wait.h>

#include <cstdio>

#include "common/test_paths.h"
#include "util/file_io.h"

namespace hearth::test {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

HearthRun run_hearth(const std::string& args, const std::string* stdin_text) {
  const std::string dir = make_temp_dir();
  std::string cmd = shell_quote(HEARTH_EXE) + " " + args + " 2>" + shell_quote(dir + "/stderr.txt");
  if (stdin_text != nullptr) {
    (void)write_file_atomic(dir + "/stdin.txt", *stdin_text);
    cmd += " <" + shell_quote(dir + "/stdin.txt");
  } else {
    cmd += " </dev/null";
  }
  HearthRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  auto err = read_file(dir + "/stderr.txt");
  if (err.ok()) r.err = *err;
  return r;
}

}  // namespace hearth::test
