// Binds DType as a Python enum with TF's dtype properties.
#include "python/bindings.h"
#include "python/convert.h"

namespace jf::py_bridge {

static int datatype_enum(DType d) {
  switch (d) {
    case DType::kFloat32:
      return 1;
    case DType::kFloat64:
      return 2;
    case DType::kInt32:
      return 3;
    case DType::kUInt8:
      return 4;
    case DType::kInt16:
      return 5;
    case DType::kInt8:
      return 6;
    case DType::kString:
      return 7;
    case DType::kComplex64:
      return 8;
    case DType::kInt64:
      return 9;
    case DType::kBool:
      return 10;
    case DType::kBFloat16:
      return 14;
    case DType::kUInt16:
      return 17;
    case DType::kComplex128:
      return 18;
    case DType::kFloat16:
      return 19;
    case DType::kUInt32:
      return 22;
    case DType::kUInt64:
      return 23;
    default:
      return 0;
  }
}

void bind_dtype(py::module_& m) {
  py::enum_<DType>(m, "DType")
      .value("float32", DType::kFloat32)
      .value("float64", DType::kFloat64)
      .value("int32", DType::kInt32)
      .value("int64", DType::kInt64)
      .value("bool", DType::kBool)
      .value("string", DType::kString)
      .value("float16", DType::kFloat16)
      .value("bfloat16", DType::kBFloat16)
      .value("int8", DType::kInt8)
      .value("uint8", DType::kUInt8)
      .value("int16", DType::kInt16)
      .value("uint16", DType::kUInt16)
      .value("uint32", DType::kUInt32)
      .value("uint64", DType::kUInt64)
      .value("complex64", DType::kComplex64)
      .value("complex128", DType::kComplex128)
      .def_property_readonly("is_floating", [](DType d) { return is_floating_type(d); })
      .def_property_readonly("is_integer", [](DType d) { return is_integer_type(d); })
      .def_property_readonly("is_unsigned", [](DType d) { return is_unsigned_type(d); })
      .def_property_readonly("is_complex", [](DType d) { return is_complex_type(d); })
      .def_property_readonly(
          "is_numeric",
          [](DType d) { return is_floating_type(d) || is_integer_type(d) || is_complex_type(d); })
      .def_property_readonly("is_bool", [](DType d) { return d == DType::kBool; })
      // TF: a complex dtype's real part; every other dtype is its own
      .def_property_readonly(
          "real_dtype",
          [](DType d) {
            return d == DType::kComplex64 ? DType::kFloat32 : d == DType::kComplex128 ? DType::kFloat64 : d;
          })
      // TF's DataType enum values (types.proto), which tf.as_dtype also takes
      .def_property_readonly("as_datatype_enum", [](DType d) { return datatype_enum(d); })
      // TF: tf.string.size is 0 (its elements have no fixed size)
      .def_property_readonly("size", [](DType d) { return d == DType::kString ? size_t{0} : dtype_size(d); })
      .def_property_readonly("as_numpy_dtype",
                             [](DType d) -> py::object {
                               // TF: tf.string.as_numpy_dtype is Python's object
                               if (d == DType::kString) return py::module_::import("builtins").attr("object");
                               return numpy_dtype(d).attr("type");
                             })
      .def("__repr__", [](DType d) { return std::string("jf.") + dtype_name(d); })
      .def("__str__", [](DType d) { return std::string("<dtype: '") + dtype_name(d) + "'>"; });
  m.def("as_dtype", [](py::handle h) {
    if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {  // a DataType enum value, as tf.as_dtype(1)
      long v = PyLong_AsLong(h.ptr());
      for (int k = 0; k < kNumDTypes; ++k)
        if (datatype_enum(static_cast<DType>(k)) == v) return static_cast<DType>(k);
      throw_type("Cannot convert the argument `type_value`: ", v, " to a TensorFlow DType.");
    }
    return to_dtype(h);
  });
}

}  // namespace jf::py_bridge
