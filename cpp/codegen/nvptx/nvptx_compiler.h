// The GPU backend: the same elemental emitter wrapped in grid-stride kernels, libdevice
// linked for transcendental functions, and LLVM's NVPTX backend producing PTX text.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"

namespace jf {

struct PtxModule {
  std::string ptx;
  std::vector<std::string> kernels;  // entry names, one per loop step (library steps excluded)
  std::string arch;
  bool from_cache = false;  // loaded from the on-disk compile cache
  // The buffer and parameter tables are kernel parameters (arrays of num_buffers + 1 and
  // max(1, num_params) 64-bit entries), not pointers to device memory: see emit_ptx.
  bool tables_by_value = false;
};

// Kernel parameter space every CUDA GPU offers; larger tables go through device memory.
constexpr size_t kMaxKernelParamBytes = 4096;

// Compiles the loop steps of a program to PTX for `arch` ("sm_80", "sm_90", ...). Works
// without a GPU. Each kernel is `void k(bufs, params, i64 total)` and covers output elements
// [0, total) with a grid-stride loop; bufs and params are the tables by value when they fit
// the kernel parameter space (tables_by_value), else pointers to device copies.
PtxModule emit_ptx(const ClusterProgram& p, const std::string& label, const std::string& arch);

// Elements a thread of the step's elementwise kernel takes per trip: 4 for cheap
// (memory-bound) steps, 1 otherwise; $JITFLOW_GPU_UNROLL=1|2|4 forces one for every step.
// launch_dims sizes the grid by it.
int elementwise_unroll(const Step& s);

// Path of libdevice (CUDA toolkit), or "" when not found.
std::string libdevice_path();

}  // namespace jf
