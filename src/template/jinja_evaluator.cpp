// Walks the syntax tree and writes the rendered text: statements (if/for/set/macro/call/filter),
// expression evaluation, Jinja scoping (loops and macros get their own frames), the `loop`
// object, HF's global functions, and the step/recursion/output limits.
#include <cstring>
#include <map>
#include <unordered_map>

#include "template/jinja_ast.h"
#include "template/jinja_builtins.h"
#include "template/jinja_heap.h"
#include "template/jinja_lexer.h"
#include "template/jinja_ops.h"
#include "template/jinja_template.h"

namespace hearth::jinja {
namespace {

struct Frame {
  std::map<std::string, Value> vars;
  Frame* parent = nullptr;
  uint64_t id = 0;  // set while registered as live (frames a macro may capture)
};

enum class Flow { kNormal, kBreak, kContinue };

class Evaluator {
 public:
  explicit Evaluator(const RenderOptions& options) : options_(options) {}

  std::string render(const Body& body, const nlohmann::ordered_json& context) {
    LiveFrame live_root(this, &root_);
    install_globals();
    if (context.is_object()) {
      for (auto it = context.begin(); it != context.end(); ++it) root_.vars[it.key()] = Value::from_json(it.value());
    }
    std::string out;
    out_ = &out;
    exec_body(body, &root_);
    return out;
  }

 private:
  // Registers a frame that macros defined in it may capture. A macro value can outlive the
  // frame (stored in a namespace and called after its loop ended); it then finds its frame
  // gone from the live set and reports an error instead of touching freed memory.
  class LiveFrame {
   public:
    LiveFrame(Evaluator* e, Frame* f) : e_(e), f_(f) {
      f_->id = ++e_->next_frame_id_;
      e_->live_frames_[f_->id] = f_;
    }
    ~LiveFrame() { e_->live_frames_.erase(f_->id); }
    LiveFrame(const LiveFrame&) = delete;
    LiveFrame& operator=(const LiveFrame&) = delete;

   private:
    Evaluator* e_;
    Frame* f_;
  };

  void step(int line) {
    if (++steps_ > options_.max_steps) throw_error(line, "template exceeded its step limit (infinite loop?)");
  }

  void write(const std::string& s, int line) {
    if (out_->size() + s.size() > options_.max_output_bytes) throw_error(line, "rendered output exceeds the size limit");
    out_->append(s);
  }

  Value lookup(const std::string& name, Frame* frame) {
    for (Frame* f = frame; f; f = f->parent) {
      auto it = f->vars.find(name);
      if (it != f->vars.end()) return it->second;
    }
    return Value::undefined(name);
  }

  void install_globals() {
    root_.vars["range"] = Value::function("range", [](CallArgs& a) {
      auto arg = [&](size_t i) {
        const Value& v = a.positional[i];
        if (!v.is_int() && !v.is_bool()) throw_error(a.line, "range: arguments must be integers");
        return v.as_int();
      };
      int64_t start = 0, stop = 0, step = 1;
      if (a.positional.size() == 1) stop = arg(0);
      else if (a.positional.size() == 2 || a.positional.size() == 3) {
        start = arg(0);
        stop = arg(1);
        if (a.positional.size() == 3) step = arg(2);
      } else {
        throw_error(a.line, "range expects 1 to 3 arguments");
      }
      if (step == 0) throw_error(a.line, "range: step must not be zero");
      ValueList out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (static_cast<int64_t>(out.size()) >= kMaxSequenceItems) throw_error(a.line, "range too large");
        out.emplace_back(i);
      }
      return Value::list(std::move(out));
    });
    root_.vars["dict"] = Value::function("dict", [](CallArgs& a) {
      ValueDict d;
      if (!a.positional.empty()) {
        if (!a.positional[0].is_dict()) throw_error(a.line, "dict() expects a mapping");
        d.entries = a.positional[0].entries().entries;
      }
      for (auto& [k, v] : a.keyword) d.set(k, v);
      return Value::dict(std::move(d));
    });
    root_.vars["namespace"] = Value::function("namespace", [](CallArgs& a) {
      ValueDict d;
      d.is_namespace = true;
      if (!a.positional.empty() && a.positional[0].is_dict()) d.entries = a.positional[0].entries().entries;
      for (auto& [k, v] : a.keyword) d.set(k, v);
      return Value::dict(std::move(d));
    });
    root_.vars["raise_exception"] = Value::function("raise_exception", [](CallArgs& a) -> Value {
      throw_error(a.line, a.get(0, "message").to_display());
    });
    const RenderOptions* options = &options_;
    root_.vars["strftime_now"] = Value::function("strftime_now", [options](CallArgs& a) {
      std::string fmt = a.get(0, "format").to_display();
      if (fmt.size() > 256) throw_error(a.line, "strftime_now: format too long");
      std::tm tm{};
      if (options->now) {
        tm = *options->now;
      } else {
        std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
      }
      char buf[1024];
      size_t n = fmt.empty() ? 0 : std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
      return Value(std::string(buf, n));
    });
  }

