// A compiled GPU cluster's launches replayed as one CUDA graph: a run that repeats an earlier
// run's buffer addresses and dims (a training step on the same inputs and variables, whose
// pool blocks come back in a short cycle) costs one cuGraphLaunch instead of one launch per
// kernel and GEMM. The graph holds the same kernels with the same parameters, so a replay
// computes what a direct launch would.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <vector>

#include "runtime/gpu/gpu_device.h"

namespace jf {

class GraphCache {
 public:
  GraphCache() = default;
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache();

  // Enqueues one run on `device`'s stream. `launch` enqueues the run's work directly (kernel
  // launches and GEMMs, no allocation, copy or wait); `ptrs`, `params` and `mode` (the
  // GEMMs' math mode) are everything its launches depend on. A key seen before with a graph replays it; a key
  // seen once before without one is captured (launch() under stream capture), then replayed; otherwise, or
  // when the driver cannot capture, launch() runs as it is.
  void run(GpuDevice& device, const std::vector<CUdeviceptr>& ptrs, const std::vector<int64_t>& params,
           int64_t mode, const std::function<void()>& launch);

  // Off by $JITFLOW_GPU_GRAPHS=0 (to compare against kernel-by-kernel launches).
  static bool enabled();

 private:
  struct Graph {
    std::vector<CUdeviceptr> ptrs;
    std::vector<int64_t> params;
    int64_t mode = 0;
    void* exec = nullptr;
  };
  static constexpr size_t kMaxGraphs = 4, kMaxSeen = 8;
  std::list<Graph> graphs_;  // most recently used first
  std::list<size_t> seen_;   // key hashes of recent direct runs
  bool off_ = false;         // the driver could not capture: direct launches from now on
};

}  // namespace jf
