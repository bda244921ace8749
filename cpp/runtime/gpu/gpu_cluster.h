// Compiled clusters on a GPU: the NVPTX module of a lowered cluster loaded on a device, and
// the NVPTX target chosen for the device. CompiledCluster::run_gpu runs them.
#pragma once
#include <string>

#include "runtime/cluster_runner.h"

namespace jf {

// The PTX target for /GPU:<device>: its compute capability, rounded down to one LLVM 16
// targets (sm_60, 70, 75, 80, 90); PTX for sm_80 is JIT-compiled for sm_86 and sm_89.
std::string gpu_arch(int device);
// Emits PTX for cc.program, loads it on the device and marks cc as a GPU cluster. Throws
// Unimplemented for library steps the GPU runtime has no routine for (only float matmuls
// have one: cuBLAS).
void compile_for_gpu(CompiledCluster& cc, int device, const std::string& label);

}  // namespace jf
