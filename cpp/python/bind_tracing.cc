// Binds tracing: graph builders, jit_scope and name_scope context managers, init_scope, and
// the cond/while node builders.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "codegen/cpu/cpu_compiler.h"
#include "kernels/kernels.h"
#include "python/bindings.h"
#include "python/convert.h"
#include "python/graph_views.h"
#include "runtime/dispatch.h"
#include "tracing/func_builder.h"

namespace jf::py_bridge {

std::string current_user_location();  // convert.cc

namespace {

// What TF's bool attr takes: bools, numpy bools and ints (anything with __index__).
bool is_bool_like(py::handle o) {
  if (PyBool_Check(o.ptr()) || PyIndex_Check(o.ptr())) return true;
  if (!py::hasattr(o, "dtype") || !py::hasattr(o, "ndim")) return false;
  return o.attr("ndim").cast<int>() == 0 && py::str(o.attr("dtype").attr("kind")).cast<std::string>() == "b";
}

// jit_scope as a C++ context manager object (TF's experimental_jit_scope semantics).
class JitScope {
 public:
  JitScope(py::object compile_ops, bool separate)
      : compile_ops_(std::move(compile_ops)), separate_(separate) {}
  void enter() {
    std::function<bool(const Node&)> fn;
    bool flag = true;
    if (PyCallable_Check(compile_ops_.ptr())) {
      py::object cb = compile_ops_;
      fn = [cb](const Node& n) {
        // NodeRef needs the owning graph; the node lives in the current trace's graph.
        TraceState* ts = current_trace();
        py::object r = cb(NodeRef{ts ? ts->graph : nullptr, const_cast<Node*>(&n)});
        if (!is_bool_like(r))
          throw_type("jit_scope: compile_ops(node_def) must return a bool, got ",
                     py::repr(r).cast<std::string>());
        int v = PyObject_IsTrue(r.ptr());
        if (v < 0) throw py::error_already_set();
        return v != 0;
      };
    } else if (is_tracing()) {  // eagerly, jit_scope_enter raises TF's RuntimeError first
      // TF stores it in a bool attr: bools and ints ('maybe' and 1.5 are TF's TypeError).
      PyObject* o = compile_ops_.ptr();
      if (o == Py_None) throw_invalid("jit_scope: compile_ops must be a bool or a callable, got None");
      if (!is_bool_like(compile_ops_))
        throw_type("jit_scope: compile_ops must be a bool or a callable taking a node_def, got ",
                   py::repr(compile_ops_).cast<std::string>(), " of type ", Py_TYPE(o)->tp_name);
      int v = PyObject_IsTrue(o);
      if (v < 0) throw py::error_already_set();
      flag = v != 0;
    }
    frames_.push_back(jit_scope_enter(flag, std::move(fn), separate_));
  }
  void exit() {
    if (frames_.empty()) return;
    jit_scope_exit(frames_.back());
    frames_.pop_back();
  }

 private:
  py::object compile_ops_;
  bool separate_;
  std::vector<JitScopeFrame> frames_;
};

class NameScope {
 public:
  explicit NameScope(std::string name) : name_(std::move(name)) {}
  std::string enter() {
    entered_ = is_tracing();
    return entered_ ? name_scope_enter(name_) + "/" : name_ + "/";
  }
  void exit() {
    if (entered_) name_scope_exit();
  }

 private:
  std::string name_;
  bool entered_ = false;
};

py::object& tape_callback() {
  static py::object* cb = new py::object();
  return *cb;
}

void tape_hook(OpId op, const std::vector<Tensor>& in, const Attrs& attrs, const std::vector<Tensor>& out) {
  py::gil_scoped_acquire gil;
  if (!tape_callback()) return;
  py::dict a;
  for (auto& kv : attrs.items()) a[py::str(kv.first)] = attr_to_py(kv.second);
  tape_callback()(op_def(op).name, in, a, out);
}

// Sets attrs on every op created inside (overriding the enclosing scope's values for these
// keys), restoring the previous attr scope on exit. Used for gradient ops
// (docs/autodiff.md, 'Gradients of compiled ops').
class AttrScope {
 public:
  AttrScope(py::dict attrs, std::vector<std::string> clear)
      : attrs_(to_attrs(attrs)), clear_(std::move(clear)) {}
  void enter() {
    TraceState* ts = current_trace();
    if (!ts) return;
    state_ = ts;
    saved_.push_back(ts->attr_scope);
    for (auto& k : clear_) ts->attr_scope.erase(k);
    for (auto& kv : attrs_.items()) ts->attr_scope[kv.first] = ScopedAttr{kv.second, nullptr};
  }
  void exit() {
    if (!state_ || saved_.empty()) return;
    state_->attr_scope = saved_.back();
    saved_.pop_back();
  }

