// Eager ops on a GPU: single-op kernels from the NVPTX path. Each op is lowered as a
// one-node cluster for its dtypes, ranks, size-1 dims and shape-input values, compiled
// once per device and kept; float matmuls go to cuBLAS through the same cluster runner.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/op_registry.h"

namespace jf {

// Runs the op on /GPU:<device> and returns true, or returns false when the op has no GPU
// kernel (stateful ops, ops or dtypes without an emitter): the caller runs it on the CPU.
// Data inputs must be on the device; shape inputs on the host.
bool gpu_run_op(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device,
                std::vector<Tensor>* out);

struct GpuOpStats {
  int64_t compilations = 0;   // single-op kernels built
  int64_t cache_hits = 0;     // runs that found their kernel built
  int64_t cpu_fallbacks = 0;  // GPU-placed ops run on the CPU (no GPU kernel)
};
GpuOpStats gpu_op_stats();

}  // namespace jf
