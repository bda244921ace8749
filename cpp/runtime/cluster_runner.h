// Runs a compiled cluster: fills the runtime parameters (dims, slice starts) from the
// concrete input shapes, allocates the materialized buffers, then runs the steps: JIT'd
// loops across the thread pool, matmuls on Eigen.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/cpu/cpu_compiler.h"
#include "codegen/jit_pass.h"
#include "codegen/kernel_ir.h"
#include "runtime/parked.h"

namespace jf {

class GpuModule;

struct CompiledCluster {
  std::string name;   // cluster_0, ...
  std::string scope;  // _XlaScope of its members
  std::vector<std::string> op_names;
  std::unique_ptr<ClusterProgram> program;
  CpuKernels kernels;
  // A GPU cluster (gpu_device >= 0, set by compile_for_gpu) runs the loop steps as the
  // kernels of gpu_module (one entry per loop step) and its matmuls on cuBLAS.
  int gpu_device = -1;
  std::shared_ptr<GpuModule> gpu_module;
  std::vector<std::string> gpu_kernels;

  // inputs follow program->inputs; returns values for program->outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  struct Prepared {
    std::vector<Shape> input_shapes;
    std::vector<int64_t> params;
    std::vector<Shape> buffer_shapes;
    std::vector<std::vector<TensorSpec>> step_specs;  // library steps: their node's output specs
    std::vector<char> library_out;                    // per buffer: a library step allocates it
    bool ok = false;
  };
  // What a run needs besides its inputs, parked between runs like the executor's arena:
  // the parameters for the last input shapes, buffer vectors, and each small materialized
  // buffer from the last run, reused when nothing else holds it.
  struct RunState {
    std::unique_ptr<Prepared> prepared;
    std::vector<Tensor> bufs, lib_in, lib_out;
    std::vector<char*> ptrs;
    std::vector<BufferPtr> recycle;
    void clear() {
      for (Tensor& t : bufs) t.reset();
      lib_in.clear();
      lib_out.clear();
    }
  };
  bool prepare(const std::vector<Tensor>& inputs, Prepared* p) const;
  std::vector<Tensor> run_eagerly(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> run_gpu(const std::vector<Tensor>& inputs) const;  // runtime/gpu/gpu_cluster.cc
  Parked<RunState> state_;
  mutable std::mutex gpu_mu_;
  mutable std::vector<Tensor> gpu_constants_;  // program constants, uploaded on first run
};

// The JIT pass's ClusterCompiler: compiles a lowered cluster for the CPU (compile_cpu) or
// its GPU (compile_for_gpu) and counts a compilation or a cache hit in stats().
CompiledClusterRef compile_cluster(ClusterToCompile c);

}  // namespace jf
