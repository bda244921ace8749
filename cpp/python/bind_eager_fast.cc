// Raw CPython entry points for the smallest eager ops (tensor[key], jf.constant(ndarray),
// jf.transpose(a)): on a small tensor pybind11's argument dispatch, type lookups and result
// wrapping cost more than the op, so these read and make Tensor objects directly. Each takes
// its direct path only where the general one would do the same work (no trace, no tape, on the
// CPU) and otherwise hands over to it, so values, errors, gradients and graphs stay the op's.
#include "ir/op_registry.h"
#include "ir/shape_fns.h"
#include "kernels/kernels.h"
#include "python/bindings.h"
#include "python/convert.h"
#include "python/tensor_object.h"
#include "runtime/dispatch.h"
#include "runtime/placement.h"
#include "support/stats.h"
#include "tracing/trace_context.h"

namespace jf::py_bridge {

namespace {
bool eager_here(const Tensor& t) {
  // A Tensor object made without a value (Tensor.__new__) has no buffer: the op reports it.
  if (!t.buffer() || t.dtype() == DType::kInvalid || t.is_symbolic() || !t.on_host() ||
      t.dtype() == DType::kString || is_tracing() || tapes_active())
    return false;
  static const std::vector<Tensor> none;  // host inputs: only a device scope asks for placement
  Device d;
  return !placement_needed(none, &d);
}

// A Tensor object made without a value (Tensor.__new__) holds nothing an op can read; the
// general path would pass it on to placement and kernels, so it is refused here.
const Tensor& with_value(const Tensor& t) {
  if (!t.defined()) throw_type("this jf.Tensor was made without a value (Tensor.__new__) and holds no data");
  return t;
}

// o's tensor (o is a jitflow Tensor or a subclass instance): read directly when exact, else
// through pybind11 into *held. An instance whose value was never constructed is refused.
const Tensor& tensor_of(PyObject* o, Tensor* held) {
  if (const Tensor* t = exact_tensor(o)) return with_value(*t);
  const py::detail::type_info* ti = tensor_type_info();
  if (PyObject_TypeCheck(o, ti->type)) {
    auto v_h = reinterpret_cast<py::detail::instance*>(o)->get_value_and_holder(ti, false);
    if (!v_h || !v_h.holder_constructed() || !v_h.value_ptr()) with_value(Tensor());
  }
  *held = py::handle(o).cast<Tensor>();
  return with_value(*held);
}

// A Python int that is not a bool, within int64.
bool plain_int(PyObject* o, int64_t* v) {
  if (!PyLong_Check(o) || PyBool_Check(o)) return false;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  *v = x;
  return true;
}

// tensor[key] for a key of Python ints, slices of ints and None, Ellipsis and None (alone or
// in a tuple) on an eager CPU tensor: the masks and bounds getitem would build, planned and
// applied as StridedSlice's kernel does (a view when the region is contiguous). False when
// the key or the tensor needs the general path, which also raises every error.
bool simple_slice(const Tensor& t, PyObject* key, Tensor* out) {
  constexpr int kMaxKeys = 2 * kMaxRank + 1;
  PyObject* one[1] = {key};
  PyObject* const* items = one;
  Py_ssize_t n = 1;
  if (PyTuple_Check(key)) items = &PyTuple_GET_ITEM(key, 0), n = PyTuple_GET_SIZE(key);
  if (n > kMaxKeys || !eager_here(t)) return false;
  thread_local std::vector<int64_t> b, e, s;
  b.assign(n, 0), e.assign(n, 0), s.assign(n, 1);
  int64_t bm = 0, em = 0, elm = 0, nam = 0, sam = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* k = items[i];
    const int64_t bit = int64_t(1) << i;
    if (PySlice_Check(k)) {
      auto* sl = reinterpret_cast<PySliceObject*>(k);
      if (sl->start == Py_None)
        bm |= bit;
      else if (!plain_int(sl->start, &b[i]))
        return false;
      if (sl->stop == Py_None)
        em |= bit;
      else if (!plain_int(sl->stop, &e[i]))
        return false;
      if (sl->step != Py_None && !plain_int(sl->step, &s[i])) return false;
    } else if (k == Py_Ellipsis) {
      elm |= bit;
    } else if (k == Py_None) {
      nam |= bit;
    } else if (plain_int(k, &b[i])) {
      e[i] = b[i] == INT64_MAX ? b[i] : b[i] + 1;  // as getitem: only begin is read for a shrunk axis
      sam |= bit;
    } else {
      return false;
    }
  }
  // Reused: after the first call setting the masks allocates nothing (attr names are strings).
  static const std::string* names =
      new std::string[5]{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
  thread_local Attrs attrs;
  attrs.set(names[0], bm);
  attrs.set(names[1], em);
  attrs.set(names[2], elm);
  attrs.set(names[3], nam);
  attrs.set(names[4], sam);
  static const std::vector<Tensor> no_inputs;  // read only by error messages, and errors go the general way
  OpCall call(&op_def(OpId::StridedSlice), no_inputs, attrs);
  SlicePlan plan;
  try {
    plan = strided_slice_plan(call, t.shape(), b, e, s);
  } catch (const Error&) {
    return false;
  }
  stats().eager_ops.fetch_add(1, std::memory_order_relaxed);
  strided_slice_into(t, plan, plan.out, nullptr, out);
  return true;
}

// Tensor.__getitem__'s slot: the simple path above, else getitem (bind_ops.cc).
PyObject* tensor_subscript(PyObject* self, PyObject* key) {
  return guarded([&]() -> PyObject* {
    Tensor held;
    const Tensor* t = &tensor_of(self, &held);
    Tensor out;
    if (simple_slice(*t, key, &out)) return tensor_object(std::move(out));
    return tensor_to_py(getitem(*t, key)).release().ptr();
  });
}

// jf.constant(ndarray) with nothing else asked: the array's tensor when the op would run
// eagerly on the CPU and the dtype is a number, else None (the general path runs).
PyObject* eager_array_tensor(PyObject*, PyObject* v) {
  return guarded([&]() -> PyObject* {
    if (Py_TYPE(v) != py::detail::npy_api::get().PyArray_Type_ || is_tracing()) Py_RETURN_NONE;
    static const std::vector<Tensor> none;
    Device d;
    if (placement_needed(none, &d)) Py_RETURN_NONE;
    const char k = py::reinterpret_borrow<py::array>(v).dtype().kind();
    if (k != 'b' && k != 'i' && k != 'u' && k != 'f' && k != 'c') Py_RETURN_NONE;
    Tensor t;
    if (!plain_array(v, DType::kInvalid, &t)) t = to_tensor(v);  // strided, unaligned, byte-swapped
    return tensor_object(std::move(t));
  });
}

// jf.transpose(a) with the default perm (a's dims reversed): an eager CPU tensor is transposed
// directly (a view when at most one dim exceeds 1, as the kernel gives); otherwise the op runs
// with the perm tensor made once per rank.
PyObject* transpose_reversed(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return guarded([&]() -> PyObject* {
    if (nargs != 2) throw_type("transpose_reversed(a, name) takes 2 arguments, got ", nargs);
    Tensor held;
    const Tensor* a = &tensor_of(args[0], &held);
    const int r = a->rank();
    if (r < 0 || r > kMaxRank) Py_RETURN_NONE;
    py::handle name(args[1]);
    if (name.is_none() && a->num_elements() <= (1 << 16) && eager_here(*a)) {
      Shape s;
      int big = 0;
      for (int i = r - 1; i >= 0; --i) s.push_back(a->shape()[i]), big += a->shape()[i] != 1;
      stats().eager_ops.fetch_add(1, std::memory_order_relaxed);
      if (big <= 1) return tensor_object(a->reshaped(s));
      std::vector<int> perm;
      for (int i = r - 1; i >= 0; --i) perm.push_back(i);
      Tensor out = Tensor::empty(a->dtype(), s);
      transpose_into(*a, perm, out);
      return tensor_object(std::move(out));
    }
    // Never destroyed: a static Tensor's destructor would run after the allocator's at exit.
    static Tensor* perms = new Tensor[kMaxRank + 1];
    if (!perms[r].defined()) {
      std::vector<int64_t> p;
      for (int i = r - 1; i >= 0; --i) p.push_back(i);
      perms[r] = Tensor::from_int64s(p, DType::kInt32);
    }
    const std::vector<Tensor> in{*a, perms[r]};
    std::string nm;
    if (!name.is_none()) nm = name.cast<std::string>();
    const std::string* np = name.is_none() ? nullptr : &nm;
    std::vector<Tensor> out;
    if (!a->is_symbolic() && a->num_elements() > (1 << 16) && !is_tracing()) {
      py::gil_scoped_release release;  // as run() does for big kernels
      out = execute(OpId::Transpose, in, Attrs(), np);
    } else {
      out = execute(OpId::Transpose, in, Attrs(), np);
    }
    return tensor_to_py(out.at(0)).release().ptr();
  });
}

// An eager CPU reshape of t to Python ints (one may be -1): the view Reshape's kernel gives,
// or None for anything the op must see (a bad shape raises there).
PyObject* reshape_ints(const Tensor& t, PyObject* shape) {
  if (!PyList_CheckExact(shape) && !PyTuple_CheckExact(shape)) Py_RETURN_NONE;
  PyObject** items = PySequence_Fast_ITEMS(shape);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(shape);
  if (n > kMaxRank || !eager_here(t)) Py_RETURN_NONE;
  std::vector<int64_t> dims(n);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!plain_int(items[i], &dims[i])) Py_RETURN_NONE;
  static const std::vector<Tensor> no_inputs;
  static const Attrs no_attrs;
  OpCall call(&op_def(OpId::Reshape), no_inputs, no_attrs);
  Shape out;
  try {
    out = resolve_reshape(call, t.shape(), dims);
    if (!out.fully_defined() || out.num_elements() != t.num_elements()) Py_RETURN_NONE;
  } catch (const Error&) {
    Py_RETURN_NONE;
  }
  stats().eager_ops.fetch_add(1, std::memory_order_relaxed);
  return tensor_object(t.reshaped(out));
}

// jf.constant, jf.transpose and jf.reshape as called most (positional arguments, an ndarray or
// an eager tensor): a callable that runs the direct path above and hands every other call,
// keywords included, to the Python function it wraps. It binds as a method and carries the
// function's name, doc and __wrapped__ (functools.update_wrapper), as the function would.
enum FrontKind { kConstant, kTranspose, kReshape };
struct FastFront {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* fallback;
  PyObject* dict;
  int kind;
};

PyObject* front_direct(int kind, PyObject* const* args, Py_ssize_t n) {
  if (kind == kConstant) return n == 1 ? eager_array_tensor(nullptr, args[0]) : Py_NewRef(Py_None);
  const Tensor* t = n >= 1 ? exact_tensor(args[0]) : nullptr;
  Tensor held;
  if (!t && n >= 1 && Py_TYPE(args[0]) == tensor_type_info()->type) t = &tensor_of(args[0], &held);
  if (!t) Py_RETURN_NONE;
  if (kind == kTranspose && n == 1) {
    PyObject* a[2] = {args[0], Py_None};
    return transpose_reversed(nullptr, a, 2);
  }
  if (kind == kReshape && n == 2) return reshape_ints(with_value(*t), args[1]);
  Py_RETURN_NONE;
}

PyObject* front_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<FastFront*>(self);
  if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) {
    PyObject* r = guarded([&] { return front_direct(f->kind, args, PyVectorcall_NARGS(nargsf)); });
    if (r != Py_None) return r;  // the result, or nullptr with the error set
    Py_DECREF(r);
  }
  return PyObject_Vectorcall(f->fallback, args, nargsf, kwnames);
}