 private:
  Attrs attrs_;
  std::vector<std::string> clear_;  // keys removed from the scope inside (e.g. jit attrs)
  TraceState* state_ = nullptr;
  std::vector<std::map<std::string, ScopedAttr>> saved_;
};

void print_hook(const std::vector<Tensor>& in, const Attrs& attrs) {
  py::gil_scoped_acquire gil;
  py::dict a;
  for (auto& kv : attrs.items()) a[py::str(kv.first)] = attr_to_py(kv.second);
  py::module_::import("jitflow.ops.printing").attr("_print_hook")(tensors_to_py(in), a);
}

const std::string* opt_name(const py::object& name, std::string& buf) {
  if (name.is_none()) return nullptr;
  buf = name.cast<std::string>();
  return &buf;
}

}  // namespace

void bind_tracing(py::module_& m) {
  set_source_location_fn(&current_user_location);
  set_print_fn(&print_hook);
  set_tape_hook(&tape_hook);
  m.def("set_tape_callback", [](py::object cb) { tape_callback() = cb; });
  m.def("tape_activate", &tape_activate);
  py::class_<AttrScope>(m, "attr_scope")
      .def(py::init<py::dict, std::vector<std::string>>(), py::arg("attrs"),
           py::arg("clear") = std::vector<std::string>())
      .def("__enter__", [](AttrScope& s) { s.enter(); })
      .def("__exit__", [](AttrScope& s, py::args) {
        s.exit();
        return false;
      });
  py::class_<FuncBuilder>(m, "FuncBuilder")
      .def(py::init<bool>(), py::arg("nested") = false)
      .def(
          "__enter__",
          [](FuncBuilder& b) {
            b.enter();
            return &b;
          },
          py::return_value_policy::reference)
      .def("__exit__", [](FuncBuilder& b, py::args) { b.exit(); })
      .def("placeholder",
           [](FuncBuilder& b, DType dt, std::vector<py::object> shape, const std::string& name) {
             Shape s;
             for (auto& d : shape) s.push_back(d.is_none() ? -1 : d.cast<int64_t>());
             return b.placeholder(dt, s, name);
           })
      .def("finish", &FuncBuilder::finish)
      .def_property_readonly("captures", &FuncBuilder::capture_values)
      .def_property_readonly("graph", [](FuncBuilder& b) { return b.state().graph; });

  py::class_<JitScope>(m, "jit_scope", R"doc(Marks the ops created inside for compilation (TF's
xla.experimental.jit_scope). compile_ops: bool, or a callable taking each op's node_def.)doc")
      .def(py::init<py::object, bool>(), py::arg("compile_ops") = true,
           py::arg("separate_compiled_gradients") = false)
      .def("__enter__",
           [](JitScope& s) {
             s.enter();
             if (is_tracing()) cpu_jit_prepare();  // the trace will compile: set the JIT up meanwhile
           })
      .def("__exit__", [](JitScope& s, py::args) {
        s.exit();
        return false;
      });

  py::class_<NameScope>(m, "name_scope")
      .def(py::init<std::string>())
      .def("__enter__", &NameScope::enter)
      .def("__exit__", [](NameScope& s, py::args) {
        s.exit();
        return false;
      });

  struct InitScope {
    std::unique_ptr<TracePause> pause;
  };
  py::class_<InitScope>(m, "init_scope", "Runs the body eagerly even while tracing (TF's init_scope).")
      .def(py::init<>())
      .def("__enter__", [](InitScope& s) { s.pause = std::make_unique<TracePause>(); })
      .def("__exit__", [](InitScope& s, py::args) {
        s.pause.reset();
        return false;
      });
  m.def("is_tracing", &is_tracing);
  // The innermost trace open on this thread (an opaque address, 0 when none), and entering it
  // on another thread: MirroredStrategy's replicas, one thread each, record into the caller's
  // trace while it waits for them, taking turns (never two threads at once).
  m.def("current_trace_address", [] { return reinterpret_cast<uintptr_t>(current_trace()); });
  m.def("enter_trace_address", [](uintptr_t a) { push_trace(reinterpret_cast<TraceState*>(a)); });
  m.def("exit_trace", [] { pop_trace(); });
  // "<file>:<line>: <source>" of the innermost caller outside jitflow, for errors raised in Python.
  m.def("user_location", &current_user_location);
  m.def("push_control_deps", [](const std::vector<Tensor>& deps) {
    TraceState* ts = current_trace();
    if (!ts) return 0;
    size_t before = ts->control_deps.size();
    for (const Tensor& t : deps) ts->control_deps.push_back(ts->capture(t).node);
    return static_cast<int>(ts->control_deps.size() - before);
  });
  // A control dependency on an op without outputs (a traced Assert), by its node.
  m.def("push_control_node", [](const NodeRef& r) {
    TraceState* ts = current_trace();
    if (!ts || r.graph != ts->graph) return 0;  // another graph's op: nothing to wait on here
    ts->control_deps.push_back(r.node);
    return 1;
  });
  m.def("pop_control_deps", [](int n) {
    TraceState* ts = current_trace();
    if (ts) ts->control_deps.resize(ts->control_deps.size() - n);
  });
  m.def("evaluate_lifted", &evaluate_lifted);
  m.def("current_graph", []() -> py::object {
    TraceState* ts = current_trace();
    return ts ? py::cast(ts->graph) : py::none();
  });
  // A traced value that knows fewer of its dims (TF's placeholder_with_default(v, shape)): an
  // Identity whose output spec is `dims` (None: unknown), for a loop whose invariant knows
  // less than its initial value. Only relaxes: a known dim must be the value's.
  m.def("relax_shape", [](const Tensor& t, std::vector<py::object> dims) {
    TraceState* ts = current_trace();
    if (!ts) throw_invalid("relax_shape: only while tracing");
    Shape relaxed;
    for (auto& d : dims) relaxed.push_back(d.is_none() ? -1 : d.cast<int64_t>());
    const Shape& s = t.shape();
    bool ok = relaxed.rank() == s.rank();
    for (int i = 0; ok && i < s.rank(); ++i) ok = relaxed[i] < 0 || relaxed[i] == s[i];
    if (!ok) throw_invalid("relax_shape: ", relaxed.str(), " is not a relaxation of ", s.str());
    std::vector<TensorSpec> specs{{t.dtype(), relaxed}};
    Node* n = ts->add_op(OpId::Identity, {t}, Attrs{}, nullptr, &specs);
    return ts->symbolic(n, 0);
  });
  m.def("make_if", [](const Tensor& pred, FuncBuilder& tb, std::shared_ptr<Graph> tg, FuncBuilder& eb,
                      std::shared_ptr<Graph> eg, py::object name) {
    std::string buf;
    return make_if(pred, tb, tg, eb, eg, opt_name(name, buf));
  });
  m.def("make_while", [](std::vector<Tensor> vars, FuncBuilder& cb, std::shared_ptr<Graph> cg,
                         FuncBuilder& bb, std::shared_ptr<Graph> bg, int64_t max_iter, py::object name,
                         std::vector<std::vector<py::object>> invariants) {
    std::string buf;
    std::vector<Shape> inv;
    for (auto& s : invariants) {
      Shape sh;
      for (auto& d : s) sh.push_back(d.is_none() ? -1 : d.cast<int64_t>());
      inv.push_back(sh);
    }
    return make_while(vars, cb, cg, bb, bg, max_iter, opt_name(name, buf), inv);
  });
}

}  // namespace jf::py_bridge
