// Signature keys, the concrete-function cache and output packing.
#include "python/function_cache.h"

#include <pybind11/numpy.h>

#include <cstring>

#include "python/convert.h"
#include "runtime/dispatch.h"
#include "runtime/placement.h"
#include "runtime/stats.h"
#include "tracing/trace_context.h"

namespace jf::py_bridge {

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

// The bound Tensor type, looked up once (pybind11's isinstance/cast search a type map).
PyTypeObject* tensor_type() {
  static PyTypeObject* t = reinterpret_cast<PyTypeObject*>(py::type::of<Tensor>().ptr());
  return t;
}

void add_leaf(Flat& f, Tensor t) {
  f.key += 'T';
  put_shape(f.key, t.dtype(), t.rank(), t.shape().begin());
  f.leaves.push_back(std::move(t));
}

void flatten(py::handle h, Flat& f) {
  PyObject* o = h.ptr();
  if (Py_TYPE(o) == tensor_type())
    return add_leaf(f,
                    *reinterpret_cast<py::detail::instance*>(o)->get_value_and_holder().value_ptr<Tensor>());
  if (PyBool_Check(o)) {
    f.key += o == Py_True ? "B1" : "B0";
  } else if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    f.key += 'i';
    if (overflow)
      f.key += py::repr(h).cast<std::string>() + ";";
    else
      put(f.key, v);
  } else if (PyFloat_Check(o)) {
    f.key += 'f';
    put(f.key, PyFloat_AS_DOUBLE(o));
  } else if (o == Py_None) {
    f.key += 'N';
  } else if (PyUnicode_Check(o)) {
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    f.key += 's';
    put(f.key, static_cast<int64_t>(n));
    put(f.key, s, n);
  } else if (PyTuple_Check(o) || PyList_Check(o)) {
    f.key += PyTuple_Check(o) ? '(' : '[';
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    put(f.key, static_cast<int32_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) flatten(PySequence_Fast_GET_ITEM(o, i), f);
    f.key += ')';
  } else if (PyDict_Check(o)) {
    py::list keys = py::module_::import("builtins").attr("sorted")(h);
    f.key += '{';
    for (auto kk : keys) {
      flatten(kk, f);
      flatten(PyDict_GetItem(o, kk.ptr()), f);
    }
    f.key += '}';
  } else if (py::isinstance<py::array>(h)) {
    add_leaf(f, to_tensor(h));
  } else if (py::isinstance<Tensor>(h)) {  // a subclass of Tensor: the slow path
    add_leaf(f, h.cast<const Tensor&>());
  } else {
    // Anything else (variables, layers, modules) is keyed by identity, like TF's weakrefs.
    f.key += 'o';
    put(f.key, reinterpret_cast<uintptr_t>(o));
    f.keepalive.push_back(py::reinterpret_borrow<py::object>(h));
  }
}
}  // namespace

py::object& taped_call() {
  static auto* f = new py::object();  // leaked: must not be destroyed after the interpreter
  return *f;
}
thread_local bool t_recording_call = false;

FunctionCache& cache_of(py::handle self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self.ptr());
  auto* fc = inst->get_value_and_holder().value_ptr<FunctionCache>();
  if (!fc) throw py::type_error("FunctionCache.__init__ was not called");
  return *fc;
}

void set_taped_call(py::object fn) { taped_call() = std::move(fn); }

py::object call_recorded(py::handle function, py::handle args, py::handle kwargs) {
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
  flatten(args, f);
  if (kwargs && !kwargs.is_none() && PyDict_Size(kwargs.ptr()) > 0) {
    f.key += '|';
    flatten(kwargs, f);
  }
  // Traces are per placement (not per scope or input device: a CPU scope, or GPU inputs
  // under one, still run the CPU trace).
  Device d = call_placement(f.leaves);
  if (d.type == DeviceType::kGPU) f.key += str_cat("@G", d.index);
  return f;
}

