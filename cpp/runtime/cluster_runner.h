// Runs a compiled cluster: fills the runtime parameters (dims, slice starts) from the
// concrete input shapes, allocates the materialized buffers, then runs the steps: JIT'd
// loops across the thread pool, matmuls on Eigen.
#pragma once
#include <atomic>
#include <map>
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
struct GpuRunState;

struct CompiledCluster {
  std::string name;   // cluster_0, ...
  std::string scope;  // _XlaScope of its members
  std::string label;  // <function>.<cluster>: the dump and compile-cache label
  std::vector<std::string> op_names;
  std::unique_ptr<ClusterProgram> program;
  // Per program input: prepare() reads its value (a shape or slice bound), not only its shape.
  std::vector<char> value_inputs;
  CpuKernels kernels;
  std::vector<double> step_cost;  // per step: estimated cycles per output element
  bool must_compile = false;      // jit_compile=True: raise rather than run on eager kernels
  // A specialization owns the graph its program was lowered from (see specialized_for).
  std::shared_ptr<Graph> owned_graph;
  bool is_specialization = false;
  // A GPU cluster (gpu_device >= 0, set by compile_for_gpu) runs the loop steps as the
  // kernels of gpu_module (one entry per loop step) and its matmuls on cuBLAS.
  int gpu_device = -1;
  std::shared_ptr<GpuModule> gpu_module;
  std::vector<std::string> gpu_kernels;
  std::shared_ptr<GpuRunState> gpu_state;  // constants, launch plan, status word (gpu_cluster.cc)

  // inputs follow program->inputs; returns values for program->outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // A GPU cluster's run (runtime/gpu/gpu_cluster.cc). A defined into[k] (a device tensor of
  // output k's dtype and shape) receives output k in place of a fresh buffer.
  std::vector<Tensor> run_gpu(const std::vector<Tensor>& inputs, const std::vector<Tensor>& into = {}) const;

  // A While whose step graph (body, then the condition on its results) is this one cluster
  // runs here whole (jit_pass.cc): the shapes are prepared once, the loop variables live in
  // two buffers each that swap after every iteration, and no iteration returns to the
  // executor or allocates. `step_inputs` are the step graph's inputs (the loop variables,
  // the body's captures, the condition's); `in_of` gives per program input its index there,
  // `out_of` per step output (the variables, then the condition) the program output k >= 0
  // computing it, or -1 - v for a variable v passed through unchanged. Runs at most
  // `max_iter` iterations (< 0: no limit) while the condition holds, the first without
  // checking it (the executor did). Returns false, counted and warned once, when these
  // inputs cannot run as one loop (a variable changing shape, a variable read as a shape):
  // the executor then runs one step per iteration.
  bool run_loop(const std::vector<Tensor>& step_inputs, size_t num_vars, const std::vector<int64_t>& in_of,
                const std::vector<int64_t>& out_of, int64_t max_iter, std::vector<Tensor>* vars) const;
  int64_t loop_fallbacks() const { return loop_fallbacks_.load(); }
  std::string loop_fallback_reason() const;

  // Runs of this cluster (and its specializations) on eager kernels, and the last reason.
  int64_t fallbacks() const { return fallbacks_.load(); }
  std::string fallback_reason() const;
  int num_specializations() const;

