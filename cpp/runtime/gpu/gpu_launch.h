// Launching a cluster's PTX kernels: launch dimensions per step and the launch itself. Each
// kernel is `k(bufs, params, i64 total)` (codegen/nvptx): the buffer and parameter tables go
// by value as kernel parameters, or (tables too large for them) as device copies.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"
#include "runtime/gpu/gpu_module.h"

namespace jf {

struct LaunchDims {
  unsigned grid = 1, block = 1;
};

// Elementwise steps: 256 threads a block, each taking elementwise_unroll(s) elements a
// trip, and enough blocks to fill the device (32 per multiprocessor), the grid-stride loop covering the rest.
// Reduction steps: one block per output element (grid-stride over outputs), a multiple of 32 threads up to
// 256, fewer when the reduced extent is small. Row groups: likewise, a block per row (`total` rows of
// `reduced_extent` elements).
LaunchDims launch_dims(const Step& s, int64_t total, int64_t reduced_extent, int multiprocessors);

// What the launches of one program need besides the tables, worked out once per input
// shapes: per step the kernel (null for library steps), its dims and output elements (rows,
// for a row group).
struct LaunchPlan {
  bool tables_by_value = false;
  std::vector<void*> functions;
  std::vector<std::string> names;  // the entries, for errors
  std::vector<LaunchDims> dims;
  std::vector<int64_t> totals, extents;
};
// `kernel_names` are the PTX module's entries, one per loop step; `totals` and `extents` per
// step the output elements and reduced extent.
void plan_launches(GpuDevice& device, GpuModule& module, const ClusterProgram& p,
                   const std::vector<std::string>& kernel_names, bool tables_by_value,
                   const std::vector<int64_t>& totals, const std::vector<int64_t>& extents, LaunchPlan* plan);

// Runs the steps of `p` on the device's stream, in order, without waiting for them.
// `buffers` holds one device pointer per program buffer and the status word after them,
// `params` the dims. Library steps (matmul) are handed to `library`, which enqueues them on
// the same stream; without one they raise naming the op.
using LibraryStepFn = std::function<void(size_t step)>;
void launch_planned(GpuDevice& device, const ClusterProgram& p, const LaunchPlan& plan,
                    const std::vector<CUdeviceptr>& buffers, const std::vector<int64_t>& params,
                    const LibraryStepFn& library = nullptr);

// plan_launches then launch_planned, for one run.
void launch_program(GpuDevice& device, GpuModule& module, const ClusterProgram& p,
                    const std::vector<std::string>& kernel_names, bool tables_by_value,
                    const std::vector<CUdeviceptr>& buffers, const std::vector<int64_t>& params,
                    const std::vector<int64_t>& totals, const std::vector<int64_t>& extents,
                    const LibraryStepFn& library = nullptr);

}  // namespace jf
