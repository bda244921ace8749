// Eigen's non-blocking thread pool, sized from JITFLOW_NUM_THREADS or the core count.
#include "runtime/thread_pool.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

namespace jf {
namespace {

struct PoolState {
  std::unique_ptr<Eigen::ThreadPool> pool;
  std::unique_ptr<Eigen::ThreadPoolDevice> device;
  int n = 0;
};

PoolState& state() {
  static PoolState* s = [] {
    auto* st = new PoolState();
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* e = std::getenv("JITFLOW_NUM_THREADS")) n = std::atoi(e);
    if (n < 1) n = 1;
    st->n = n;
    st->pool = std::make_unique<Eigen::ThreadPool>(n);
    st->device = std::make_unique<Eigen::ThreadPoolDevice>(st->pool.get(), n);
    return st;
  }();
  return *s;
}

}  // namespace

const Eigen::ThreadPoolDevice& cpu_device() { return *state().device; }
int num_threads() { return state().n; }

void set_num_threads(int n) {
  PoolState& s = state();
  if (n < 1) n = 1;
  if (n == s.n) return;
  s.device.reset();
  s.pool = std::make_unique<Eigen::ThreadPool>(n);
  s.device = std::make_unique<Eigen::ThreadPoolDevice>(s.pool.get(), n);
  s.n = n;
}

void parallel_for_pool(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn) {
  cpu_device().parallelFor(n, Eigen::TensorOpCost(0, 0, cost_per_item), fn);
}

}  // namespace jf
