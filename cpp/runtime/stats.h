// Process-wide counters exposed as jf.debugging.stats().
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
};

Stats& stats();
std::map<std::string, int64_t> stats_snapshot();
void reset_stats();

}  // namespace jf
