// Line sources for the REPL: libedit on a terminal, or a stream (see line_reader.h).
#include "cli/line_reader.h"

#include <histedit.h>
#include <stdio.h>
#include <sys/stat.h>

#include <clocale>
#include <cstdlib>
#include <cstdio>
#include <istream>
#include <ostream>

namespace hearth::cli {
namespace {

class EditLineReader : public LineReader {
 public:
  explicit EditLineReader(std::string history_path) : history_path_(std::move(history_path)) {
    std::setlocale(LC_CTYPE, "");  // UTF-8 input
    history_ = history_init();
    HistEvent ev;
    history(history_, &ev, H_SETSIZE, 1000);
    history(history_, &ev, H_SETUNIQUE, 1);
    if (!history_path_.empty()) history(history_, &ev, H_LOAD, history_path_.c_str());
    el_ = el_init("hearth", stdin, stdout, stderr);
    el_set(el_, EL_CLIENTDATA, this);
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_SIGNAL, 1);
    el_set(el_, EL_PROMPT, &EditLineReader::prompt_text);
    el_set(el_, EL_HIST, history, history_);
    // Ctrl-C is a key while editing (no SIGINT), bound to end the line as "interrupted".
    el_set(el_, EL_SETTY, "-d", "-isig", nullptr);
    // The wide form: the narrow one copies name and help into wide strings el_end never frees.
    el_wset(el_, EL_ADDFN, L"hearth-interrupt", L"abandon the line", &EditLineReader::on_interrupt);
    el_set(el_, EL_BIND, "^C", "hearth-interrupt", nullptr);
    // Ctrl-W and Ctrl-U delete the word / the text before the cursor, as the /? shortcuts say.
    el_set(el_, EL_BIND, "^W", "ed-delete-prev-word", nullptr);
    el_set(el_, EL_BIND, "^U", "vi-kill-line-prev", nullptr);
  }
  ~EditLineReader() override {
    el_end(el_);
    history_end(history_);
  }

  ReadResult read(const std::string& prompt) override {
    prompt_ = prompt;
    interrupted_ = false;
    int count = 0;
    const char* text = el_gets(el_, &count);
    ReadResult r;
    if (text == nullptr || count <= 0) {
      if (!interrupted_) {
        std::fputc('\n', stdout);
        return r;  // Ctrl-D on an empty line, or the terminal went away
      }
      text = "";
    }
    if (interrupted_) std::fputs("^C\n", stdout);  // the key ended the line without echoing it
    r.line = text;
    while (!r.line.empty() && (r.line.back() == '\n' || r.line.back() == '\r')) r.line.pop_back();
    r.status = interrupted_ ? ReadStatus::kInterrupted : ReadStatus::kLine;
    return r;
  }

  void remember(const std::string& line) override {
    if (!history_on_ || line.empty()) return;
    HistEvent ev;
    history(history_, &ev, H_ENTER, line.c_str());
    if (history_path_.empty()) return;
    // Atomic: a temporary file beside the history, then rename; private to the user.
    const std::string tmp = history_path_ + ".tmp";
    if (history(history_, &ev, H_SAVE, tmp.c_str()) >= 0) {
      ::chmod(tmp.c_str(), 0600);
      std::rename(tmp.c_str(), history_path_.c_str());
    }
  }

  void set_history(bool on) override { history_on_ = on; }

 private:
  static char* prompt_text(EditLine* el) {
    void* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    return const_cast<char*>(static_cast<EditLineReader*>(self)->prompt_.c_str());
  }
  static unsigned char on_interrupt(EditLine* el, int) {
    void* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    static_cast<EditLineReader*>(self)->interrupted_ = true;
    return CC_NEWLINE;
  }

  std::string history_path_;
  History* history_ = nullptr;
  EditLine* el_ = nullptr;
  std::string prompt_;
  bool interrupted_ = false;
  bool history_on_ = true;
};

class StreamLineReader : public LineReader {
 public:
  StreamLineReader(std::istream& in, std::ostream& echo) : in_(in), echo_(echo) {}
  ReadResult read(const std::string& prompt) override {
    echo_ << prompt;
    ReadResult r;
    if (!std::getline(in_, r.line)) return r;
    if (!r.line.empty() && r.line.back() == '\r') r.line.pop_back();
    r.status = r.line == "\x03" ? ReadStatus::kInterrupted : ReadStatus::kLine;
    if (r.status == ReadStatus::kInterrupted) r.line.clear();
    return r;
  }
  void remember(const std::string&) override {}
  void set_history(bool) override {}

 private:
  std::istream& in_;
  std::ostream& echo_;
};

}  // namespace

std::string default_history_path() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return "";
  const std::string dir = std::string(home) + "/.hearth";
  ::mkdir(dir.c_str(), 0700);
  return dir + "/history";
}

std::unique_ptr<LineReader> make_terminal_line_reader(const std::string& history_path) {
  return std::make_unique<EditLineReader>(history_path);
}

std::unique_ptr<LineReader> make_stream_line_reader(std::istream& in, std::ostream& echo_prompt_to) {
  return std::make_unique<StreamLineReader>(in, echo_prompt_to);
}

}  // namespace hearth::cli
