// Launching a cluster's PTX kernels: launch dimensions per step and the launch itself. Each
// kernel is `k(ptr bufs, ptr params, i64 total)` (codegen/nvptx): bufs and params live in
// device memory, uploaded once per run.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "codegen/kernel_ir.h"
#include "runtime/gpu/gpu_module.h"

namespace jf {

struct LaunchDims {
  unsigned grid = 1, block = 1;
};

// Elementwise steps: 256 threads a block and enough blocks to fill the device (32 per
// multiprocessor), the grid-stride loop covering the rest. Reduction steps: one block per
// output element (grid-stride over outputs), a multiple of 32 threads up to 256, fewer
// when the reduced extent is small.
LaunchDims launch_dims(const Step& s, int64_t total, int64_t reduced_extent, int multiprocessors);

// Runs the steps of `p` on the device, in order, on the device's stream. `kernel_names`
// are the PTX module's entries, one per loop step; `buffers` holds one device pointer per
// program buffer (all allocated), `params` the dims, `totals` and `extents` per step the
// output elements and reduced extent. Library steps (matmul) are handed to `library`, which
// enqueues them on the same stream; without one they raise naming the op.
using LibraryStepFn = std::function<void(size_t step)>;
void launch_program(GpuDevice& device, GpuModule& module, const ClusterProgram& p,
                    const std::vector<std::string>& kernel_names, const std::vector<CUdeviceptr>& buffers,
                    const std::vector<int64_t>& params, const std::vector<int64_t>& totals,
                    const std::vector<int64_t>& extents, const LibraryStepFn& library = nullptr);

}  // namespace jf
