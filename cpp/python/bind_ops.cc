// Binds the op dispatcher: every jf.* op function and operator reaches C++ through here.
#include <pybind11/stl.h>

#include "ir/shape_fns.h"
#include "kernels/kernels.h"
#include "python/bindings.h"
#include "python/convert.h"
#include "python/tensor_object.h"
#include "runtime/frontend.h"
#include "runtime/placement.h"
#include "support/stats.h"
#include "tracing/trace_context.h"

namespace jf::py_bridge {

namespace {
// Converts the op's inputs. Non-tensor data inputs adopt the dtype of the first tensor data
// input (Python scalars and numpy values take the tensor's dtype, as in TF), or with no
// tensor among them the dtype the first one converts to (TF: jf.add(np_float32_array, 1)
// is float32). Shape inputs (axes, shapes: the record's shape_inputs) convert on their own.
std::vector<Tensor> convert_inputs(py::handle seq, const OpDef* def = nullptr) {
  py::sequence s = py::reinterpret_borrow<py::sequence>(seq);
  size_t n = s.size();
  std::vector<Tensor> in(n);
  auto data = [&](size_t i) { return !def || !def->is_shape_input(i, n); };
  DType hint = DType::kInvalid;
  for (size_t i = 0; i < n && hint == DType::kInvalid; ++i)
    if (data(i) && py::isinstance<Tensor>(s[i])) hint = s[i].cast<const Tensor&>().dtype();
  for (size_t i = 0; i < n; ++i) {
    if (!data(i)) {
      in[i] = to_tensor(s[i]);
      continue;
    }
    in[i] = to_tensor(s[i], DType::kInvalid, hint);
    if (hint == DType::kInvalid) hint = in[i].dtype();
  }
  return in;
}

OpId resolve_op(py::handle op) {
  if (PyLong_Check(op.ptr())) {
    int id = op.cast<int>();
    if (id < 0 || id >= num_ops()) throw_invalid("unknown op id ", id);
    return static_cast<OpId>(id);
  }
  std::string name = op.cast<std::string>();
  const OpDef* d = find_op(name);
  if (!d) throw_invalid("unknown op type '", name, "'");
  return d->id;
}

std::vector<Tensor> run(py::handle op, py::handle inputs, py::handle attrs, py::handle name) {
  OpId id = resolve_op(op);
  std::vector<Tensor> in = convert_inputs(inputs, &op_def(id));
  Attrs at = to_attrs(attrs);
  std::string nm;
  if (!name.is_none()) nm = name.cast<std::string>();
  int64_t work = 0;
  for (const Tensor& t : in) work += t.is_symbolic() ? 0 : t.num_elements();
  // Big kernels run without the GIL so other Python threads proceed; never while tracing,
  // where the op is recorded, not run, and recording asks Python for the user's source line.
  if (work > (1 << 16) && !is_tracing()) {
    py::gil_scoped_release release;
    return execute(id, in, at, name.is_none() ? nullptr : &nm);
  }
  return execute(id, in, at, name.is_none() ? nullptr : &nm);
}
}  // namespace

namespace {
[[noreturn]] void bad_index(py::handle v) {
  std::string r = py::repr(v).cast<std::string>();
  throw_type(
      "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar tf.int32/tf.int64 "
      "tensors are valid indices, got ",
      r.size() > 200 ? r.substr(0, 197) + "..." : r);
}

// A Python int as int64, or TF's ValueError when it does not fit.
int64_t checked_int64(py::handle v) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow)
    throw_invalid("Can't convert Python sequence with out-of-range integer to Tensor: ",
                  py::repr(v).cast<std::string>(), " does not fit in int64");
  if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
  return x;
}

// One slice bound: a known integer, or a scalar int tensor whose value is computed in the
// graph being traced.
struct Bound {
  int64_t value = 0;
  Tensor tensor;  // defined only for a symbolic tensor
};

