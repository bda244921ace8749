// The Python side of EagerPyFunc / PyFunc: the hook their kernels call (it takes the GIL and
// runs python/jitflow/py_function.py's _run) and the token helpers that registry uses.
#include <pybind11/stl.h>

#include "kernels/py_func.h"
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
    py::object r = py::module_::import("jitflow.tracing.py_function").attr("_run")(token, numpy, in);
    if (py::isinstance<py::tuple>(r)) {  // (kind, message): the callable raised
      auto t = r.cast<py::tuple>();
      throw Error(kind_named(t[0].cast<std::string>()), t[1].cast<std::string>());
    }
    std::vector<Tensor> out;
    for (py::handle x : r.cast<py::list>()) out.push_back(x.cast<Tensor>());
    return out;
  } catch (py::error_already_set& e) {  // _run itself failed (interpreter shutting down, ...)
    throw Error(ErrorKind::kUnknown, str_cat("calling back into Python failed: ", e.what()));
  } catch (py::cast_error& e) {
    throw Error(ErrorKind::kInternal, str_cat("a Python callback returned a non-tensor: ", e.what()));
  }
}
}  // namespace

void bind_py_func(py::module_& m) {
  set_py_func_fn(&call_py_func);
  m.def("py_func_token", &make_py_func_token, py::arg("token"));
  m.def("py_func_dead_tokens", &take_dead_py_func_tokens);
  // jf.function keys string tensors by value (python/jitflow/strings.py).
  m.def("set_value_keyed_type", [](py::type t) { value_keyed_type() = t.inc_ref().ptr(); });
}

}  // namespace jf::py_bridge
