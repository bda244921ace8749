// Signature keys, the concrete-function cache and output packing.
#include "python/function_cache.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/variables.h"
#include "python/convert.h"
#include "runtime/dispatch.h"
#include "runtime/placement.h"
#include "support/stats.h"
#include "tracing/trace_context.h"

namespace jf::py_bridge {

PyObject*& variable_type() {
  static PyObject* t = nullptr;  // a strong reference, never released
  return t;
}

namespace {
bool g_run_eagerly = false;

void put(std::string& k, const void* p, size_t n) { k.append(static_cast<const char*>(p), n); }
template <class T>
void put(std::string& k, T v) {
  put(k, &v, sizeof(v));
}

void put_shape(std::string& k, DType dt, int rank, const int64_t* dims) {
  put(k, static_cast<uint8_t>(dt));
  put(k, static_cast<uint8_t>(rank));
  put(k, dims, sizeof(int64_t) * rank);
}

void add_leaf(Flat& f, Tensor t) {
  f.key += 'T';
  put_shape(f.key, t.dtype(), t.rank(), t.shape().begin());
  f.leaves.push_back(std::move(t));
}

// The signature key: nest.h's traversal with the kInputs leaves. Python scalars and strings
// are keyed by value, other objects by identity (kept alive with the entry), a container
// other than an exact tuple, list or dict by its type too (and a defaultdict by its
// default_factory). Mapping keys are keyed like values, never as leaves.
struct KeyVisitor {
  Flat& f;
  int in_key = 0;  // > 0 while a dict key is walked

  NodeKind classify(PyObject* o) const {
    NodeKind k = classify_input(o);
    return in_key && k == NodeKind::kLeaf ? NodeKind::kOther : k;
  }
  void leaf(PyObject* o) {
    if (Py_TYPE(o) == tensor_type())
      return add_leaf(
          f, *reinterpret_cast<py::detail::instance*>(o)->get_value_and_holder().value_ptr<Tensor>());
    py::handle h(o);
    if (is_ndarray(o) || is_string_tensor(o)) return add_leaf(f, to_tensor(h));
    if (is_spec_leaf(o)) {  // keyed by its spec; the trace takes its tensor in its place
      py::tuple r = h.attr("__jf_spec_leaf__")();
      std::string k = r[0].cast<std::string>();
      f.key += 'Q';
      put(f.key, static_cast<int64_t>(k.size()));
      put(f.key, k.data(), k.size());
      return add_leaf(f, r[1].cast<Tensor>());
    }
    add_leaf(f, h.cast<const Tensor&>());  // a subclass of Tensor
  }
  void other(PyObject* o) {
    if (PyBool_Check(o)) {
      f.key += o == Py_True ? "B1" : "B0";
    } else if (PyLong_Check(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow) {
        std::string r = py::repr(o).cast<std::string>();
        f.key += 'I';
        put(f.key, static_cast<int64_t>(r.size()));
        f.key += r;
      } else {
        f.key += 'i';
        put(f.key, v);
      }
    } else if (PyFloat_Check(o)) {
      f.key += 'f';
      put(f.key, PyFloat_AS_DOUBLE(o));
    } else if (o == Py_None) {
      f.key += 'N';
    } else if (PyUnicode_Check(o)) {
      Py_ssize_t n;
      const char* s = PyUnicode_AsUTF8AndSize(o, &n);
      if (!s) throw py::error_already_set();
      f.key += 's';
      put(f.key, static_cast<int64_t>(n));
      put(f.key, s, n);
    } else if (variable_type() && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(variable_type())) &&
               variable(o)) {
    } else if (PyTuple_Check(o)) {  // a nest atom (jf.TensorShape): keyed by value, its repr
      std::string r = py::repr(o).cast<std::string>();
      f.key += 'R';
      put(f.key, static_cast<int64_t>(r.size()));
      f.key += r;
    } else {
      // Anything else (layers, modules) is keyed by identity, like TF's weakrefs.
      identity(o);
    }
  }
  // TF keys a variable argument by its spec (dtype, shape, trainable), not its identity: one
  // trace serves every variable of that spec, the call binding the graph's variable ids to
  // the caller's (core/variables.h). A variable passed twice is keyed as the same one.
  bool variable(PyObject* o) {
    py::object id_obj = py::getattr(o, "_id", py::none());
    if (!PyLong_Check(id_obj.ptr())) return false;  // not made (its __init__ failed)
    const int64_t id = id_obj.cast<int64_t>();
    std::string part;
    auto seen = std::find(f.var_ids.begin(), f.var_ids.end(), id);
    if (seen != f.var_ids.end()) {
      part += 'A';
      put(part, static_cast<int32_t>(seen - f.var_ids.begin()));
    } else {
      DType dt;
      Shape s;
      variable_info(id, &dt, &s, nullptr);
      part += py::getattr(o, "trainable", py::bool_(true)).cast<bool>() ? 'V' : 'v';
      put_shape(part, dt, s.rank(), s.begin());
      f.var_ids.push_back(id);
    }
    f.key += part;
    f.var_key += part;
    return true;
  }
  void identity(PyObject* o) {
    f.key += 'o';
    put(f.key, reinterpret_cast<uintptr_t>(o));
    f.keepalive.push_back(py::reinterpret_borrow<py::object>(o));
  }
  void begin_seq(PyObject* o, NodeKind k) {
    if (k == NodeKind::kList || k == NodeKind::kTuple) {
      f.key += k == NodeKind::kList ? '[' : '(';
      return;
    }
    // The other containers are rebuilt as their type: it is part of the key.
    f.key += k == NodeKind::kNamedTuple ? '(' : '<';
    put(f.key, static_cast<uint8_t>(k));
    identity(reinterpret_cast<PyObject*>(Py_TYPE(o)));
  }
  void end_seq(PyObject*, NodeKind, Py_ssize_t n) {
    f.key += ')';
    put(f.key, static_cast<int32_t>(n));
  }
  void begin_dict(PyObject* o, NodeKind k, const DictKeys&) {
    if (k == NodeKind::kDict) {
      f.key += '{';
      return;
    }
    f.key += 'M';  // rebuilt as its type, a defaultdict with its default_factory
    identity(reinterpret_cast<PyObject*>(Py_TYPE(o)));
    py::object factory = default_factory(o);
    f.key += factory ? 'F' : '-';
    if (factory) identity(factory.ptr());
  }
  void dict_key(PyObject* key, NestPath& p) {
    ++in_key;
    walk_nest(key, *this, p);
    --in_key;
  }
  void end_dict(PyObject*) { f.key += '}'; }
};
}  // namespace

