// Capture and replay of a cluster's launches (CUDA graphs through the driver API).
#include "runtime/gpu/gpu_graph.h"

#include <algorithm>
#include <cstdlib>

#include "support/errors.h"
#include "support/stats.h"

namespace jf {

namespace {
constexpr int kCaptureThreadLocal = 1;  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

size_t key_hash(const std::vector<CUdeviceptr>& ptrs, const std::vector<int64_t>& params, int64_t mode) {
  size_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (CUdeviceptr p : ptrs) mix(p);
  mix(~0ull);
  for (int64_t v : params) mix(static_cast<uint64_t>(v));
  mix(static_cast<uint64_t>(mode));
  return h;
}

bool driver_can_capture(const CudaApi& api) {
  return api.cuStreamBeginCapture_v2 && api.cuStreamEndCapture && api.cuGraphInstantiateWithFlags &&
         api.cuGraphLaunch && api.cuGraphExecDestroy && api.cuGraphDestroy;
}
}  // namespace

bool GraphCache::enabled() {
  static const bool on = [] {
    const char* env = std::getenv("JITFLOW_GPU_GRAPHS");
    return !(env && std::string(env) == "0");
  }();
  return on;
}

GraphCache::~GraphCache() {
  if (!cuda_status().available) return;
  for (Graph& g : graphs_)
    if (g.exec) cuda_api().cuGraphExecDestroy(g.exec);
}

void GraphCache::run(GpuDevice& device, const std::vector<CUdeviceptr>& ptrs,
                     const std::vector<int64_t>& params, int64_t mode, const std::function<void()>& launch) {
  const CudaApi& api = cuda_api();
  if (!enabled() || !driver_can_capture(api)) {
    launch();
    return;
  }
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    if (it->mode != mode || it->ptrs != ptrs || it->params != params) continue;
    graphs_.splice(graphs_.begin(), graphs_, it);
    device.make_current();
    cuda_check(api.cuGraphLaunch(it->exec, device.stream()), "cuGraphLaunch");
    stats().gpu_graph_launches.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (off_) {
    launch();
    return;
  }
  const size_t h = key_hash(ptrs, params, mode);
  if (std::find(seen_.begin(), seen_.end(), h) == seen_.end()) {
    seen_.push_front(h);
    if (seen_.size() > kMaxSeen) seen_.pop_back();
    launch();
    return;
  }
  device.make_current();
  if (api.cuStreamBeginCapture_v2(device.stream(), kCaptureThreadLocal) != 0) {
    off_ = true;  // e.g. a driver that cannot capture this stream: nothing was enqueued
    launch();
    return;
  }
  void* graph = nullptr;
  bool captured = true;
  try {
    launch();
  } catch (const Error&) {
    captured = false;  // a call the capture refused; a real error shows again below
  }
  CUresult r = api.cuStreamEndCapture(device.stream(), &graph);  // leaves the stream usable
  void* exec = nullptr;
  if (captured && r == 0 && graph) r = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (graph) api.cuGraphDestroy(graph);
  if (!captured || r != 0 || !exec) {
    // The capture recorded the run's work without running it: run it now, and launch
    // directly from here on (something in the run cannot be captured).
    off_ = true;
    launch();
    return;
  }
  stats().gpu_graph_captures.fetch_add(1, std::memory_order_relaxed);
  graphs_.push_front(Graph{ptrs, params, mode, exec});
  seen_.remove(h);
  if (graphs_.size() > kMaxGraphs) {
    api.cuGraphExecDestroy(graphs_.back().exec);
    graphs_.pop_back();
  }
  cuda_check(api.cuGraphLaunch(exec, device.stream()), "cuGraphLaunch");
  stats().gpu_graph_launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace jf
