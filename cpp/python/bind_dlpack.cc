// Binds DLPack export (Tensor.__dlpack__) and import (jf.from_dlpack), zero-copy both ways.
#include <dlpack/dlpack.h>

#include <cstring>

#include "kernels/kernels.h"
#include "python/bindings.h"
#include "python/convert.h"
#include "runtime/gpu/gpu_device.h"

namespace jf::py_bridge {

namespace {

// DLPack 0.8 added kDLBool (6); Debian's header predates it, numpy exports bool with it.
constexpr uint8_t kBoolCode = 6;

struct Export {
  Tensor tensor;  // keeps the buffer alive while the consumer holds it
  std::vector<int64_t> shape;
  DLManagedTensor managed;
};

DLDataType dl_type(DType d) {
  switch (d) {
    case DType::kFloat32:
      return {kDLFloat, 32, 1};
    case DType::kFloat64:
      return {kDLFloat, 64, 1};
    case DType::kInt32:
      return {kDLInt, 32, 1};
    case DType::kInt64:
      return {kDLInt, 64, 1};
    case DType::kBool:
      return {kBoolCode, 8, 1};
    case DType::kFloat16:
      return {kDLFloat, 16, 1};
    case DType::kBFloat16:
      return {kDLBfloat, 16, 1};
    case DType::kInt8:
      return {kDLInt, 8, 1};
    case DType::kInt16:
      return {kDLInt, 16, 1};
    case DType::kUInt8:
      return {kDLUInt, 8, 1};
    case DType::kUInt16:
      return {kDLUInt, 16, 1};
    case DType::kUInt32:
      return {kDLUInt, 32, 1};
    case DType::kUInt64:
      return {kDLUInt, 64, 1};
    case DType::kComplex64:
      return {kDLComplex, 64, 1};
    case DType::kComplex128:
      return {kDLComplex, 128, 1};
    default:
      throw_type("DLPack has no dtype for ", dtype_name(d), " tensors");
  }
}

DType from_dl(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::kFloat32;
    if (t.code == kDLFloat && t.bits == 64) return DType::kFloat64;
    if (t.code == kDLInt && t.bits == 32) return DType::kInt32;
    if (t.code == kDLInt && t.bits == 64) return DType::kInt64;
    if (t.code == kBoolCode && t.bits == 8) return DType::kBool;
    if (t.code == kDLFloat && t.bits == 16) return DType::kFloat16;
    if (t.code == kDLBfloat && t.bits == 16) return DType::kBFloat16;
    if (t.code == kDLInt && t.bits == 8) return DType::kInt8;
    if (t.code == kDLInt && t.bits == 16) return DType::kInt16;
    if (t.code == kDLUInt && t.bits == 8) return DType::kUInt8;
    if (t.code == kDLUInt && t.bits == 16) return DType::kUInt16;
    if (t.code == kDLUInt && t.bits == 32) return DType::kUInt32;
    if (t.code == kDLUInt && t.bits == 64) return DType::kUInt64;
    if (t.code == kDLComplex && t.bits == 64) return DType::kComplex64;
    if (t.code == kDLComplex && t.bits == 128) return DType::kComplex128;
  }
  throw_type("from_dlpack: unsupported DLPack dtype (code ", int(t.code), ", bits ", int(t.bits), ", lanes ",
             t.lanes, ")");
}

void capsule_destructor(PyObject* cap) {
  // Only an unconsumed capsule still owns its tensor.
  if (PyCapsule_IsValid(cap, "dltensor")) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
    if (mt && mt->deleter) mt->deleter(mt);
  }
}

py::capsule to_dlpack(const Tensor& t) {
  if (t.is_symbolic()) throw_type("a symbolic tensor cannot be exported through DLPack");
  auto* e = new Export{t, t.shape().vec(), {}};
  DLTensor& d = e->managed.dl_tensor;
  d.data = t.raw();
  d.device = {kDLCPU, 0};
  if (!t.on_host()) {  // device memory: the consumer reads it on its own stream, so finish ours
    GpuDevice::get(t.device().index).synchronize();
    d.device = {kDLCUDA, t.device().index};
  }
  d.ndim = t.rank();
  d.dtype = dl_type(t.dtype());
  d.shape = e->shape.data();
  d.strides = nullptr;  // compact row-major
  d.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
  return py::reinterpret_steal<py::capsule>(PyCapsule_New(&e->managed, "dltensor", capsule_destructor));
}

