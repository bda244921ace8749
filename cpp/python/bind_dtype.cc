// Binds DType as a Python enum with TF's dtype properties.
#include "python/bindings.h"
#include "python/convert.h"

namespace jf::py_bridge {

void bind_dtype(py::module_& m) {
  py::enum_<DType>(m, "DType")
      .value("float32", DType::kFloat32)
      .value("float64", DType::kFloat64)
      .value("int32", DType::kInt32)
      .value("int64", DType::kInt64)
      .value("bool", DType::kBool)
      .value("string", DType::kString)
      .def_property_readonly("is_floating", [](DType d) { return is_float(d); })
      .def_property_readonly("is_integer", [](DType d) { return is_int(d); })
      .def_property_readonly("is_bool", [](DType d) { return d == DType::kBool; })
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
  m.def("as_dtype", [](py::handle h) { return to_dtype(h); });
}

}  // namespace jf::py_bridge
