// Conversions at the Python boundary: Python values to Tensors and Attrs, Tensors to numpy,
// and jitflow errors to Python exceptions carrying the user's source line.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/tensor.h"
#include "ir/attrs.h"

namespace jf::py_bridge {
namespace py = pybind11;

// want: an explicit dtype (kInvalid: none). hint: the dtype of a peer tensor that Python
// scalars and lists adopt (TF's rule; TypeError when they cannot), kInvalid when there is
// none; with soft_hint (convert_to_tensor's dtype_hint) a value that cannot adopt it converts
// as it would alone. Numpy values are cast to want or hint (TF's force-cast), keeping their
// values whatever their byte order and strides.
Tensor to_tensor(py::handle h, DType want = DType::kInvalid, DType hint = DType::kInvalid,
                 bool soft_hint = false);
// A C-contiguous, aligned, native-order numeric ndarray copied into *out (of dtype target
// unless kInvalid); false, leaving *out alone, for any other value.
bool plain_array(py::handle h, DType target, Tensor* out);
DType to_dtype(py::handle h);  // accepts jf dtypes, numpy dtypes/types and strings
py::dtype numpy_dtype(DType d);
py::dtype bfloat16_numpy_dtype();  // ml_dtypes.bfloat16's dtype
Attrs to_attrs(py::handle dict);
py::object attr_to_py(const AttrValue& v);
py::array to_numpy(const Tensor& t, py::handle owner);  // zero-copy, read-only view (strings: a copy)
// A value for Python: a jf.Tensor, or for a string tensor jitflow's eager StringTensor (the
// value jf.constant("a") gives), so graph outputs look like eager values.
py::object tensor_to_py(const Tensor& t);
py::list tensors_to_py(const std::vector<Tensor>& ts);
// A kString tensor of these elements (bytes or str, UTF-8) and shape.
Tensor string_tensor(py::sequence values, const Shape& shape);
void register_error_translator(py::module_& m);

}  // namespace jf::py_bridge
