// The REPL of `hearth run` (see repl.h).
#include "cli/repl.h"

#include <cctype>
#include <ostream>
#include <sstream>
#include <vector>

#include "cli/human_format.h"
#include "cli/model_actions.h"
#include "cli/multiline_input.h"
#include "cli/show_format.h"
#include "store/model_parameters.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

const char* const kHelp =
    "Available Commands:\n"
    "  /set            Set session variables\n"
    "  /show           Show model information\n"
    "  /load <model>   Load a session or model\n"
    "  /save <model>   Save your current session\n"
    "  /clear          Clear session context\n"
    "  /bye            Exit\n"
    "  /?, /help       Help for a command\n"
    "  /? shortcuts    Help for keyboard shortcuts\n"
    "\n"
    "Use \"\"\" to begin a multi-line message.\n\n";

const char* const kSetHelp =
    "Available Commands:\n"
    "  /set parameter ...     Set a parameter\n"
    "  /set system <string>   Set system message\n"
    "  /set history           Enable history\n"
    "  /set nohistory         Disable history\n"
    "  /set wordwrap          Enable wordwrap\n"
    "  /set nowordwrap        Disable wordwrap\n"
    "  /set format json       Enable JSON mode\n"
    "  /set noformat          Disable formatting\n"
    "  /set verbose           Show LLM stats\n"
    "  /set quiet             Disable LLM stats\n"
    "  /set think [level]     Enable thinking (level: high, medium, low)\n"
    "  /set nothink           Disable thinking\n"
    "\n"
    "Parameters:\n"
    "  /set parameter seed <int>             Random number seed\n"
    "  /set parameter num_predict <int>      Max number of tokens to predict\n"
    "  /set parameter top_k <int>            Pick from top k num of tokens\n"
    "  /set parameter top_p <float>          Pick token based on sum of probabilities\n"
    "  /set parameter min_p <float>          Pick token based on top token probability * min_p\n"
    "  /set parameter num_ctx <int>          Set the context size\n"
    "  /set parameter temperature <float>    Set creativity level\n"
    "  /set parameter repeat_penalty <float> How strongly to penalize repetitions\n"
    "  /set parameter repeat_last_n <int>    Set how far back to look for repetitions\n"
    "  /set parameter stop <string> ...      Set the stop parameters\n\n";

const char* const kShowHelp =
    "Available Commands:\n"
    "  /show info         Show details for this model\n"
    "  /show license      Show model license\n"
    "  /show modelfile    Show Modelfile for this model\n"
    "  /show parameters   Show parameters for this model\n"
    "  /show system       Show system message\n"
    "  /show template     Show prompt template\n\n";

