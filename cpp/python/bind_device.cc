// Binds placement: jf.device scopes, the device policy, Tensor.device and GPU counters.
#include <pybind11/stl.h>

#include <chrono>

#include "python/bindings.h"
#include "runtime/gpu/cublas.h"
#include "runtime/gpu/gpu_device.h"
#include "runtime/gpu/gpu_module.h"
#include "runtime/gpu/gpu_ops.h"
#include "runtime/placement.h"

namespace jf::py_bridge {

namespace {
Device make_device(const std::string& kind, int index) {
  return Device{kind == "GPU" ? DeviceType::kGPU : DeviceType::kCPU, index};
}
}  // namespace

void bind_device(py::module_& m) {
  m.def("push_device_scope", [](const std::string& kind, int index) {
    if (kind == "GPU") GpuDevice::get(index);  // opens the device now, or raises naming why not
    push_device_scope(make_device(kind, index));
  });
  m.def("pop_device_scope", &pop_device_scope);
  m.def("current_device_scope", [] {
    Device d;  // the CPU outside any scope
    device_scope(&d);
    return short_device_name(d);
  });
  m.def("set_device_policy", [](const std::string& p) {
    if (p != "silent" && p != "explicit")
      throw_invalid("device policy must be 'silent' or 'explicit', got '", p, "'");
    set_device_policy(p == "explicit" ? DevicePolicy::kExplicit : DevicePolicy::kSilent);
  });
  m.def("device_policy", [] { return device_policy() == DevicePolicy::kExplicit ? "explicit" : "silent"; });
  m.def("gpu_stats", [](int index) {
    GpuDevice::Stats s = GpuDevice::get(index).stats();
    GpuOpStats o = gpu_op_stats();
    return std::map<std::string, int64_t>{{"driver_allocations", s.driver_allocations},
                                          {"allocator_cache_hits", s.cache_hits},
                                          {"bytes_in_use", s.bytes_in_use},
                                          {"bytes_cached", s.bytes_cached},
                                          {"op_compilations", o.compilations},
                                          {"op_cache_hits", o.cache_hits},
                                          {"op_cpu_fallbacks", o.cpu_fallbacks},
                                          {"module_links", GpuModule::links()}};
  });
  m.def("cuda_compute_capability", [](int index) {
    GpuDevice::get(index);  // raises TF's error for a device that does not exist
    return cuda_compute_capability(index);
  });
  m.def("set_tensor_float_32", &set_tensor_float_32);
  m.def("tensor_float_32", &tensor_float_32);
  m.def("cublas_status", [] {
    std::string why;
    bool ok = cublas_available(&why);
    return py::make_tuple(ok, why);
  });
  // Waits for the device's queued work (benchmarks; compiled GPU runs do not wait) and
  // raises a failed run-time check of it.
  m.def(
      "gpu_synchronize", [](int index) { GpuDevice::get(index).synchronize(); }, py::arg("index") = 0,
      py::call_guard<py::gil_scoped_release>());
  // Seconds per device-to-device copy of `bytes` (benchmarks: the bandwidth baseline).
  m.def("gpu_time_copy", [](int index, size_t bytes, int iters) {
    GpuDevice& d = GpuDevice::get(index);
    py::gil_scoped_release release;
    GpuDevice::Block a(d, bytes), b(d, bytes);
    d.copy_on_device(b.ptr, a.ptr, bytes);
    d.synchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) d.copy_on_device(b.ptr, a.ptr, bytes);
    d.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  });
  py::class_<Tensor> cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  cls.def_property_readonly("device", [](const Tensor& t) { return device_name(t.device()); });
  cls.def(
      "_to_device",
      [](const Tensor& t, const std::string& kind, int index) {
        if (kind == "GPU") GpuDevice::get(index);
        py::gil_scoped_release release;
        return t.to_device(make_device(kind, index));
      },
      py::arg("kind"), py::arg("index"));
}

}  // namespace jf::py_bridge
