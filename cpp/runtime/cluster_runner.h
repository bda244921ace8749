// Runs a compiled cluster: fills the runtime parameters (dims, slice starts) from the
// concrete input shapes, allocates the materialized buffers, then runs the steps: JIT'd
// loops across the thread pool, matmuls on Eigen.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/cpu/cpu_compiler.h"
#include "codegen/kernel_ir.h"

namespace jf {

struct CompiledCluster {
  std::string name;   // cluster_0, ...
  std::string scope;  // _XlaScope of its members
  std::vector<std::string> op_names;
  std::unique_ptr<ClusterProgram> program;
  CpuKernels kernels;

  // inputs follow program->inputs; returns values for program->outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  struct Prepared {
    std::vector<Shape> input_shapes;
    std::vector<int64_t> params;
    std::vector<Shape> buffer_shapes;
    bool ok = false;
  };
  bool prepare(const std::vector<Tensor>& inputs, Prepared* p) const;
  std::vector<Tensor> run_eagerly(const std::vector<Tensor>& inputs) const;
  mutable std::mutex mu_;
  mutable std::shared_ptr<Prepared> last_;  // params for the last input shapes
};

}  // namespace jf