py::object& taped_call() {
  static auto* f = new py::object();  // leaked: must not be destroyed after the interpreter
  return *f;
}
thread_local bool t_recording_call = false;

// The instance's FunctionCache, or null before __init__ ran (the collector may visit it then).
static FunctionCache* cache_or_null(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  return inst->get_value_and_holder().value_ptr<FunctionCache>();
}

FunctionCache& cache_of(py::handle self) {
  FunctionCache* fc = cache_or_null(self.ptr());
  if (!fc) throw py::type_error("FunctionCache.__init__ was not called");
  return *fc;
}

void set_taped_call(py::object fn) { taped_call() = std::move(fn); }

py::object call_recorded(py::handle function, py::handle args, py::handle kwargs) {
  // An entry point taking any objects: cache_of reinterprets its argument as a FunctionCache
  // instance and PyObject_Call reads args as a tuple, so both are checked here (tp_call's own
  // arguments always have these types).
  if (!py::isinstance<FunctionCache>(function))
    throw py::type_error("call_recorded: expected a jf.function, got " +
                         py::repr(function).cast<std::string>());
  if (!PyTuple_Check(args.ptr())) throw py::type_error("call_recorded: args must be a tuple");
  if (kwargs && !kwargs.is_none() && !PyDict_Check(kwargs.ptr()))
    throw py::type_error("call_recorded: kwargs must be a dict or None");
  if (kwargs && kwargs.is_none()) kwargs = py::handle();
  struct Flag {
    Flag() { t_recording_call = true; }
    ~Flag() { t_recording_call = false; }
  } recording;
  return cache_of(function).call(args, kwargs);
}

// Nested calls while tracing are inlined; run_functions_eagerly runs the Python body.
bool runs_python_body() { return g_run_eagerly || is_tracing(); }

void set_run_functions_eagerly(bool on) { g_run_eagerly = on; }
bool run_functions_eagerly() { return g_run_eagerly; }