// Zero-copy import through the buffer protocol (numpy exports read-only arrays only as
// versioned DLPack capsules, which Debian's dlpack header predates).
Tensor from_buffer(py::object obj) {
  py::buffer_info info = py::buffer(obj).request();
  py::dtype npdt(info);
  // Bytes in another byte order cannot be shared as they are (DLPack has no byte order;
  // numpy's own __dlpack__ refuses them too).
  if (!npdt.attr("isnative").cast<bool>())
    throw_type("from_dlpack: a buffer of dtype ", py::str(npdt).cast<std::string>(),
               " is not in native byte order and cannot be shared without a copy; use jf.constant");
  DType dt = to_dtype(npdt);
  Shape shape;
  for (auto d : info.shape) shape.push_back(d);
  size_t es = dtype_size(dt);
  bool compact = true;
  int64_t expect = static_cast<int64_t>(es);
  for (int i = static_cast<int>(info.ndim) - 1; i >= 0; --i) {
    if (info.shape[i] != 1 && info.strides[i] != expect) compact = false;
    expect *= info.shape[i];
  }
  if (compact) {
    PyObject* owner = obj.ptr();
    Py_INCREF(owner);
    BufferPtr buf = wrap_external(
        info.ptr, shape.num_elements() * es,
        [](void* o) {
          PyGILState_STATE g = PyGILState_Ensure();
          Py_DECREF(static_cast<PyObject*>(o));
          PyGILState_Release(g);
        },
        owner);
    return Tensor(dt, shape, buf);
  }
  Tensor t = Tensor::empty(dt, shape);
  std::vector<int64_t> dims(info.shape.begin(), info.shape.end()), st;
  for (auto s : info.strides) {
    if (s % static_cast<int64_t>(es) != 0) throw_invalid("from_dlpack: unaligned strides are not supported");
    st.push_back(s / static_cast<int64_t>(es));
  }
  if (t.num_elements())
    strided_copy(static_cast<const char*>(info.ptr), es, static_cast<int>(info.ndim), dims.data(), st.data(),
                 static_cast<char*>(t.raw()));
  return t;
}

Tensor from_dlpack(py::object obj) {
  py::object cap = obj;
  if (py::hasattr(obj, "__dlpack__")) {
    try {
      cap = obj.attr("__dlpack__")();
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_BufferError) || !PyObject_CheckBuffer(obj.ptr())) throw;
      return from_buffer(obj);
    }
  }
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
    throw_type("from_dlpack expects an object with __dlpack__ or an unconsumed 'dltensor' capsule");
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  const DLTensor& d = mt->dl_tensor;
  if (d.device.device_type != kDLCPU && d.device.device_type != kDLCUDAHost)
    throw_invalid("from_dlpack: only CPU tensors are supported here (device type ", int(d.device.device_type),
                  ")");
  DType dt = from_dl(d.dtype);
  Shape shape;
  for (int i = 0; i < d.ndim; ++i) shape.push_back(d.shape[i]);
  size_t es = dtype_size(dt);
  char* base = static_cast<char*>(d.data) + d.byte_offset;
  bool compact = true;
  int64_t expect = 1;
  for (int i = d.ndim - 1; i >= 0 && d.strides; --i) {
    if (d.shape[i] != 1 && d.strides[i] != expect) compact = false;
    expect *= d.shape[i];
  }
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  if (compact) {
    BufferPtr buf = wrap_external(
        base, shape.num_elements() * es,
        [](void* p) {
          auto* m = static_cast<DLManagedTensor*>(p);
          if (m->deleter) m->deleter(m);
        },
        mt);
    return Tensor(dt, shape, buf);
  }
  // Strided producers (e.g. a transposed view) are copied into a compact tensor.
  Tensor t = Tensor::empty(dt, shape);
  if (t.num_elements()) strided_copy(base, es, d.ndim, d.shape, d.strides, static_cast<char*>(t.raw()));
  if (mt->deleter) mt->deleter(mt);
  return t;
}

}  // namespace

void bind_dlpack(py::module_& m) {
  py::class_<Tensor> cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  cls.def(
      "__dlpack__",
      [](const Tensor& t, py::handle stream) {
        (void)stream;
        return to_dlpack(t);
      },
      py::arg("stream") = py::none());
  cls.def("__dlpack_device__", [](const Tensor& t) {
    return t.on_host() ? py::make_tuple(int(kDLCPU), 0) : py::make_tuple(int(kDLCUDA), t.device().index);
  });
  m.def("from_dlpack", &from_dlpack);
}

}  // namespace jf::py_bridge