void front_dealloc(PyObject* self) {
  auto* f = reinterpret_cast<FastFront*>(self);
  Py_XDECREF(f->fallback);
  Py_XDECREF(f->dict);
  Py_TYPE(self)->tp_free(self);
}

// The wrapped function's repr: jf.constant reads as the function it stands for.
PyObject* front_repr(PyObject* self) { return PyObject_Repr(reinterpret_cast<FastFront*>(self)->fallback); }

// Pickled (and copied) by name, as a module-level function is: the front is its module's
// attribute under the wrapped function's qualified name.
PyObject* front_reduce(PyObject* self, PyObject*) { return PyObject_GetAttrString(self, "__qualname__"); }

PyObject* front_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyTypeObject* front_type() {
  static PyTypeObject* type = [] {
    static PyTypeObject t = {PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "jitflow._C.FastFront";
    t.tp_basicsize = sizeof(FastFront);
    t.tp_dealloc = front_dealloc;
    t.tp_vectorcall_offset = offsetof(FastFront, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_getattro = PyObject_GenericGetAttr;
    t.tp_setattro = PyObject_GenericSetAttr;
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
    t.tp_doc = "A jitflow op function with a direct path for its commonest eager calls.";
    t.tp_descr_get = front_get;
    t.tp_repr = front_repr;
    t.tp_dictoffset = offsetof(FastFront, dict);
    static PyGetSetDef getset[] = {
        {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    t.tp_getset = getset;
    static PyMethodDef methods[] = {{"__reduce__", front_reduce, METH_NOARGS, nullptr},
                                    {nullptr, nullptr, 0, nullptr}};
    t.tp_methods = methods;
    if (PyType_Ready(&t) < 0) throw py::error_already_set();
    return &t;
  }();
  return type;
}

PyMethodDef g_defs[] = {
    {"eager_array_tensor", eager_array_tensor, METH_O,
     "eager_array_tensor(array): the tensor of a numeric ndarray on the eager CPU path, else None"},
    {"transpose_reversed", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(transpose_reversed)),
     METH_FASTCALL, "transpose_reversed(a, name): a with its dims reversed, or None for an unknown rank"},
};
}  // namespace

void bind_eager_fast(py::module_& m) {
  // fast_front(kind, function): kind is "constant", "transpose" or "reshape".
  m.def("fast_front", [](const std::string& kind, py::function fallback) {
    static const char* kinds[] = {"constant", "transpose", "reshape"};
    int k = 0;
    while (k < 3 && kind != kinds[k]) ++k;
    if (k == 3) throw_invalid("fast_front: unknown kind '", kind, "'");
    auto* f = PyObject_New(FastFront, front_type());
    if (!f) throw py::error_already_set();
    f->vectorcall = front_call;
    f->fallback = fallback.release().ptr();
    f->dict = nullptr;
    f->kind = k;
    return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(f));
  });
  for (PyMethodDef& d : g_defs) {
    PyObject* f = PyCFunction_NewEx(&d, nullptr, m.attr("__name__").ptr());
    if (!f) throw py::error_already_set();
    m.add_object(d.ml_name, py::reinterpret_steal<py::object>(f));
  }
  // t[key] reaches the slot without looking __getitem__ up and entering pybind11's dispatcher;
  // Tensor.__getitem__ stays bound for explicit calls.
  auto* type = reinterpret_cast<PyTypeObject*>(m.attr("Tensor").ptr());
  type->tp_as_mapping->mp_subscript = tensor_subscript;
}

}  // namespace jf::py_bridge