// What TF's _slice_helper accepts as an index: Python ints (not bools), numpy integers and
// 0-d integer arrays, scalar int32/int64 tensors. Anything else, arrays and objects that merely
// define __index__ included, is TF's TypeError; __index__ is never called on an arbitrary object.
Bound to_bound(py::handle v) {
  if (PyBool_Check(v.ptr())) bad_index(v);
  if (PyLong_Check(v.ptr())) return {checked_int64(v), {}};
  if (py::isinstance<Tensor>(v)) {
    const Tensor& t = v.cast<const Tensor&>();
    if (!is_int(t.dtype()) || t.rank() != 0) bad_index(v);
    if (t.is_symbolic()) return {0, t};
    return {t.get_int(0), {}};
  }
  static PyObject* np_integer = [] {
    try {
      return py::object(py::module_::import("numpy").attr("integer")).release().ptr();
    } catch (py::error_already_set&) {
      return static_cast<PyObject*>(nullptr);
    }
  }();
  bool np_int = np_integer && PyObject_IsInstance(v.ptr(), np_integer) == 1;
  if (!np_int && py::isinstance<py::array>(v)) {
    py::array a = py::reinterpret_borrow<py::array>(v);
    char k = a.dtype().kind();
    np_int = a.ndim() == 0 && (k == 'i' || k == 'u');
  }
  if (!np_int) bad_index(v);
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  return {checked_int64(i), {}};
}

// begin, end or strides: an int32 constant (int64 when a value needs it), or, when an entry is
// a traced tensor, a Pack of scalars of that tensor's dtype (TF: tf.stack of the entries).
Tensor bounds_tensor(const std::vector<Bound>& v) {
  DType dt = DType::kInvalid;
  bool wide = false;
  for (const Bound& b : v) {
    if (b.tensor.defined() && dt == DType::kInvalid) dt = b.tensor.dtype();
    wide |= b.value < INT32_MIN || b.value > INT32_MAX;
  }
  std::vector<int64_t> vals;
  for (const Bound& b : v) vals.push_back(b.value);
  if (dt == DType::kInvalid) return Tensor::from_int64s(vals, wide ? DType::kInt64 : DType::kInt32);
  std::vector<Tensor> parts;
  for (const Bound& b : v)
    parts.push_back(b.tensor.defined() ? b.tensor : Tensor::from_int64s({b.value}, dt).reshaped(Shape{}));
  Attrs a;
  a.set("axis", int64_t{0});
  a.set("N", static_cast<int64_t>(parts.size()));
  return run1(OpId::Pack, parts, a);
}
}  // namespace

