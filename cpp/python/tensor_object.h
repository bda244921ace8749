// The Tensor's Python object read and made without pybind11's per-call type lookups, and the
// guard that turns a C++ exception into the Python error pybind11 would raise: for the raw
// CPython entry points of the smallest eager ops, where pybind11's dispatch was most of the cost.
#pragma once
#include <pybind11/pybind11.h>

#include "core/tensor.h"

namespace jf::py_bridge {

namespace py = pybind11;

// Tensor's pybind11 record, looked up once (the Python class is made at import and never
// replaced).
inline const py::detail::type_info* tensor_type_info() {
  static const py::detail::type_info* ti = py::detail::get_type_info(typeid(Tensor));
  return ti;
}

// o's C++ tensor when o is exactly a jitflow Tensor holding one, else nullptr (a subclass, or
// an instance whose value was never constructed, takes the caller's general path).
inline const Tensor* exact_tensor(PyObject* o) {
  const py::detail::type_info* ti = tensor_type_info();
  if (!ti || Py_TYPE(o) != ti->type) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(o);
  if (!inst->simple_layout || !inst->simple_holder_constructed) return nullptr;
  return static_cast<const Tensor*>(inst->simple_value_holder[0]);
}

// A new reference to a Python Tensor owning t's contents (what py::cast(std::move(t)) makes),
// or nullptr with the Python error set.
inline PyObject* tensor_object(Tensor&& t) {
  auto move = [](const void* p) -> void* {
    return new Tensor(std::move(*static_cast<Tensor*>(const_cast<void*>(p))));
  };
  auto copy = [](const void* p) -> void* { return new Tensor(*static_cast<const Tensor*>(p)); };
  return py::detail::type_caster_generic::cast(&t, py::return_value_policy::move, py::handle(),
                                               tensor_type_info(), +copy, +move)
      .ptr();
}

// Runs f (returning a new reference) with C++ exceptions translated as pybind11's dispatcher
// translates them, so a raw entry point raises the same errors as a bound function.
template <class F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

// tensor[key] by TF's _slice_helper rules (bind_ops.cc), and the raw entry points above it.
Tensor getitem(const Tensor& t, py::handle key);
void bind_eager_fast(py::module_& m);

}  // namespace jf::py_bridge