  // ---- statements ----

  Flow exec_body(const Body& body, Frame* frame) {
    for (const auto& s : body) {
      Flow f = exec(*s, frame);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s, Frame* frame) {
    step(s.line);
    switch (s.kind) {
      case StmtKind::kText: write(s.text, s.line); return Flow::kNormal;
      case StmtKind::kOutput: {
        // {{ none }} prints nothing, as in the reference engine (a content-less tool-call turn
        // printing `message.content` must not write "None" into the prompt).
        Value v = eval(*s.expr, frame);
        if (!v.is_none()) write(v.to_display(), s.line);
        return Flow::kNormal;
      }
      case StmtKind::kIf:
        for (const auto& [cond, body] : s.branches) {
          if (eval(*cond, frame).truthy()) return exec_body(body, frame);
        }
        return exec_body(s.else_body, frame);
      case StmtKind::kFor: exec_for(s, frame); return Flow::kNormal;
      case StmtKind::kSet: assign(*s.target, eval(*s.expr, frame), frame); return Flow::kNormal;
      case StmtKind::kSetBlock: {
        std::string text = capture(s.body, frame);
        Value v(text);
        if (s.expr2) {
          Frame tmp{{}, frame};
          tmp.vars["__set_body__"] = v;
          v = eval(*s.expr2, &tmp);
        }
        frame->vars[s.names[0]] = v;
        return Flow::kNormal;
      }
      case StmtKind::kMacro: frame->vars[s.names[0]] = make_macro(s, s.body, 1, frame); return Flow::kNormal;
      case StmtKind::kCallBlock: {
        Value caller = make_macro(s, s.body, 1, frame);
        const Expr& call = *s.expr;
        CallArgs args = eval_args(call, frame);
        args.keyword.emplace_back("caller", caller);
        write(call_value(eval_callee(call, frame), args, call.line).to_display(), s.line);
        return Flow::kNormal;
      }
      case StmtKind::kFilterBlock: {
        Frame tmp{{}, frame};
        tmp.vars["__filter_body__"] = Value(capture(s.body, frame));
        write(eval(*s.expr, &tmp).to_display(), s.line);
        return Flow::kNormal;
      }
      case StmtKind::kBreak: return Flow::kBreak;
      case StmtKind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  std::string capture(const Body& body, Frame* frame) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    try {
      exec_body(body, frame);
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    return buffer;
  }

  void bind_targets(const std::vector<std::string>& names, const Value& item, Frame* frame, int line) {
    if (names.size() == 1) {
      frame->vars[names[0]] = item;
      return;
    }
    ValueList parts = iterate(item, line);
    if (parts.size() != names.size()) {
      throw_error(line, "cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(names.size()) + " names");
    }
    for (size_t i = 0; i < names.size(); ++i) frame->vars[names[i]] = parts[i];
  }

  void exec_for(const Stmt& s, Frame* frame) {
    Value iterable = eval(*s.expr, frame);
    // The reference engine (llama.cpp's minja) loops zero times over none, as over undefined.
    ValueList items = iterable.is_none() ? ValueList{} : iterate(iterable, s.line);
    Frame loop_frame{{}, frame};
    LiveFrame live(this, &loop_frame);
    if (s.expr2) {
      ValueList kept;
      for (const auto& item : items) {
        step(s.line);
        bind_targets(s.names, item, &loop_frame, s.line);
        if (eval(*s.expr2, &loop_frame).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec_body(s.else_body, frame);
      return;
    }
    int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step(s.line);
      bind_targets(s.names, items[static_cast<size_t>(i)], &loop_frame, s.line);
      ValueDict loop;
      loop.set("index", Value(i + 1));
      loop.set("index0", Value(i));
      loop.set("revindex", Value(n - i));
      loop.set("revindex0", Value(n - i - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == n - 1));
      loop.set("length", Value(n));
      loop.set("depth", Value(int64_t{1}));
      loop.set("depth0", Value(int64_t{0}));
      loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("previtem"));
      loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("nextitem"));
      loop.set("cycle", Value::function("cycle", [i](CallArgs& a) {
        if (a.positional.empty()) throw_error(a.line, "loop.cycle needs at least one argument");
        return a.positional[static_cast<size_t>(i) % a.positional.size()];
      }));
      loop_frame.vars["loop"] = Value::dict(std::move(loop));
      Flow f = exec_body(s.body, &loop_frame);
      if (f == Flow::kBreak) break;
    }
  }

  void assign(const Expr& target, const Value& v, Frame* frame) {
    if (target.kind == ExprKind::kName) {
      frame->vars[target.name] = v;
    } else if (target.kind == ExprKind::kTuple) {
      std::vector<std::string> names;
      for (const auto& e : target.args) names.push_back(e->name);
      bind_targets(names, v, frame, target.line);
    } else if (target.kind == ExprKind::kAttr) {
      Value obj = eval(*target.target, frame);
      if (!obj.is_dict() || !obj.entries().is_namespace) {
        throw_error(target.line, "cannot assign attribute '" + target.name + "' on a non-namespace object");
      }
      obj.entries().set(target.name, v);
    } else {
      throw_error(target.line, "cannot assign to this expression");
    }
  }

  // A macro (or a call block's caller) as a callable value.
  Value make_macro(const Stmt& s, const Body& body, size_t first_param, Frame* defining_frame) {
    const Stmt* stmt = &s;
    const Body* code = &body;
    uint64_t parent_id = defining_frame->id;
    return Value::function(s.names[0], [this, stmt, code, first_param, parent_id](CallArgs& a) {
      auto parent = live_frames_.find(parent_id);
      if (parent == live_frames_.end()) throw_error(a.line, "'" + stmt->names[0] + "' called after its scope ended");
      if (++call_depth_ > options_.max_call_depth) {
        --call_depth_;
        throw_error(a.line, "macro recursion too deep");
      }
      Frame frame{{}, parent->second};
      LiveFrame live(this, &frame);
      size_t nparams = stmt->names.size() - first_param;
      ValueList varargs;
      for (size_t i = 0; i < a.positional.size(); ++i) {
        if (i < nparams) frame.vars[stmt->names[first_param + i]] = a.positional[i];
        else varargs.push_back(a.positional[i]);
      }
      ValueDict kwargs;
      for (auto& [k, v] : a.keyword) {
        bool is_param = false;
        for (size_t p = first_param; p < stmt->names.size(); ++p) if (stmt->names[p] == k) is_param = true;
        if (is_param || k == "caller") frame.vars[k] = v;
        else kwargs.set(k, v);
      }
      for (size_t p = 0; p < nparams; ++p) {
        const std::string& pname = stmt->names[first_param + p];
        if (frame.vars.count(pname)) continue;
        const Expr* def = p < stmt->defaults.size() ? stmt->defaults[p].get() : nullptr;
        frame.vars[pname] = def ? eval(*def, &frame) : Value::undefined(pname);
      }
      frame.vars["varargs"] = Value::list(std::move(varargs));
      frame.vars["kwargs"] = Value::dict(std::move(kwargs));
      std::string text;
      try {
        text = capture(*code, &frame);
      } catch (...) {
        --call_depth_;
        throw;
      }
      --call_depth_;
      return Value(text);
    });
  }

  // ---- expressions ----

  CallArgs eval_args(const Expr& e, Frame* frame) {
    CallArgs args;
    args.line = e.line;
    for (const auto& a : e.args) args.positional.push_back(eval(*a, frame));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, frame));
    return args;
  }

  Value eval_callee(const Expr& call, Frame* frame) { return eval(*call.target, frame); }

  Value call_value(const Value& callee, CallArgs& args, int line) {
    step(line);
    if (callee.is_undefined()) {
      throw_error(line, callee.undefined_name().empty() ? "called an undefined value" : "'" + callee.undefined_name() + "' is undefined");
    }
    if (!callee.is_callable()) throw_error(line, std::string("'") + callee.type_name() + "' object is not callable");
    return callee.function()(args);
  }

  Value eval(const Expr& e, Frame* frame) {
    switch (e.kind) {
      case ExprKind::kLiteral: return e.value;
      case ExprKind::kName: return lookup(e.name, frame);
      case ExprKind::kList: case ExprKind::kTuple: {
        ValueList items;
        for (const auto& a : e.args) items.push_back(eval(*a, frame));
        return Value::list(std::move(items));
      }
      case ExprKind::kDict: {
        ValueDict d;
        for (size_t i = 0; i < e.args.size(); ++i) {
          Value k = eval(*e.args[i], frame);
          if (!k.is_string() && !k.is_number() && !k.is_bool() && !k.is_none()) {
            throw_error(e.line, std::string("unhashable dict key of type '") + k.type_name() + "'");
          }
          d.set(k.to_display(), eval(*e.values[i], frame));
        }
        return Value::dict(std::move(d));
      }
      case ExprKind::kAttr: return get_attr(eval(*e.target, frame), e.name, e.line);
      case ExprKind::kItem: return get_item(eval(*e.target, frame), eval(*e.args[0], frame), e.line);
      case ExprKind::kSlice: {
        Value parts[3];
        for (int i = 0; i < 3; ++i) if (e.args[i]) parts[i] = eval(*e.args[i], frame);
        return slice_value(eval(*e.target, frame), parts[0], parts[1], parts[2], e.line);
      }
      case ExprKind::kCall: {
        Value callee = eval_callee(e, frame);
        CallArgs args = eval_args(e, frame);
        return call_value(callee, args, e.line);
      }
      case ExprKind::kFilter: {
        Value v = eval(*e.target, frame);
        CallArgs args = eval_args(e, frame);
        step(e.line);
        return apply_filter(e.name, v, args);
      }
      case ExprKind::kTest: {
        Value v = eval(*e.target, frame);
        CallArgs args = eval_args(e, frame);
        bool r = apply_test(e.name, v, args);
        return Value(e.negated ? !r : r);
      }
      case ExprKind::kUnary: {
        Value v = eval(*e.args[0], frame);
        if (e.name == "not") return Value(!v.truthy());
        if (v.is_float()) return Value(e.name == "-" ? -v.as_float() : v.as_float());
        if (v.is_int() || v.is_bool()) {
          return Value(e.name == "-" ? static_cast<int64_t>(0 - static_cast<uint64_t>(v.as_int())) : v.as_int());
        }
        throw_error(e.line, std::string("bad operand type for unary ") + e.name + ": '" + v.type_name() + "'");
      }
      case ExprKind::kBinary: {
        if (e.name == "and") {
          Value a = eval(*e.args[0], frame);
          return a.truthy() ? eval(*e.args[1], frame) : a;
        }
        if (e.name == "or") {
          Value a = eval(*e.args[0], frame);
          return a.truthy() ? a : eval(*e.args[1], frame);
        }
        Value a = eval(*e.args[0], frame);
        Value b = eval(*e.args[1], frame);
        return binary_op(e.name, a, b, e.line);
      }
      case ExprKind::kTernary: {
        if (eval(*e.args[0], frame).truthy()) return eval(*e.args[1], frame);
        return e.args[2] ? eval(*e.args[2], frame) : Value::undefined();
      }
    }
    return Value::undefined();
  }

  const RenderOptions& options_;
  Frame root_;
  std::string* out_ = nullptr;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  uint64_t next_frame_id_ = 0;
  std::unordered_map<uint64_t, Frame*> live_frames_;
};

Error template_error(const std::string& name, int line, const std::string& message) {
  return make_error(ErrorKind::kInvalidArgument, name + ":" + std::to_string(line) + ": " + message);
}

}  // namespace

Result<Template> Template::parse(std::string_view source, std::string name) {
  try {
    std::vector<Token> tokens = lex_template(source, LexOptions{});
    auto body = std::make_shared<Body>(parse_tokens(tokens));
    Template t;
    t.name_ = std::move(name);
    t.body_ = std::move(body);
    return t;
  } catch (const JinjaError& e) {
    return template_error(name, e.line, e.message);
  } catch (const std::exception& e) {
    return template_error(name, 0, std::string("internal error: ") + e.what());
  }
}

Result<std::string> Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  if (!body_) return make_error(ErrorKind::kInvalidArgument, name_ + ": template was not parsed");
  try {
    ContainerArena arena;  // outlives the evaluator: what its frames leave behind is emptied last
    Evaluator evaluator(options);
    return evaluator.render(*body_, context);
  } catch (const JinjaError& e) {
    return template_error(name_, e.line, e.message);
  } catch (const std::exception& e) {
    return template_error(name_, 0, std::string("internal error: ") + e.what());
  }
}

}  // namespace hearth::jinja