// An eager tensor[key] with Python-int bounds, on the CPU with no tape recording: the
// StridedSlice kernel's work (plan, then a view or a copy) without building the three bound
// tensors and dispatching, most of a small slice's cost. Anything else, and any key the plan
// refuses, takes the op, so its errors are the op's.
static bool eager_slice(const Tensor& t, const std::vector<Bound>& begin, const std::vector<Bound>& end,
                        const std::vector<Bound>& strides, const Attrs& attrs, Tensor* out) {
  if (t.is_symbolic() || !t.on_host() || t.dtype() == DType::kString || is_tracing() || tapes_active())
    return false;
  const std::vector<Tensor> in{t};
  Device d;
  if (placement_needed(in, &d)) return false;
  const size_t n = begin.size();
  std::vector<int64_t> b(n), e(n), s(n);
  for (size_t i = 0; i < n; ++i) {
    if (begin[i].tensor.defined() || end[i].tensor.defined() || strides[i].tensor.defined()) return false;
    b[i] = begin[i].value, e[i] = end[i].value, s[i] = strides[i].value;
  }
  OpCall call(&op_def(OpId::StridedSlice), in, attrs);
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

// tensor[key] as one StridedSlice: the key (ints, slices, Ellipsis, None, int tensors) turns
// into begin/end/strides and the masks, as TF's _slice_helper does. A list key is read as a
// tuple, as TF 2 does (x[[0, 1]] is x[0, 1]).
Tensor getitem(const Tensor& t, py::handle key) {
  // TF: a Python bool, a bool tensor or a bool ndarray as the whole key is a boolean_mask.
  bool bool_key =
      PyBool_Check(key.ptr()) ||
      (py::isinstance<Tensor>(key) && key.cast<const Tensor&>().dtype() == DType::kBool) ||
      (py::isinstance<py::array>(key) && py::reinterpret_borrow<py::array>(key).dtype().kind() == 'b');
  if (bool_key)
    return py::module_::import("jitflow.ops.mask_ops").attr("boolean_mask")(t, key).cast<Tensor>();
  py::tuple k = py::isinstance<py::tuple>(key)  ? py::reinterpret_borrow<py::tuple>(key)
                : py::isinstance<py::list>(key) ? py::tuple(py::reinterpret_borrow<py::list>(key))
                                                : py::make_tuple(key);
  // The masks are int64 bit sets; a valid key has at most kMaxRank indices, kMaxRank new
  // axes and one ellipsis.
  if (k.size() > 2 * kMaxRank + 1)
    throw_invalid("StridedSlice: too many indices (", k.size(), ") for a tensor of shape ", t.shape().str());
  std::vector<Bound> begin, end, strides;
  begin.reserve(k.size()), end.reserve(k.size()), strides.reserve(k.size());
  int64_t bm = 0, em = 0, elm = 0, nam = 0, sam = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    py::handle s = k[i];
    int64_t bit = int64_t(1) << i;
    if (PySlice_Check(s.ptr())) {
      auto* sl = reinterpret_cast<PySliceObject*>(s.ptr());
      py::handle st(sl->start), sp(sl->stop), stp(sl->step);
      begin.push_back(st.is_none() ? Bound{} : to_bound(st));
      end.push_back(sp.is_none() ? Bound{} : to_bound(sp));
      strides.push_back(stp.is_none() ? Bound{1, {}} : to_bound(stp));
      if (st.is_none()) bm |= bit;
      if (sp.is_none()) em |= bit;
    } else if (s.ptr() == Py_Ellipsis || s.is_none()) {
      begin.push_back({}), end.push_back({}), strides.push_back({1, {}});
      (s.is_none() ? nam : elm) |= bit;
    } else {
      Bound b = to_bound(s);
      Bound e = b;
      if (b.tensor.defined())  // TF: end = index + 1 (only begin is read for a shrunk axis)
        e.tensor =
            run1(OpId::AddV2, {b.tensor, Tensor::from_int64s({1}, b.tensor.dtype()).reshaped(Shape{})});
      else
        e.value = b.value == INT64_MAX ? b.value : b.value + 1;
      begin.push_back(b), end.push_back(e), strides.push_back({1, {}});
      sam |= bit;
    }
  }
  // The names made once ("shrink_axis_mask" is past the short-string buffer): a small
  // slice's cost is mostly allocations.
  static const std::string* names =
      new std::string[5]{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
  Attrs a;
  a.set(names[0], bm);
  a.set(names[1], em);
  a.set(names[2], elm);
  a.set(names[3], nam);
  a.set(names[4], sam);
  if (Tensor view; eager_slice(t, begin, end, strides, a, &view)) return view;
  return run1(OpId::StridedSlice, {t, bounds_tensor(begin), bounds_tensor(end), bounds_tensor(strides)}, a);
}

void bind_ops(py::module_& m) {
  m.def("getitem", &getitem);
  py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor")).def("__getitem__", &getitem);
  bind_eager_fast(m);  // after __getitem__: it installs the subscript slot
  m.def("op_id", [](const std::string& name) { return static_cast<int>(resolve_op(py::str(name))); });
  m.def("op_names", [] {
    std::vector<std::string> v;
    for (int i = 0; i < num_ops(); ++i) v.push_back(op_def(static_cast<OpId>(i)).name);
    return v;
  });
  // The op records (ops.def), for the Python side: gradients, exports, the op-coverage test.
  // Built once and shared (four modules read them at import; callers only read them); never
  // destroyed, as a static Python object must outlive the interpreter's finalization.
  m.def("op_records", []() -> py::object {
    static PyObject* cached = nullptr;
    if (cached) return py::reinterpret_borrow<py::object>(cached);
    py::list out;
    auto types = [](TypeSet s) {
      py::list l;
      for (int k = 0; k < kNumDTypes; ++k)
        if (has_type(s, static_cast<DType>(k))) l.append(dtype_name(static_cast<DType>(k)));
      return l;
    };
    auto text = [](const char* s) { return s ? py::str(s) : py::str(""); };
    for (int i = 0; i < num_ops(); ++i) {
      const OpDef& d = op_def(static_cast<OpId>(i));
      py::dict r;
      r["name"] = d.name;
      r["id"] = i;
      r["num_inputs"] = d.num_inputs;
      r["types"] = types(d.types);
      py::list shape_inputs;
      for (int k = 0; k < 31; ++k)
        if ((d.shape_inputs >> k) & 1u) shape_inputs.append(k);
      if (d.shape_inputs & kLastInput) shape_inputs.append(-1);
      r["shape_inputs"] = shape_inputs;
      r["lower"] = lower_kind_name(d.lower);
      r["jit_types"] = types(d.jit.types);
      r["jit_reason"] = text(d.jit.reason);
      r["cost"] = cost_name(d.cost);
      r["math"] = text(d.math);
      r["differentiable"] = d.grad.registered;
      r["grad_reason"] = text(d.grad.reason);
      r["py_names"] = py::str(d.py.names).attr("split")();
      r["py_reason"] = text(d.py.reason);
      r["stateful"] = (d.flags & kStateful) != 0;
      r["resource_access"] = (d.flags & kResourceAccess) != 0;
      r["random_stream"] = (d.flags & kRandomStream) != 0;
      r["control_flow"] = (d.flags & kControlFlow) != 0;
      out.append(r);
    }
    cached = out.release().ptr();
    return py::reinterpret_borrow<py::object>(cached);
  });
  m.def(
      "execute",
      [](py::handle op, py::handle inputs, py::handle attrs, py::handle name) {
        auto out = run(op, inputs, attrs, name);
        JF_CHECK(out.size() == 1);
        return tensor_to_py(out[0]);
      },
      py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::none(), py::arg("name") = py::none());
  m.def(
      "execute_n",
      [](py::handle op, py::handle inputs, py::handle attrs, py::handle name) {
        return tensors_to_py(run(op, inputs, attrs, name));
      },
      py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::none(), py::arg("name") = py::none());
  m.def(
      "convert_to_tensor",
      [](py::handle v, py::handle dtype, py::handle hint, bool soft_hint) {
        // a C++ tensor also for a string value: callers pass it on to C++ (loops, branches)
        return to_tensor(v, dtype.is_none() ? DType::kInvalid : to_dtype(dtype),
                         hint.is_none() ? DType::kInvalid : to_dtype(hint), soft_hint);
      },
      py::arg("value"), py::arg("dtype") = py::none(), py::arg("dtype_hint") = py::none(),
      py::arg("soft_hint") = false);
  // Shapes, axes and perms from Python ints: int32 like TF, int64 when a value does not fit
  // (TF converts [2**31, 0] to int64 too), TF's ValueError past int64.
  m.def(
      "int_tensor",
      [](py::sequence values, bool scalar) {
        std::vector<int64_t> v;
        bool wide = false;
        for (py::object h : values) {  // an object, not a handle: a sequence may make its items
          if (!PyLong_Check(h.ptr()))
            throw_type("expected a Python int, got ", py::repr(h).cast<std::string>());
          v.push_back(checked_int64(h));
          wide |= v.back() < INT32_MIN || v.back() > INT32_MAX;
        }
        Tensor t = Tensor::from_int64s(v, wide ? DType::kInt64 : DType::kInt32);
        return scalar ? t.reshaped(Shape{}) : t;
      },
      py::arg("values"), py::arg("scalar") = false);
  m.def(
      "cast",
      [](py::handle x, py::handle dtype, py::handle name) {
        std::string nm = name.is_none() ? "" : name.cast<std::string>();
        return cast(to_tensor(x), to_dtype(dtype), name.is_none() ? nullptr : &nm);
      },
      py::arg("x"), py::arg("dtype"), py::arg("name") = py::none());
  m.def(
      "truediv",
      [](py::handle a, py::handle b, py::handle name) {
        auto in = convert_inputs(py::make_tuple(a, b));
        std::string nm = name.is_none() ? "" : name.cast<std::string>();
        return truediv(in[0], in[1], name.is_none() ? nullptr : &nm);
      },
      py::arg("x"), py::arg("y"), py::arg("name") = py::none());
  m.def(
      "matmul",
      [](py::handle a, py::handle b, bool ta, bool tb, py::handle name) {
        auto in = convert_inputs(py::make_tuple(a, b));
        std::string nm = name.is_none() ? "" : name.cast<std::string>();
        return matmul(in[0], in[1], ta, tb, name.is_none() ? nullptr : &nm);
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      py::arg("name") = py::none());
}

}  // namespace jf::py_bridge
