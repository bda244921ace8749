// Kernel launches for a cluster program on one device.
#include "runtime/gpu/gpu_launch.h"

#include <algorithm>

#include "support/errors.h"

namespace jf {

LaunchDims launch_dims(const Step& s, int64_t total, int64_t reduced_extent, int multiprocessors) {
  int64_t max_blocks = std::max<int64_t>(1, int64_t(multiprocessors) * 32);
  LaunchDims d;
  if (s.root->kind == KKind::kReduce) {
    int64_t threads = (std::max<int64_t>(1, reduced_extent) + 31) / 32 * 32;
    d.block = static_cast<unsigned>(std::min<int64_t>(threads, 256));
    d.grid = static_cast<unsigned>(std::clamp<int64_t>(total, 1, max_blocks));
  } else {
    d.block = 256;
    d.grid = static_cast<unsigned>(std::clamp<int64_t>((total + 255) / 256, 1, max_blocks));
  }
  return d;
}

void launch_program(GpuDevice& device, GpuModule& module, const ClusterProgram& p,
                    const std::vector<std::string>& kernel_names, const std::vector<CUdeviceptr>& buffers,
                    const std::vector<int64_t>& params, const std::vector<int64_t>& totals,
                    const std::vector<int64_t>& extents) {
  JF_CHECK(buffers.size() == static_cast<size_t>(p.num_buffers), "launch_program: one pointer per buffer");
  JF_CHECK(totals.size() == p.steps.size() && extents.size() == p.steps.size(),
           "launch_program: one total and extent per step");
  for (const Step& s : p.steps)
    if (s.kind == Step::kLibrary)
      throw_unimplemented(s.node->name, " (", s.node->type(),
                          "): library steps do not run on the GPU yet (cuBLAS is not wired in)");
  // The kernels read the pointer and parameter arrays from device memory.
  size_t ptr_bytes = buffers.size() * sizeof(CUdeviceptr),
         param_bytes = std::max<size_t>(1, params.size()) * 8;
  CUdeviceptr dbufs = device.allocate(ptr_bytes), dparams = device.allocate(param_bytes);
  try {
    device.copy_to_device(dbufs, buffers.data(), ptr_bytes);
    if (!params.empty()) device.copy_to_device(dparams, params.data(), params.size() * 8);
    size_t kernel = 0;
    for (size_t k = 0; k < p.steps.size(); ++k) {
      const std::string& name = kernel_names.at(kernel++);
      int64_t total = totals[k];
      if (total == 0) continue;
      LaunchDims d = launch_dims(p.steps[k], total, extents[k], device.multiprocessors());
      void* args[] = {&dbufs, &dparams, &total};
      unsigned shared = 0;  // reductions use a static 32-slot scratch
      device.make_current();
      cuda_check(cuda_api().cuLaunchKernel(module.function(name), d.grid, 1, 1, d.block, 1, 1, shared,
                                           device.stream(), args, nullptr),
                 ("cuLaunchKernel(" + name + ")").c_str());
    }
    device.synchronize();  // the arrays are released below; a failed kernel reports here too
  } catch (...) {
    device.release(dbufs, ptr_bytes);
    device.release(dparams, param_bytes);
    throw;
  }
  device.release(dbufs, ptr_bytes);
  device.release(dparams, param_bytes);
}

}  // namespace jf
