// The REPL of `hearth run`, fed from a stream, against a real HTTP server running the
// scripted engine: /set, /show, `"""` input, /clear, Ctrl-C at the prompt, /bye, and what
// reaches the engine.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/line_reader.h"
#include "cli/repl.h"
#include "scripted_server_test.h"

namespace hearth::cli {
namespace {

class Repl : public ScriptedServerTest {
 protected:
  // Runs the REPL over `input`; returns its exit status.
  int run(const std::string& input) {
    OllamaClient client({"127.0.0.1", server_->port()}, "");
    std::istringstream in(input);
    auto reader = make_stream_line_reader(in, prompts_);
    Console console{out_, err_};
    options_.model = "scripted";
    return run_repl(client, options_, *reader, console);
  }
  std::string prompt_text(size_t i) const {
    auto records = backend_->records();
    return i < records.size() ? backend_->tokenizer().decode(records[i]->request.prompt, true) : "";
  }

  std::ostringstream out_, err_, prompts_;
  SessionOptions options_;
};

TEST_F(Repl, SetShowMultilineClearAndBye) {
  const std::string input =
      "/set parameter num_predict 3\n"
      "/set parameter seed 7\n"
      "/set parameter stop x y\n"
      "/set parameter temperature warm\n"
      "/show parameters\n"
      "\"\"\"line one\n"
      "line two\"\"\"\n"
      "/set system \"\"\"Be\n"
      "brief.\"\"\"\n"
      "/show system\n"
      "Again\n"
      "/clear\n"
      "Third\n"
      "\x03\n"
      "/nonsense\n"
      "/set verbose\n"
      "/bye\n"
      "never sent\n";
  EXPECT_EQ(run(input), 0);
  const std::string out = out_.str();
  EXPECT_NE(out.find("Set parameter 'num_predict' to '3'\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Set parameter 'stop' to 'x, y'\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Couldn't set parameter: parameter temperature: 'warm' is not a number"), std::string::npos) << out;
  EXPECT_NE(out.find("User defined parameters:\nnum_predict 3\nseed 7\nstop x\nstop y\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Set system message.\n"), std::string::npos);
  EXPECT_NE(out.find("Be\nbrief.\n"), std::string::npos);  // /show system shows the session's message
  EXPECT_NE(out.find("Cleared session context\n"), std::string::npos);
  EXPECT_NE(out.find("Use Ctrl + d or /bye to exit.\n"), std::string::npos);
  EXPECT_NE(out.find("Unknown command '/nonsense'. Type /? for help\n"), std::string::npos);
  EXPECT_NE(prompts_.str().find(">>> ... >>> "), std::string::npos);  // the continuation prompt inside """

  auto records = backend_->records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_NE(prompt_text(0).find("line one\nline two"), std::string::npos) << prompt_text(0);
  EXPECT_EQ(records[0]->request.n_predict, 3);
  EXPECT_EQ(records[0]->request.sampling.seed, 7u);
  EXPECT_NE(prompt_text(1).find("Be\nbrief."), std::string::npos);      // the system message went along
  EXPECT_NE(prompt_text(1).find("line one"), std::string::npos);        // and the history
  EXPECT_EQ(prompt_text(2).find("line one"), std::string::npos);        // cleared
  EXPECT_NE(prompt_text(2).find("Be\nbrief."), std::string::npos);      // the system message stays
  EXPECT_EQ(prompt_text(2).find("never sent"), std::string::npos);
  EXPECT_EQ(out.find("never sent"), std::string::npos);
}

TEST_F(Repl, ShowInfoAndModelErrors) {
  EXPECT_EQ(run("/show info\n/show template\n/load nosuch\nHi\n"), 0);  // end of input leaves
  const std::string out = out_.str();
  EXPECT_NE(out.find("  Model\n    architecture    llama\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  Capabilities\n    completion\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Loading model 'nosuch'\nerror: model 'nosuch' not found"), std::string::npos) << out;
  EXPECT_EQ(options_.model, "scripted");  // a failed /load keeps the model
  EXPECT_EQ(backend_->records().size(), 1u);
}

TEST_F(Repl, VerbosePrintsTimings) {
  EXPECT_EQ(run("/set verbose\nHi\n"), 0);
  EXPECT_NE(err_.str().find("eval count:"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("eval rate:"), std::string::npos);
}

}  // namespace
}  // namespace hearth::cli