OutTree OutTree::parse(py::handle t) {
  OutTree n;
  PyObject* o = t.ptr();
  if (py::hasattr(t, "_jf_leaf_index")) {
    n.kind = kLeaf;
    n.leaf = t.attr("_jf_leaf_index").cast<int>();
  } else if (PyTuple_Check(o)) {
    n.kind = PyTuple_CheckExact(o) ? kTuple : kNamedTuple;
    if (n.kind == kNamedTuple) n.obj = py::type::of(t);
    for (auto c : py::reinterpret_borrow<py::tuple>(t)) n.kids.push_back(parse(c));
  } else if (PyList_Check(o)) {
    n.kind = kList;
    for (auto c : py::reinterpret_borrow<py::list>(t)) n.kids.push_back(parse(c));
  } else if (PyDict_Check(o)) {
    n.kind = kDict;
    py::list keys;
    for (auto kv : py::reinterpret_borrow<py::dict>(t)) {
      keys.append(kv.first);
      n.kids.push_back(parse(kv.second));
    }
    n.obj = keys;
  } else {
    n.obj = py::reinterpret_borrow<py::object>(t);
  }
  return n;
}

py::object OutTree::build(const std::vector<Tensor>& v) const {
  switch (kind) {
    case kLeaf:
      return py::cast(v[leaf]);
    case kTuple:
    case kNamedTuple: {
      py::tuple t(kids.size());
      for (size_t i = 0; i < kids.size(); ++i) t[i] = kids[i].build(v);
      return kind == kTuple ? py::object(t) : obj(*t);
    }
    case kList: {
      py::list l(kids.size());
      for (size_t i = 0; i < kids.size(); ++i) l[i] = kids[i].build(v);
      return l;
    }
    case kDict: {
      py::dict d;
      py::list keys = obj;
      for (size_t i = 0; i < kids.size(); ++i) d[keys[i]] = kids[i].build(v);
      return d;
    }
    default:
      return obj;
  }
}

FunctionCache::FunctionCache(py::object python_fn, py::object trace)
    : python_fn_(std::move(python_fn)), trace_(std::move(trace)) {}

void FunctionCache::add(const std::string& key, std::shared_ptr<ConcreteFunction> fn, py::handle templ,
                        bool general, std::vector<py::object> keepalive) {
  auto e =
      std::make_shared<CacheEntry>(CacheEntry{std::move(fn), OutTree::parse(templ), std::move(keepalive)});
  if (general) general_.push_back(e);
  if (!key.empty()) exact_[key] = e;
}

void FunctionCache::clear() {
  exact_.clear();
  general_.clear();
}

void FunctionCache::setup_type(PyHeapTypeObject* type) {
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

py::object FunctionCache::call(py::handle args, py::handle kwargs) {
  if (runs_python_body()) {
    PyObject* r = PyObject_Call(python_fn_.ptr(), args.ptr(), kwargs.ptr());
    if (!r) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(r);
  }
  Flat f = flatten_inputs(args, kwargs);
  std::shared_ptr<CacheEntry> e;
  bool matched = true;  // the exact key or accepts() vouches for the inputs
  auto it = exact_.find(f.key);
  if (it != exact_.end()) {
    e = it->second;
  } else {
    for (auto& g : general_)
      if (g->fn->accepts(f.leaves) && g->fn->placed_for(f.leaves)) {
        e = g;
        break;
      }
    if (e) {
      exact_[f.key] = e;
      e->keepalive.insert(e->keepalive.end(), f.keepalive.begin(), f.keepalive.end());
    } else {
      // Miss: Python traces (and registers the entry through add()).
      trace_(args, kwargs ? py::reinterpret_borrow<py::object>(kwargs) : py::object(py::dict()),
             py::bytes(f.key));
      it = exact_.find(f.key);
      if (it == exact_.end()) throw_runtime("jf.function: tracing did not register a concrete function");
      e = it->second;
      matched = false;
    }
  }
  std::vector<Tensor> out;
  {
    py::gil_scoped_release release;
    out = matched ? e->fn->call_matched(std::move(f.leaves)) : e->fn->call(std::move(f.leaves));
  }
  return e->out.build(out);
}

}  // namespace jf::py_bridge