 private:
  struct Prepared {
    std::vector<Shape> input_shapes;
    // The values of the small integer inputs prepare read (run-time reshape targets, slice
    // bounds): parameters computed from them hold only while they are the same.
    std::vector<std::vector<int64_t>> input_values;
    std::vector<int64_t> params;
    std::vector<Shape> buffer_shapes;
    std::vector<std::vector<TensorSpec>> step_specs;  // library steps: their node's output specs
    // Library steps: their node's input shapes (an argument's buffer may hold the value it
    // reshapes: lowering passes reshapes to library steps as views).
    std::vector<std::vector<Shape>> step_in_shapes;
    std::vector<char> library_out;  // per buffer: a library step allocates it
    std::string pattern;            // which input and member dims are 1 (the specialization key)
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
    std::vector<BufferPtr> loop_recycle;  // run_loop: each variable's second buffer
    void clear() {
      for (Tensor& t : bufs) t.reset();
      lib_in.clear();
      lib_out.clear();
    }
  };
  bool prepare(const std::vector<Tensor>& inputs, Prepared* p) const;
  bool run_loop_in(const Parked<RunState>& slot, const std::vector<Tensor>& step_inputs, size_t num_vars,
                   const std::vector<int64_t>& in_of, const std::vector<int64_t>& out_of, int64_t max_iter,
                   std::vector<Tensor>* vars) const;
  // st's parameters for these inputs, prepared again when their shapes (or read values)
  // changed; nullptr when they give another size-1 pattern than the program's.
  const Prepared* prepared_for(RunState& st, const std::vector<Tensor>& inputs, std::string* pattern) const;
  // Points ptrs at bufs (inputs, constants, then the materialized buffers, allocated).
  void bind_buffers(RunState& st, const Prepared& pr, const std::vector<Tensor>& inputs,
                    int64_t* status) const;
  // loop: split each step across threads by step_cost (run_loop) instead of the flat guess.
  void run_steps(RunState& st, const Prepared& pr, bool loop) const;
  void skip_step(RunState& st, const Prepared& pr, const Step& s) const;  // a branch not taken
  // A small product's DotParam array for these shapes; false when Eigen runs it (too large).
  bool small_dot_params(const Prepared& pr, size_t k, int64_t* dims) const;
  void write_array(RunState& st, const Prepared& pr, size_t k) const;  // step k: a TensorArrayWrite
  // Step k, a small product (is_small_dot_step), on its compiled code; false when it is larger
  // than that code takes (Eigen runs it).
  bool run_small_dot(RunState& st, const Prepared& pr, size_t k) const;
  bool loop_fall_back(const std::string& why) const;
  bool reads_value(size_t i, const Tensor& t) const {
    return i < value_inputs.size() && value_inputs[i] && shape_like_input(t);
  }
  static bool shape_like_input(const Tensor& t);
  [[noreturn]] void raise_check(int64_t status) const;
  Tensor member_value(size_t m, const std::vector<TensorSpec>& specs, const std::vector<Tensor>& views) const;
  // The eager kernels, when no compiled code can run these inputs: counted in stats(),
  // warned once per cluster, remembered for jf.explain; under jit_compile=True an error.
  std::vector<Tensor> fall_back(const std::vector<Tensor>& inputs, const std::string& why) const;
  std::vector<Tensor> run_eagerly(const std::vector<Tensor>& inputs) const;
  // The program's dims assume the size-1 pattern seen at trace time (an unknown dim is not
  // 1). Inputs giving another pattern (a None dim that is 1 at run time: broadcasting, a
  // slice of length 1) run a specialization lowered from the input shapes, which compiles to
  // the same program for every input shapes with the same size-1 dims: cached per pattern.
  struct Specialization {
    std::shared_ptr<const CompiledCluster> cluster;
    std::vector<int> input_of;  // per input of the specialization: the index in ours
    std::string error;          // when it could not be built
  };
  const Specialization& specialized_for(const std::vector<Tensor>& inputs, const std::string& pattern) const;
  std::shared_ptr<const CompiledCluster> specialize(const std::vector<Tensor>& inputs) const;
  mutable std::mutex spec_mu_;
  mutable std::map<std::string, Specialization> specializations_;  // by size-1 pattern
  mutable std::atomic<int64_t> fallbacks_{0};
  mutable std::atomic<bool> warned_{false};
  mutable std::atomic<int64_t> loop_fallbacks_{0};
  mutable std::atomic<bool> loop_warned_{false};
  mutable std::string loop_fallback_reason_;  // under spec_mu_
  mutable std::string fallback_reason_;       // under spec_mu_
  Parked<RunState> state_;
  Parked<RunState> learned_state_;  // run_loop after its first iteration gave an array its shape
};

// The JIT pass's ClusterCompiler: compiles a lowered cluster for the CPU (compile_cpu) or
// its GPU (compile_for_gpu) and counts a compilation or a cache hit in stats().
CompiledClusterRef compile_cluster(ClusterToCompile c);

}  // namespace jf
