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
                    const std::vector<int64_t>& extents, const LibraryStepFn& library) {
  // One pointer per buffer, and the status word of the run-time checks after them (kernels
  // without checks never read it).
  JF_CHECK(buffers.size() == static_cast<size_t>(p.num_buffers) ||
               buffers.size() == static_cast<size_t>(p.num_buffers) + 1,
           "launch_program: one pointer per buffer (and the status word)");
  JF_CHECK(totals.size() == p.steps.size() && extents.size() == p.steps.size(),
           "launch_program: one total and extent per step");
  if (!library)
    for (const Step& s : p.steps)
      if (s.kind == Step::kLibrary)
        throw_unimplemented(s.node->name, " (", s.node->type(), "): no GPU library routine for this step");
  // The kernels read the pointer and parameter arrays from device memory.
  GpuDevice::Block dbufs(device, buffers.size() * sizeof(CUdeviceptr));
  GpuDevice::Block dparams(device, std::max<size_t>(1, params.size()) * 8);
  device.copy_to_device(dbufs.ptr, buffers.data(), dbufs.bytes);
  if (!params.empty()) device.copy_to_device(dparams.ptr, params.data(), params.size() * 8);
  size_t loop_index = 0;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (p.steps[k].kind == Step::kLibrary) {
      library(k);
      continue;
    }
    const std::string& name = kernel_names.at(loop_index++);
    int64_t total = totals[k];
    if (total == 0) continue;
    LaunchDims d = launch_dims(p.steps[k], total, extents[k], device.multiprocessors());
    void* args[] = {&dbufs.ptr, &dparams.ptr, &total};
    unsigned shared = 0;  // reductions use a static 32-slot scratch
    device.make_current();
    cuda_check(cuda_api().cuLaunchKernel(module.function(name), d.grid, 1, 1, d.block, 1, 1, shared,
                                         device.stream(), args, nullptr),
               ("cuLaunchKernel(" + name + ")").c_str());
  }
  device.synchronize();  // before the arrays are released; a failed kernel reports here too
}

}  // namespace jf
