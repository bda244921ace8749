// Binds the op dispatcher: every jf.* op function and operator reaches C++ through here.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/convert.h"
#include "runtime/frontend.h"

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
  // Big kernels run without the GIL so other Python threads proceed.
  if (work > (1 << 16)) {
    py::gil_scoped_release release;
    return execute(id, in, at, name.is_none() ? nullptr : &nm);
  }
  return execute(id, in, at, name.is_none() ? nullptr : &nm);
}
}  // namespace

// tensor[key] as one StridedSlice: the key (ints, slices, Ellipsis, None, int tensors) turns
// into begin/end/strides and the masks, as TF's _slice_helper does.
Tensor getitem(const Tensor& t, py::handle key) {
  py::tuple k = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::vector<int64_t> begin, end, strides;
  int64_t bm = 0, em = 0, elm = 0, nam = 0, sam = 0;
  auto index = [](py::handle v) -> int64_t {
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
      throw_type(
          "Only integers, slices (`:`), ellipsis (`...`), jf.newaxis (`None`) and scalar int32/int64 "
          "tensors are valid indices, got ",
          py::repr(v).cast<std::string>());
    return py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr())).cast<int64_t>();
  };
  for (size_t i = 0; i < k.size(); ++i) {
    py::handle s = k[i];
    int64_t bit = int64_t(1) << i;
    if (PySlice_Check(s.ptr())) {
      py::object st = s.attr("start"), sp = s.attr("stop"), stp = s.attr("step");
      begin.push_back(st.is_none() ? 0 : index(st));
      end.push_back(sp.is_none() ? 0 : index(sp));
      strides.push_back(stp.is_none() ? 1 : index(stp));
      if (st.is_none()) bm |= bit;
      if (sp.is_none()) em |= bit;
    } else if (s.ptr() == Py_Ellipsis || s.is_none()) {
      begin.push_back(0), end.push_back(0), strides.push_back(1);
      (s.is_none() ? nam : elm) |= bit;
    } else {
      int64_t v = index(s);
      begin.push_back(v), end.push_back(v + 1), strides.push_back(1);
      sam |= bit;
    }
  }
  Attrs a;
  a.set("begin_mask", bm);
  a.set("end_mask", em);
  a.set("ellipsis_mask", elm);
  a.set("new_axis_mask", nam);
  a.set("shrink_axis_mask", sam);
  return run1(OpId::StridedSlice,
              {t, Tensor::from_int64s(begin), Tensor::from_int64s(end), Tensor::from_int64s(strides)}, a);
}

void bind_ops(py::module_& m) {
  m.def("getitem", &getitem);
  py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor")).def("__getitem__", &getitem);
  m.def("op_id", [](const std::string& name) { return static_cast<int>(resolve_op(py::str(name))); });
  m.def("op_names", [] {
    std::vector<std::string> v;
    for (int i = 0; i < num_ops(); ++i) v.push_back(op_def(static_cast<OpId>(i)).name);
    return v;
  });
  // The op records (ops.def), for the Python side: gradients, exports, the op-coverage test.
  m.def("op_records", [] {
    py::list out;
    auto types = [](TypeSet s) {
      py::list l;
      for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool})
        if (has_type(s, d)) l.append(dtype_name(d));
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
      out.append(r);
    }
    return out;
  });
  m.def(
      "execute",
      [](py::handle op, py::handle inputs, py::handle attrs, py::handle name) {
        auto out = run(op, inputs, attrs, name);
        JF_CHECK(out.size() == 1);
        return std::move(out[0]);
      },
      py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::none(), py::arg("name") = py::none());
  m.def("execute_n", &run, py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::none(),
        py::arg("name") = py::none());
  m.def(
      "convert_to_tensor",
      [](py::handle v, py::handle dtype, py::handle hint, bool soft_hint) {
        return to_tensor(v, dtype.is_none() ? DType::kInvalid : to_dtype(dtype),
                         hint.is_none() ? DType::kInvalid : to_dtype(hint), soft_hint);
      },
      py::arg("value"), py::arg("dtype") = py::none(), py::arg("dtype_hint") = py::none(),
      py::arg("soft_hint") = false);
  m.def(
      "int_tensor",
      [](const std::vector<int64_t>& v, bool scalar) {
        Tensor t = Tensor::from_int64s(v, DType::kInt32);
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
