// The bind_<topic> entry points, called from module.cc.
#pragma once
#include <pybind11/pybind11.h>

namespace jf::py_bridge {
namespace py = pybind11;
void bind_dtype(py::module_& m);
void bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_device(py::module_& m);
void bind_dlpack(py::module_& m);
void bind_runtime(py::module_& m);
void bind_graph(py::module_& m);
void bind_tracing(py::module_& m);
void bind_function(py::module_& m);
void bind_py_func(py::module_& m);  // jf.py_function / numpy_function callbacks
void bind_data(py::module_& m);     // jf.data's prefetch and parallel map threads
void bind_info(py::module_& m);     // jf.config.info(): versions, eager ISA, cache dir
}  // namespace jf::py_bridge
