// Process-wide counters (jf.debugging.stats()) and the user-warning hook: below kernels and
// runtime, which both count and warn, so neither has to include the other.
#include "support/stats.h"

#include <cstdio>

namespace jf {

Stats& stats() {
  static Stats* s = new Stats();
  return *s;
}

std::map<std::string, int64_t> stats_snapshot() {
  Stats& s = stats();
  return {{"traces", s.traces},
          {"compilations", s.compilations},
          {"cache_hits", s.cache_hits},
          {"cluster_runs", s.cluster_runs},
          {"eager_ops", s.eager_ops},
          {"graph_runs", s.graph_runs},
          {"cluster_fallbacks", s.cluster_fallbacks},
          {"specializations", s.specializations},
          {"tensor_array_copied_bytes", s.tensor_array_copied_bytes},
          {"row_group_runs", s.row_group_runs},
          {"small_dot_runs", s.small_dot_runs},
          {"skipped_branch_steps", s.skipped_branch_steps},
          {"compiled_loop_driver_runs", s.compiled_loop_driver_runs},
          {"gpu_graph_launches", s.gpu_graph_launches},
          {"gpu_graph_captures", s.gpu_graph_captures},
          {"compiled_loop_runs", s.compiled_loop_runs},
          {"compiled_loop_iterations", s.compiled_loop_iterations},
          {"compiled_loop_fallbacks", s.compiled_loop_fallbacks},
          {"conv_postop_runs", s.conv_postop_runs},
          {"conv_blocked_runs", s.conv_blocked_runs},
          {"conv_layout_reorders", s.conv_layout_reorders},
          {"small_pipeline_compilations", s.small_pipeline_compilations}};
}

void reset_stats() {
  Stats& s = stats();
  s.traces = 0;
  s.compilations = 0;
  s.cache_hits = 0;
  s.cluster_runs = 0;
  s.eager_ops = 0;
  s.graph_runs = 0;
  s.cluster_fallbacks = 0;
  s.specializations = 0;
  s.tensor_array_copied_bytes = 0;
  s.row_group_runs = 0;
  s.small_dot_runs = 0;
  s.skipped_branch_steps = 0;
  s.compiled_loop_driver_runs = 0;
  s.gpu_graph_launches = 0;
  s.gpu_graph_captures = 0;
  s.compiled_loop_runs = 0;
  s.compiled_loop_iterations = 0;
  s.compiled_loop_fallbacks = 0;
  s.conv_postop_runs = 0;
  s.conv_blocked_runs = 0;
  s.conv_layout_reorders = 0;
  s.small_pipeline_compilations = 0;
}

static std::atomic<WarnHook> g_warn_hook{nullptr};
void set_warn_hook(WarnHook hook) { g_warn_hook = hook; }
void warn(const std::string& message) {
  if (WarnHook h = g_warn_hook.load()) return h(message);
  std::fprintf(stderr, "%s\n", message.c_str());
}

}  // namespace jf
