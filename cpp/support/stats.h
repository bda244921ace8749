// Process-wide counters exposed as jf.debugging.stats(), and the hook that shows warnings. In
// support/ because kernels (a TensorArrayWrite that copies) and the runtime both count here.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace jf {

struct Stats {
  std::atomic<int64_t> traces{0};
  std::atomic<int64_t> compilations{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> cluster_runs{0};
  std::atomic<int64_t> eager_ops{0};
  std::atomic<int64_t> graph_runs{0};
  // Runs of a compiled cluster on eager kernels (no compiled code ran), and compiled
  // specializations of a cluster for a new broadcast pattern of its inputs.
  std::atomic<int64_t> cluster_fallbacks{0};
  std::atomic<int64_t> specializations{0};
  // Bytes a TensorArrayWrite copied because it could not write its buffer in place (shared,
  // or grown): stays O(n) for n writes to a loop-carried array (kernels/tensor_array_ops.cc).
  std::atomic<int64_t> tensor_array_copied_bytes{0};
  // Runs of a fused row group (softmax, layer norm: codegen/fuse_rows.cc) in compiled code.
  std::atomic<int64_t> row_group_runs{0};
  // Matrix products run on a cluster's own compiled code instead of Eigen (codegen/cpu/cpu_dot.cc).
  std::atomic<int64_t> small_dot_runs{0};
  std::atomic<int64_t> skipped_branch_steps{0};  // steps of an inlined If's untaken branch
  // Whole loops whose iterations ran in the cluster's compiled loop driver (cpu_loop_driver.cc).
  std::atomic<int64_t> compiled_loop_driver_runs{0};
  // GPU cluster runs replayed as one CUDA graph launch, and the graphs captured for them
  // (runtime/gpu/gpu_graph.cc).
  std::atomic<int64_t> gpu_graph_launches{0};
  std::atomic<int64_t> gpu_graph_captures{0};
  // Loops run whole in compiled code (one cluster run per loop, not per iteration), the
  // iterations they ran, and loops set up so that could not for their inputs.
  std::atomic<int64_t> compiled_loop_runs{0};
  std::atomic<int64_t> compiled_loop_iterations{0};
  std::atomic<int64_t> compiled_loop_fallbacks{0};
  // Convolutions run with their bias add, activation or residual add as oneDNN post-ops
  // (FusedConv2D, made by passes/fuse_conv.cc).
  std::atomic<int64_t> conv_postop_runs{0};
  // Convolutions run with their input or output in oneDNN's blocked layout (a chain of them,
  // passes/conv_layout.cc), and the reorders to and from TF's layout at the chains' ends.
  std::atomic<int64_t> conv_blocked_runs{0};
  std::atomic<int64_t> conv_layout_reorders{0};
  // CPU compilations that took the small LLVM pipeline (kernels of few iterations, no
  // vectorizer: codegen/llvm_pipeline.h).
  std::atomic<int64_t> small_pipeline_compilations{0};
};

Stats& stats();
std::map<std::string, int64_t> stats_snapshot();
void reset_stats();

// A warning for the user (Python's RuntimeWarning once the bindings install their hook;
// stderr before). Called without the GIL.
using WarnHook = void (*)(const std::string& message);
void set_warn_hook(WarnHook hook);
void warn(const std::string& message);

}  // namespace jf
