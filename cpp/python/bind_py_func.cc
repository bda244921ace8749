// The Python side of EagerPyFunc / PyFunc: the hook their kernels call (it takes the GIL and
// runs python/jitflow/py_function.py's _run) and the token helpers that registry uses.
#include <pybind11/stl.h>

#include "kernels/collective.h"
#include "kernels/py_func.h"
#include "kernels/strings.h"
#include "python/bindings.h"
#include "python/convert.h"
#include "python/function_cache.h"

namespace jf::py_bridge {

namespace {
ErrorKind kind_named(const std::string& k) {
  if (k == "invalid_argument") return ErrorKind::kInvalidArgument;
  if (k == "out_of_range") return ErrorKind::kOutOfRange;
  if (k == "resource_exhausted") return ErrorKind::kResourceExhausted;
  if (k == "unimplemented") return ErrorKind::kUnimplemented;
  if (k == "internal") return ErrorKind::kInternal;
  return ErrorKind::kUnknown;
}

// Runs on whatever thread executes the node, with or without the GIL: it takes it (the
// executor never holds a lock a GIL holder could wait for while a kernel runs).
std::vector<Tensor> call_py_func(int64_t token, bool numpy, const std::vector<Tensor>& in) {
  if (!Py_IsInitialized())
    throw Error(ErrorKind::kUnknown, "a Python callback ran after the interpreter exited");
  py::gil_scoped_acquire gil;
  try {
    py::object r =
        py::module_::import("jitflow.tracing.py_function").attr("_run")(token, numpy, tensors_to_py(in));
    if (py::isinstance<py::tuple>(r)) {  // (kind, message): the callable raised
      auto t = r.cast<py::tuple>();
      throw Error(kind_named(t[0].cast<std::string>()), t[1].cast<std::string>());
    }
    std::vector<Tensor> out;
    for (py::handle x : r.cast<py::list>())
      out.push_back(is_string_tensor(x.ptr()) ? to_tensor(x) : x.cast<Tensor>());
    return out;
  } catch (py::error_already_set& e) {  // _run itself failed (interpreter shutting down, ...)
    throw Error(ErrorKind::kUnknown, str_cat("calling back into Python failed: ", e.what()));
  } catch (py::cast_error& e) {
    throw Error(ErrorKind::kInternal, str_cat("a Python callback returned a non-tensor: ", e.what()));
  }
}
// StringFormat, AsString and StringToNumber run python/jitflow/ops/strings.py's code on the
// node's inputs (TF's formatting and parsing rules, written once), with the GIL.
void string_kernel(OpCall& c) {
  if (!Py_IsInitialized()) throw Error(ErrorKind::kUnknown, "a string op ran after the interpreter exited");
  py::gil_scoped_acquire gil;
  try {
    py::dict a;
    for (auto& kv : c.attrs.items()) a[py::str(kv.first)] = attr_to_py(kv.second);
    py::object r =
        py::module_::import("jitflow.ops.strings").attr("_graph_kernel")(c.name(), tensors_to_py(c.in), a);
    if (py::isinstance<py::tuple>(r)) {  // (kind, message): the op refused its inputs
      auto t = r.cast<py::tuple>();
      throw Error(kind_named(t[0].cast<std::string>()), t[1].cast<std::string>());
    }
    c.results.clear();
    for (py::handle x : r.cast<py::list>()) c.results.push_back(to_tensor(x));
  } catch (py::error_already_set& e) {
    throw Error(ErrorKind::kUnknown, str_cat(c.name(), ": calling back into Python failed: ", e.what()));
  }
}
}  // namespace

void bind_py_func(py::module_& m) {
  set_string_kernel_fn(&string_kernel);
  set_py_func_fn(&call_py_func);
  m.def("py_func_token", &make_py_func_token, py::arg("token"));
  m.def("py_func_dead_tokens", &take_dead_py_func_tokens);
  m.def("collective_failed_rank", &collective_failed_rank);
  m.def("collective_stats", [] {
    CollectiveStats s = collective_stats();
    return py::make_tuple(s.calls, s.seconds);
  });
  // Eager string tensors (python/jitflow/core/strings.py) are tensor leaves and values of kString.
  m.def("set_string_tensor_type",
        [](py::type t) { string_tensor_type() = reinterpret_cast<PyTypeObject*>(t.inc_ref().ptr()); });
  m.def(
      "string_tensor",
      [](py::sequence values, const std::vector<int64_t>& shape) {
        Shape s;
        for (int64_t d : shape) s.push_back(d);
        return string_tensor(values, s);
      },
      py::arg("values"), py::arg("shape"));
}

}  // namespace jf::py_bridge
