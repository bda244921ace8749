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
// or nullptr with the Python error set. It does what pybind11's cast and class_::init_instance
// do for a new value held by std::unique_ptr (a fresh heap Tensor is never registered yet, so
// no lookup of it), without their per-call type lookups.
inline PyObject* tensor_object(Tensor&& t) {
  using Holder = std::unique_ptr<Tensor>;
  static_assert(std::is_same_v<py::class_<Tensor>::holder_type, Holder>, "Tensor's holder changed");
  const py::detail::type_info* ti = tensor_type_info();
  PyObject* o = py::detail::make_new_instance(ti->type);
  if (!o) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(o);
  try {
    py::detail::value_and_holder v_h = inst->get_value_and_holder(ti);
    v_h.value_ptr() = new Tensor(std::move(t));
    inst->owned = true;
    py::detail::register_instance(inst, v_h.value_ptr(), ti);
    v_h.set_instance_registered();
    new (std::addressof(v_h.holder<Holder>())) Holder(v_h.value_ptr<Tensor>());
    v_h.set_holder_constructed();
  } catch (...) {
    Py_DECREF(o);  // pybind11's dealloc frees what was set up
    throw;
  }
  return o;
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
