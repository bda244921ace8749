// Kernel launches for a cluster program on one device.
#include "runtime/gpu/gpu_launch.h"

#include <algorithm>

#include "codegen/nvptx/nvptx_compiler.h"
#include "support/errors.h"

namespace jf {

LaunchDims launch_dims(const Step& s, int64_t total, int64_t reduced_extent, int multiprocessors) {
  int64_t max_blocks = std::max<int64_t>(1, int64_t(multiprocessors) * 32);
  LaunchDims d;
  if (s.kind == Step::kRowGroup || s.root->kind == KKind::kReduce) {
    int64_t threads = (std::max<int64_t>(1, reduced_extent) + 31) / 32 * 32;
    d.block = static_cast<unsigned>(std::min<int64_t>(threads, 256));
    d.grid = static_cast<unsigned>(std::clamp<int64_t>(total, 1, max_blocks));
  } else {
    d.block = 256;
    const int64_t per_block = 256 * elementwise_unroll(s);
    d.grid = static_cast<unsigned>(std::clamp<int64_t>((total + per_block - 1) / per_block, 1, max_blocks));
  }
  return d;
}

void plan_launches(GpuDevice& device, GpuModule& module, const ClusterProgram& p,
                   const std::vector<std::string>& kernel_names, bool tables_by_value,
                   const std::vector<int64_t>& totals, const std::vector<int64_t>& extents,
                   LaunchPlan* plan) {
  JF_CHECK(totals.size() == p.steps.size() && extents.size() == p.steps.size(),
           "plan_launches: one total and extent per step");
  plan->tables_by_value = tables_by_value;
  plan->totals = totals;
  plan->extents = extents;
  plan->functions.assign(p.steps.size(), nullptr);
  plan->dims.assign(p.steps.size(), LaunchDims{});
  plan->names.assign(p.steps.size(), std::string());
  size_t loop_index = 0;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (p.steps[k].kind == Step::kLibrary) continue;
    plan->names[k] = kernel_names.at(loop_index++);
    plan->functions[k] = module.function(plan->names[k]);
    plan->dims[k] = launch_dims(p.steps[k], totals[k], extents[k], device.multiprocessors());
  }
}

void launch_planned(GpuDevice& device, const ClusterProgram& p, const LaunchPlan& plan,
                    const std::vector<CUdeviceptr>& buffers, const std::vector<int64_t>& params,
                    const LibraryStepFn& library) {
  JF_CHECK(buffers.size() == static_cast<size_t>(p.num_buffers) + 1,
           "launch_planned: one pointer per buffer and the status word");
  if (!library)
    for (const Step& s : p.steps)
      if (s.kind == Step::kLibrary)
        throw_unimplemented(s.node->name, " (", s.node->type(), "): no GPU library routine for this step");
  // By value, the kernel parameters are the host tables themselves (a parameter table holds
  // at least one entry, as the kernels declare it); else device copies of them.
  std::vector<int64_t> one_param(1, 0);
  const std::vector<int64_t>& ptable = params.empty() ? one_param : params;
  std::unique_ptr<GpuDevice::Block> dbufs, dparams;
  CUdeviceptr bufs_arg = 0, params_arg = 0;
  if (!plan.tables_by_value) {
    dbufs = std::make_unique<GpuDevice::Block>(device, buffers.size() * sizeof(CUdeviceptr));
    dparams = std::make_unique<GpuDevice::Block>(device, ptable.size() * 8);
    device.copy_to_device(dbufs->ptr, buffers.data(), dbufs->bytes);
    device.copy_to_device(dparams->ptr, ptable.data(), ptable.size() * 8);
    bufs_arg = dbufs->ptr, params_arg = dparams->ptr;
  }
  device.make_current();
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (p.steps[k].kind == Step::kLibrary) {
      library(k);
      continue;
    }
    int64_t total = plan.totals[k];
    if (total == 0) continue;
    const LaunchDims& d = plan.dims[k];
    void* args[3];
    if (plan.tables_by_value) {
      args[0] = const_cast<CUdeviceptr*>(buffers.data());
      args[1] = const_cast<int64_t*>(ptable.data());
    } else {
      args[0] = &bufs_arg;
      args[1] = &params_arg;
    }
    args[2] = &total;
    unsigned shared = 0;  // reductions use a static 32-slot scratch
    CUresult r = cuda_api().cuLaunchKernel(plan.functions[k], d.grid, 1, 1, d.block, 1, 1, shared,
                                           device.stream(), args, nullptr);
    if (r != 0) cuda_check(r, ("cuLaunchKernel(" + plan.names[k] + ")").c_str());
  }
  // The table copies go back to the pool now: whatever reuses them is queued behind these
  // kernels on the same stream.
}

void launch_program(GpuDevice& device, GpuModule& module, const ClusterProgram& p,
                    const std::vector<std::string>& kernel_names, bool tables_by_value,
                    const std::vector<CUdeviceptr>& buffers, const std::vector<int64_t>& params,
                    const std::vector<int64_t>& totals, const std::vector<int64_t>& extents,
                    const LibraryStepFn& library) {
  LaunchPlan plan;
  plan_launches(device, module, p, kernel_names, tables_by_value, totals, extents, &plan);
  launch_planned(device, p, plan, buffers, params, library);
}

}  // namespace jf
