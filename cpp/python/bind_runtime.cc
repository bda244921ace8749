// Binds runtime introspection: counters, threads, allocator and LLVM host info.
#include <pybind11/stl.h>

#include "codegen/compile_cache.h"
#include "codegen/cpu/cpu_compiler.h"
#include "codegen/llvm_info.h"
#include "core/buffer.h"
#include "core/variables.h"
#include "kernels/kernels.h"
#include "python/bindings.h"
#include "runtime/gpu/cuda_driver.h"
#include "support/stats.h"
#include "support/thread_pool.h"

namespace jf::py_bridge {

namespace {
// Runtime warnings (a compiled cluster falling back to eager kernels, an assertion
// jit_compile drops) become Python RuntimeWarnings attributed to the user's line, as the
// Python side's are (jitflow.core.errors.warn); warnings configured as errors raise from the
// call.
void warn_in_python(const std::string& message) {
  py::gil_scoped_acquire gil;
  py::module_::import("jitflow.core.errors").attr("warn")(message);
}
// The disk cache's warnings never fail the call they happen in (it goes on without the
// entry), even where warnings are configured as errors.
void cache_warning_in_python(const std::string& message) {
  py::gil_scoped_acquire gil;
  if (PyErr_WarnEx(PyExc_RuntimeWarning, ("jitflow: " + message).c_str(), 1) < 0) PyErr_Clear();
}
}  // namespace

void bind_runtime(py::module_& m) {
  set_warn_hook(&warn_in_python);
  set_cache_warn_fn(&cache_warning_in_python);
  m.def("stats", &stats_snapshot);
  m.def("cpu_code_objects_loaded", &cpu_code_objects_loaded);
  m.def("cpu_tier_upgrades", &cpu_tier_upgrades);
  m.def("cpu_tier_upgrade_failures", &cpu_tier_upgrade_failures);
  m.def("cpu_wait_for_upgrades", &cpu_wait_for_upgrades, py::call_guard<py::gil_scoped_release>());
  m.def("reset_stats", &reset_stats);
  m.def("num_threads", &num_threads);
  m.def("set_num_threads", &set_num_threads);
  m.attr("max_threads") = kMaxThreads;
  m.def("reset_random_streams", &reset_random_streams);
  m.def("allocator_stats", [] {
    AllocatorStats s = allocator_stats();
    return py::dict(py::arg("allocations") = s.allocations, py::arg("cache_hits") = s.cache_hits,
                    py::arg("bytes_cached") = s.bytes_cached);
  });
  m.def("create_variable", &create_variable);
  m.def("destroy_variable", &destroy_variable);
  m.def("cuda_status", [] {
    const CudaStatus& s = cuda_status();
    return py::dict(py::arg("available") = s.available, py::arg("device_count") = s.device_count,
                    py::arg("driver_version") = s.driver_version, py::arg("error") = s.error);
  });
  m.def("cuda_device_name", &cuda_device_name);
  m.def("llvm_version", &llvm_version);
  m.def("llvm_host_cpu", &llvm_host_cpu);
  m.def("llvm_host_triple", &llvm_host_triple);
  // The CPU JIT's target: "triple|cpu|features" (JITFLOW_CPU overrides the host's CPU).
  m.def("cpu_jit_target", &cpu_target_description);
  m.def("cpu_jit_prepare", &cpu_jit_prepare);
  // The compile cache's private, verified store, for other compiled artifacts (AutoGraph's
  // converted code): the payload, or None for a miss or an entry that did not verify.
  m.def("disk_cache_load", [](const std::string& key) -> py::object {
    std::string payload;
    if (!disk_cache_load(key, &payload)) return py::none();
    return py::bytes(payload);
  });
  m.def("disk_cache_store", [](const std::string& key, const py::bytes& payload) {
    disk_cache_store(key, std::string(payload));
  });
}

}  // namespace jf::py_bridge