const char* const kShortcutsHelp =
    "Available keyboard shortcuts:\n"
    "  Ctrl + a            Move to the beginning of the line (Home)\n"
    "  Ctrl + e            Move to the end of the line (End)\n"
    "  Alt + b             Move back (left) one word\n"
    "  Alt + f             Move forward (right) one word\n"
    "  Ctrl + k            Delete the sentence after the cursor\n"
    "  Ctrl + u            Delete the sentence before the cursor\n"
    "  Ctrl + w            Delete the word before the cursor\n"
    "\n"
    "  Ctrl + l            Clear the screen\n"
    "  Ctrl + c            Stop the model from responding\n"
    "  Ctrl + d            Exit (/bye)\n\n";

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string field(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

class Repl {
 public:
  Repl(OllamaClient& client, SessionOptions& options, LineReader& reader, Console& console)
      : client_(client), o_(options), reader_(reader), c_(console) {}

  int run() {
    MultilineAssembler multiline;
    for (;;) {
      ReadResult r = reader_.read(multiline.open() ? "... " : ">>> ");
      if (r.status == ReadStatus::kEof) return 0;
      if (r.status == ReadStatus::kInterrupted) {
        if (r.line.empty() && !multiline.open()) c_.out << "Use Ctrl + d or /bye to exit.\n";
        multiline.reset();
        continue;
      }
      auto input = multiline.feed(r.line);
      if (!input) continue;
      reader_.remember(*input);
      const std::string line = *input;
      if (line.rfind('/', 0) == 0) {
        if (!command(line)) return 0;
        continue;
      }
      if (words_of(line).empty()) continue;
      turn(line);
    }
  }

 private:
  // False when the user leaves.
  bool command(const std::string& line) {
    const auto w = words_of(line);
    const std::string& name = w[0];
    if (name == "/bye" || name == "/exit") return false;
    if (name == "/clear") {
      messages_.clear();
      c_.out << "Cleared session context\n";
    } else if (name == "/?" || name == "/help") {
      const std::string topic = w.size() > 1 ? w[1] : "";
      c_.out << (topic == "set" || topic == "/set" ? kSetHelp
                 : topic == "show" || topic == "/show" ? kShowHelp
                 : topic == "shortcuts" || topic == "shortcut" ? kShortcutsHelp
                 : kHelp);
    } else if (name == "/set") {
      set(line, w);
    } else if (name == "/show") {
      show(w);
    } else if (name == "/load" && w.size() == 2) {
      load(w[1]);
    } else if (name == "/save" && w.size() == 2) {
      save(w[1]);
    } else if (name == "/load" || name == "/save") {
      c_.out << "Usage:\n  " << name << " <modelname>\n";
    } else {
      c_.out << "Unknown command '" << name << "'. Type /? for help\n";
    }
    return true;
  }

  void set(const std::string& line, const std::vector<std::string>& w) {
    if (w.size() < 2) {
      c_.out << kSetHelp;
      return;
    }
    const std::string& what = w[1];
    if (what == "parameter") {
      if (w.size() < 4) {
        c_.out << "Usage: /set parameter <name> <value>\n";
        return;
      }
      Json params = o_.parameters;
      std::string name = w[2];  // parameter names are matched in lower case, as a PARAMETER line's are
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const store::ParameterSpec* spec = store::find_parameter(name);
      const bool is_list = spec != nullptr && spec->type == store::ParameterType::kStringList;
      if (is_list) params.erase(name);
      std::string shown;
      for (size_t i = 3; i < w.size(); ++i) {
        if (!is_list && i > 3) break;
        auto value = store::parse_parameter_value(name, w[i]);
        if (!value.ok()) {
          c_.out << "Couldn't set parameter: " << value.error().message << "\n";
          return;
        }
        store::add_parameter(params, name, *value);
        shown += (shown.empty() ? "" : ", ") + w[i];
      }
      o_.parameters = params;
      c_.out << "Set parameter '" << w[2] << "' to '" << shown << "'\n";
    } else if (what == "system") {
      const size_t at = line.find("system") + 6;
      std::string text = line.substr(at);
      text.erase(0, text.find_first_not_of(" \t"));
      o_.system = text;
      c_.out << "Set system message.\n";
    } else if (what == "format" && w.size() == 3 && w[2] == "json") {
      o_.format = "json";
      c_.out << "Set format to 'json' mode.\n";
    } else if (what == "noformat") {
      o_.format.clear();
      c_.out << "Disabled format.\n";
    } else if (what == "verbose" || what == "quiet") {
      o_.verbose = what == "verbose";
      c_.out << "Set '" << what << "' mode.\n";
    } else if (what == "think") {
      if (w.size() == 3 && w[2] != "high" && w[2] != "medium" && w[2] != "low") {
        c_.out << "Invalid think level '" << w[2] << "'; use high, medium or low.\n";
        return;
      }
      o_.think = w.size() == 3 ? Json(w[2]) : Json(true);
      c_.out << "Set 'think' mode" << (w.size() == 3 ? " to '" + w[2] + "'" : "") << ".\n";
    } else if (what == "nothink") {
      o_.think = false;
      c_.out << "Set 'nothink' mode.\n";
    } else if (what == "wordwrap" || what == "nowordwrap") {
      o_.word_wrap = what == "wordwrap";
      c_.out << "Set '" << what << "' mode.\n";
    } else if (what == "history" || what == "nohistory") {
      reader_.set_history(what == "history");
      c_.out << "Set '" << what << "' mode.\n";
    } else {
      c_.out << "Unknown command '/set " << what << "'. Type /? for help\n";
    }
  }

  void show(const std::vector<std::string>& w) {
    if (w.size() != 2) {
      c_.out << kShowHelp;
      return;
    }
    auto shown = show_model(client_, o_.model);
    if (!shown.ok()) {
      c_.out << "error: couldn't get model: " << shown.error().message << "\n";
      return;
    }
    const Json& s = *shown;
    const std::string& what = w[1];
    auto text_or = [&](const std::string& text, const char* none) { c_.out << (text.empty() ? std::string(none) + "\n" : text + "\n"); };
    if (what == "info") {
      c_.out << format_show_summary(s);
    } else if (what == "license") {
      text_or(field(s, "license"), "No license was specified for this model.");
    } else if (what == "modelfile") {
      c_.out << field(s, "modelfile") << "\n";
    } else if (what == "parameters") {
      const std::string model_params = field(s, "parameters");
      if (model_params.empty()) {
        c_.out << "No additional parameters were specified for this model.\n";
      } else {
        c_.out << "Model defined parameters:\n" << format_parameter_lines(model_params, "");
      }
      if (!o_.parameters.empty()) {
        c_.out << "\nUser defined parameters:\n";
        for (const auto& [k, v] : o_.parameters.items()) {
          if (v.is_array()) {
            for (const auto& item : v) c_.out << k << " " << (item.is_string() ? item.get<std::string>() : item.dump()) << "\n";
          } else {
            c_.out << k << " " << v.dump() << "\n";
          }
        }
      }
    } else if (what == "system") {
      text_or(o_.system.empty() ? field(s, "system") : o_.system, "No system message was specified for this model.");
    } else if (what == "template") {
      text_or(field(s, "template"), "No prompt template was specified for this model.");
    } else {
      c_.out << "Unknown command '/show " << what << "'. Type /? for help\n";
    }
  }

  void load(const std::string& model) {
    c_.out << "Loading model '" << model << "'\n";
    auto shown = ensure_model(client_, model, o_.insecure, c_);
    SessionOptions next = o_;
    next.model = model;
    Status loaded = shown.ok() ? preload_model(client_, next) : Status(shown.error());
    if (!loaded.ok()) {
      c_.out << "error: " << loaded.error().message << "\n";
      return;
    }
    o_.model = model;
    messages_.clear();
  }

  void save(const std::string& name) {
    Json body = {{"model", name}, {"from", o_.model}, {"stream", true}};
    if (!o_.parameters.empty()) body["parameters"] = o_.parameters;
    if (!o_.system.empty()) body["system"] = o_.system;
    if (!messages_.empty()) body["messages"] = messages_;
    Status st = stream_progress(client_, "/api/create", body, c_);
    if (!st.ok()) {
      c_.out << "error: " << st.error().message << "\n";
      return;
    }
    c_.out << "Created new model '" << name << "'\n";
  }

  void turn(const std::string& text) {
    Json body = session_request(o_);
    Json messages = Json::array();
    if (!o_.system.empty()) messages.push_back(Json{{"role", "system"}, {"content", o_.system}});
    for (const auto& m : messages_) messages.push_back(m);
    messages.push_back(Json{{"role", "user"}, {"content", text}});
    body["messages"] = messages;
    refresh_console_width(c_);
    auto reply = stream_reply(client_, "/api/chat", body, o_, c_);
    if (!reply.ok()) {
      c_.out << "Error: " << reply.error().message << "\n";
      return;
    }
    if (reply->interrupted) {
      c_.out << "\n";  // the partial reply and its question leave the conversation
      return;
    }
    messages_.push_back(Json{{"role", "user"}, {"content", text}});
    Json answer = {{"role", "assistant"}, {"content", reply->content}};
    if (!reply->thinking.empty()) answer["thinking"] = reply->thinking;
    messages_.push_back(answer);
    c_.out << "\n\n";
    c_.out.flush();
    if (o_.verbose) c_.err << format_metrics(reply->stats) << "\n";
  }

  OllamaClient& client_;
  SessionOptions& o_;
  LineReader& reader_;
  Console& c_;
  Json messages_ = Json::array();  // the conversation (user and assistant turns)
};

}  // namespace

int run_repl(OllamaClient& client, SessionOptions& options, LineReader& reader, Console& console) {
  return Repl(client, options, reader, console).run();
}

}  // namespace hearth::cli