Flat flatten_inputs(py::handle args, py::handle kwargs) {
  Flat f;
  f.key.reserve(64);
  KeyVisitor v{f};
  NestPath path;
  walk_nest(args.ptr(), v, path);
  if (kwargs && !kwargs.is_none() && PyDict_Size(kwargs.ptr()) > 0) {
    f.key += '|';
    walk_nest(kwargs.ptr(), v, path);
  }
  // Traces are per placement (not per scope or input device: a CPU scope, or GPU inputs
  // under one, still run the CPU trace).
  Device d = call_placement(f.leaves);
  if (d.type == DeviceType::kGPU) f.key += str_cat("@G", d.index);
  return f;
}

FunctionCache::FunctionCache(py::object python_fn, py::object trace)
    : python_fn_(std::move(python_fn)), trace_(std::move(trace)) {}

void FunctionCache::add(const std::string& key, std::shared_ptr<ConcreteFunction> fn,
                        std::shared_ptr<TreeDef> outputs, bool general, std::vector<py::object> keepalive,
                        std::vector<int64_t> var_ids, const std::string& var_key) {
  if (!outputs || !fn) throw py::type_error("FunctionCache.add: needs a concrete function and a TreeDef");
  if (static_cast<size_t>(outputs->num_leaves) != fn->graph()->outputs.size())
    throw py::value_error(str_cat("FunctionCache.add: the output structure has ", outputs->num_leaves,
                                  " leaves for ", fn->graph()->outputs.size(), " outputs"));
  auto e = std::make_shared<CacheEntry>(
      CacheEntry{std::move(fn), std::move(outputs), std::move(keepalive), std::move(var_ids), var_key});
  if (general) general_.push_back(e);
  if (!key.empty()) exact_[key] = e;
}

void FunctionCache::clear() {
  exact_.clear();
  general_.clear();
}

void FunctionCache::setup_type(PyHeapTypeObject* type) {
  // The Python objects a cache holds (the function, its trace callback, the arguments kept
  // alive per signature) are shown to the cycle collector: a function that refers back to
  // its jf.function (a method of an object holding it) is reclaimed once dropped.
  type->ht_type.tp_flags |= Py_TPFLAGS_HAVE_GC;
  type->ht_type.tp_traverse = [](PyObject* self, visitproc visit, void* arg) -> int {
    Py_VISIT(Py_TYPE(self));  // a heap type's instances own a reference to it
    if (FunctionCache* fc = cache_or_null(self)) return fc->traverse(visit, arg);
    return 0;
  };
  type->ht_type.tp_clear = [](PyObject* self) -> int {
    if (FunctionCache* fc = cache_or_null(self)) fc->clear_references();
    return 0;
  };
  type->ht_type.tp_call = [](PyObject* self, PyObject* args, PyObject* kwargs) -> PyObject* {
    try {
      FunctionCache& fc = cache_of(self);
      py::handle kw = kwargs ? py::handle(kwargs) : py::handle();
      // Under an eager GradientTape the call is recorded as one op (not while tracing:
      // the traced body is inlined and the tape sees its ops).
      if (tapes_active() && !t_recording_call && !runs_python_body() && taped_call())
        return taped_call()(py::handle(self), py::handle(args), kw ? kw : py::handle(py::dict()))
            .release()
            .ptr();
      return fc.call(args, kw).release().ptr();
    } catch (py::error_already_set& e) {
      e.restore();
    } catch (...) {
      py::detail::try_translate_exceptions();
    }
    return nullptr;
  };
}

int FunctionCache::traverse(visitproc visit, void* arg) {
  Py_VISIT(python_fn_.ptr());
  Py_VISIT(trace_.ptr());
  auto visit_entry = [&](const std::shared_ptr<CacheEntry>& e) -> int {
    for (const py::object& o : e->keepalive) Py_VISIT(o.ptr());
    return 0;
  };
  for (auto& kv : exact_)
    if (int r = visit_entry(kv.second)) return r;
  for (auto& e : general_)
    if (int r = visit_entry(e)) return r;
  return 0;
}

void FunctionCache::clear_references() {
  // Swapped out before they are released: releasing may run Python code that calls back.
  py::object fn = std::move(python_fn_), trace = std::move(trace_);
  python_fn_ = py::none();
  trace_ = py::none();
  auto exact = std::move(exact_);
  auto general = std::move(general_);
  exact_.clear();
  general_.clear();
}

