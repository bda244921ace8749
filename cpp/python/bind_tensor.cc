// Binds Tensor: properties, numpy/buffer views and Python operators (each one registry op).
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/convert.h"
#include "runtime/frontend.h"

namespace jf::py_bridge {

namespace {
Tensor other_operand(const Tensor& self, py::handle other) {
  return to_tensor(other, DType::kInvalid, self.dtype());
}

template <OpId kOp, bool kReverse>
py::object binop(const Tensor& self, py::handle other) {
  // A traced string tensor: `+` concatenates (StringJoin) and ==/!= compare strings, taking
  // Python strings as TF does; core/strings.py converts the operand and records the op.
  if (self.dtype() == DType::kString && (kOp == OpId::AddV2 || kOp == OpId::Equal || kOp == OpId::NotEqual) &&
      !other.is_none())
    return py::module_::import("jitflow.core.strings")
        .attr("_string_operator")(op_def(kOp).name, kReverse, py::cast(self), other);
  if (other.is_none() || py::isinstance<py::str>(other))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  Tensor o = other_operand(self, other);
  return py::cast(kReverse ? run1(kOp, {o, self}) : run1(kOp, {self, o}));
}

// & | ^ as TF: logical on bool tensors, bitwise on others (which refuse non-integers).
// xor of bools is TF's logical_xor: (x | y) & !(x & y).
template <OpId kBitwise, bool kReverse>
py::object bool_or_bits(const Tensor& self, py::handle other) {
  if (other.is_none() || py::isinstance<py::str>(other))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  Tensor o = other_operand(self, other);
  Tensor x = kReverse ? o : self, y = kReverse ? self : o;
  if (self.dtype() != DType::kBool) return py::cast(run1(kBitwise, {x, y}));
  if constexpr (kBitwise == OpId::BitwiseAnd) return py::cast(run1(OpId::LogicalAnd, {x, y}));
  if constexpr (kBitwise == OpId::BitwiseOr) return py::cast(run1(OpId::LogicalOr, {x, y}));
  return py::cast(run1(OpId::LogicalAnd, {run1(OpId::LogicalOr, {x, y}),
                                          run1(OpId::LogicalNot, {run1(OpId::LogicalAnd, {x, y})})}));
}

std::string buffer_format(DType d) {
  switch (d) {
    case DType::kFloat32:
      return "f";
    case DType::kFloat64:
      return "d";
    case DType::kInt32:
      return "i";
    case DType::kInt64:
      return "q";
    case DType::kBool:
      return "?";
    case DType::kFloat16:
      return "e";
    case DType::kInt8:
      return "b";
    case DType::kUInt8:
      return "B";
    case DType::kInt16:
      return "h";
    case DType::kUInt16:
      return "H";
    case DType::kUInt32:
      return "I";
    case DType::kUInt64:
      return "Q";
    case DType::kComplex64:
      return "Zf";
    case DType::kComplex128:
      return "Zd";
    default:  // bfloat16 has no buffer-protocol format
      throw_type("a ", dtype_name(d), " tensor has no buffer format: use .numpy()");
  }
}

py::tuple shape_tuple(const Tensor& t) {
  py::tuple s(t.rank());
  for (int i = 0; i < t.rank(); ++i)
    s[i] = t.shape()[i] < 0 ? py::none() : py::object(py::int_(t.shape()[i]));
  return s;
}
}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<Tensor> cls(m, "Tensor", py::buffer_protocol());
  // No Python constructor, as TF's EagerTensor has none: an instance made by Tensor.__new__
  // would hold no C++ value for every op to read. Tensors come from jf.constant and the ops
  // (made in C++ by tensor_object.h, which does not go through tp_new).
  reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_new = [](PyTypeObject*, PyObject*, PyObject*) -> PyObject* {
    PyErr_SetString(PyExc_TypeError,
                    "jf.Tensor cannot be created directly: use jf.constant or jf.convert_to_tensor");
    return nullptr;
  };
  // The Python face (python/jitflow/core/tensor.py) builds `shape` (a TensorShape), `==`/`!=`
  // (TF 2's broadcasting rules) and hashing on these.
  cls.def_property_readonly("_shape_tuple", &shape_tuple)
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", &Tensor::rank)
      .def_property_readonly("_is_symbolic", &Tensor::is_symbolic)
      // set_shape refines a traced tensor in place, as TF's does: the handle is pointed at a
      // checked node with the merged static shape.
      .def("_rebind",
           [](Tensor& self, const Tensor& other) {
             if (!self.is_symbolic() || !other.is_symbolic() || self.dtype() != other.dtype())
               throw_type("_rebind takes two traced tensors of one dtype");
             self = other;
           })
      .def_property_readonly("_nbytes", &Tensor::nbytes)
      .def_property_readonly("_data_ptr",
                             [](const Tensor& t) {
                               if (!t.buffer()) throw_type("this jf.Tensor has no buffer");
                               return reinterpret_cast<uintptr_t>(t.raw());
                             })
      .def("numpy",
           [](py::object self) -> py::object {
             const Tensor& t = self.cast<const Tensor&>();
             py::array a = to_numpy(t, self);
             // TF returns a NumPy scalar (np.float32(1.0)) for a scalar tensor, an array otherwise.
             if (t.rank() == 0) return a[py::tuple()];
             return std::move(a);
           })
      .def(
          "__array__",
          [](py::object self, py::object dtype, py::object copy) {
            py::array a = to_numpy(self.cast<const Tensor&>(), self);
            if (!dtype.is_none()) return py::array(a.attr("astype")(dtype));
            if (!copy.is_none() && copy.cast<bool>()) return py::array(a.attr("copy")());
            return a;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def_buffer([](const Tensor& t) {
        if (t.is_symbolic()) throw_type("a symbolic tensor has no buffer");
        if (!t.buffer()) throw_type("this jf.Tensor has no value (it was made without one)");
        if (t.dtype() == DType::kString) throw_type("a string tensor has no buffer: use .numpy()");
        if (!t.on_host())
          throw_type("a tensor on ", device_name(t.device()),
                     " has no host buffer: use .numpy() or np.asarray(t), which copy it to the host");
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(t.rank());
        py::ssize_t st = dtype_size(t.dtype());
        for (int i = t.rank() - 1; i >= 0; --i) strides[i] = st, st *= shape[i];
        return py::buffer_info(t.raw(), dtype_size(t.dtype()), buffer_format(t.dtype()), t.rank(), shape,
                               strides, true);
      })
      .def("__add__", &binop<OpId::AddV2, false>)
      .def("__radd__", &binop<OpId::AddV2, true>)
      .def("__sub__", &binop<OpId::Sub, false>)
      .def("__rsub__", &binop<OpId::Sub, true>)
      .def("__mul__", &binop<OpId::Mul, false>)
      .def("__rmul__", &binop<OpId::Mul, true>)
      .def("__floordiv__", &binop<OpId::FloorDiv, false>)
      .def("__rfloordiv__", &binop<OpId::FloorDiv, true>)
      .def("__mod__", &binop<OpId::FloorMod, false>)
      .def("__rmod__", &binop<OpId::FloorMod, true>)
      .def("__pow__", &binop<OpId::Pow, false>)
      .def("__rpow__", &binop<OpId::Pow, true>)
      .def("__lt__", &binop<OpId::Less, false>)
      .def("__le__", &binop<OpId::LessEqual, false>)
      .def("__gt__", &binop<OpId::Greater, false>)
      .def("__ge__", &binop<OpId::GreaterEqual, false>)
      .def("__and__", &bool_or_bits<OpId::BitwiseAnd, false>)
      .def("__rand__", &bool_or_bits<OpId::BitwiseAnd, true>)
      .def("__or__", &bool_or_bits<OpId::BitwiseOr, false>)
      .def("__ror__", &bool_or_bits<OpId::BitwiseOr, true>)
      .def("__xor__", &bool_or_bits<OpId::BitwiseXor, false>)
      .def("__rxor__", &bool_or_bits<OpId::BitwiseXor, true>)
      .def("_equal", &binop<OpId::Equal, false>)
      .def("_not_equal", &binop<OpId::NotEqual, false>)
      .def("__truediv__", [](const Tensor& s, py::handle o) { return truediv(s, other_operand(s, o)); })
      .def("__rtruediv__", [](const Tensor& s, py::handle o) { return truediv(other_operand(s, o), s); })
      .def("__matmul__",
           [](const Tensor& s, py::handle o) { return matmul(s, other_operand(s, o), false, false); })
      .def("__rmatmul__",
           [](const Tensor& s, py::handle o) { return matmul(other_operand(s, o), s, false, false); })
      .def("__neg__", [](const Tensor& s) { return run1(OpId::Neg, {s}); })
      .def("__abs__",
           [](const Tensor& s) {
             return run1(is_complex_type(s.dtype()) ? OpId::ComplexAbs : OpId::Abs, {s});
           })
      .def("__invert__",
           [](const Tensor& s) {
             return run1(s.dtype() == DType::kBool ? OpId::LogicalNot : OpId::Invert, {s});
           })
      .def("__pos__", [](const Tensor& s) { return s; });
}

}  // namespace jf::py_bridge