std::shared_ptr<CacheEntry> FunctionCache::find(Flat& f) {
  auto it = exact_.find(f.key);
  if (it != exact_.end()) return it->second;
  for (auto& g : general_)
    if (g->var_key == f.var_key && g->fn->accepts(f.leaves) && g->fn->placed_for(f.leaves)) {
      exact_[f.key] = g;
      g->keepalive.insert(g->keepalive.end(), f.keepalive.begin(), f.keepalive.end());
      return g;
    }
  return nullptr;
}

namespace {
py::tuple flat_to_python(const Flat& f) {
  py::list leaves, keepalive, var_ids;
  for (const Tensor& t : f.leaves) leaves.append(py::cast(t));
  for (const auto& o : f.keepalive) keepalive.append(o);
  for (int64_t id : f.var_ids) var_ids.append(id);
  return py::make_tuple(py::bytes(f.key), leaves, keepalive, var_ids, py::bytes(f.var_key));
}
}  // namespace

bool FunctionCache::has_flat(py::tuple flat) {
  if (flat.size() != 5) throw py::type_error("has_flat: expected (key, leaves, keepalive, var_ids, var_key)");
  Flat f;
  f.key = flat[0].cast<std::string>();
  for (py::handle t : flat[1].cast<py::list>()) f.leaves.push_back(t.cast<Tensor>());
  for (py::handle o : flat[2].cast<py::list>()) f.keepalive.push_back(py::reinterpret_borrow<py::object>(o));
  for (py::handle id : flat[3].cast<py::list>()) f.var_ids.push_back(id.cast<int64_t>());
  f.var_key = flat[4].cast<std::string>();
  return find(f) != nullptr;
}

py::object FunctionCache::call(py::handle args, py::handle kwargs) {
  if (runs_python_body()) {
    PyObject* r = PyObject_Call(python_fn_.ptr(), args.ptr(), kwargs.ptr());
    if (!r) throw py::error_already_set();
    py::object out = py::reinterpret_steal<py::object>(r);
    if (g_run_eagerly || !is_tracing()) return out;
    // Inlined into a trace: it returns what a traced call returns, tensors for its Python
    // numbers too (TF: a nested function call's outputs are graph tensors).
    auto [leaves, tree] = nest_flatten(out, LeafRule::kOutputs, py::none());
    py::list tensors;
    for (py::handle leaf : leaves) tensors.append(py::cast(to_tensor(leaf)));
    return tree->unflatten(tensors);
  }
  Flat f = flatten_inputs(args, kwargs);
  bool matched = true;  // the exact key or accepts() vouches for the inputs
  std::shared_ptr<CacheEntry> e = find(f);
  if (!e) {
    // Miss: Python traces (and registers the entry through add()), or finds that another
    // thread just did. It gets this flattening, so it never walks the arguments again for it.
    py::object r = trace_(args, kwargs ? py::reinterpret_borrow<py::object>(kwargs) : py::object(py::dict()),
                          flat_to_python(f));
    // The arguments converted to an input_signature's dtypes (Python numbers, lists, arrays
    // where it names tensors, as TF binds them): the call goes on with those.
    static PyObject* const rebind = PyUnicode_InternFromString("_jf_rebound_args");
    if (PyObject_HasAttr(r.ptr(), rebind)) {
      // Once per function and thread: converted arguments are tensors, so converting them
      // again would be a loop (other functions called while this one traces may rebind too).
      static thread_local std::vector<const FunctionCache*> rebinding;
      if (std::find(rebinding.begin(), rebinding.end(), this) != rebinding.end())
        throw py::type_error("jf.function: the converted arguments still do not bind");
      rebinding.push_back(this);
      struct Pop {
        ~Pop() { rebinding.pop_back(); }
      } pop;
      return call(r.attr(rebind), kwargs);
    }
    e = find(f);
    if (!e) throw_runtime("jf.function: tracing did not register a concrete function");
    matched = false;
  }
  std::vector<Tensor> out;
  {
    py::gil_scoped_release release;
    std::optional<VariableBinding> bind;
    if (f.var_ids != e->var_ids) bind.emplace(&e->var_ids, &f.var_ids);  // other variables, same specs
    out = matched ? e->fn->call_matched(std::move(f.leaves)) : e->fn->call(std::move(f.leaves));
  }
  return e->out->build([&](int i) { return tensor_to_py(out[i]); });
}

}  // namespace jf::py_bridge
