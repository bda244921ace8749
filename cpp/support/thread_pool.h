// The process-wide thread pool that kernels and compiled loops split large work across.
#pragma once
#include <cstdint>
#include <functional>

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#include <unsupported/Eigen/CXX11/Tensor>

namespace jf {

// The most threads a parallel region uses. A larger count (set_num_threads, or
// JITFLOW_NUM_THREADS) is refused rather than tried: a billion workers cannot be started.
constexpr int kMaxThreads = 1024;

int num_threads();  // threads in a parallel region, the caller included
// n in [1, kMaxThreads], else InvalidArgumentError; ResourceExhaustedError when the system
// cannot start that many threads (the previous pool stays).
void set_num_threads(int64_t n);

// Splits [0, n) into one part per thread when the total cost is worth it.
void parallel_for_pool(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn);
// Splits [0, n) into one part per thread, each part a multiple of `align` (but the last).
void parallel_split(int64_t n, int64_t align, const std::function<void(int64_t, int64_t)>& fn);
// Lets idle workers sleep now instead of spinning out their 200 µs: the caller starts a long
// stretch of serial work (a compiled loop's iterations). A spinning worker costs a core, and
// on the development VM it slowed the loop beside it 2.5x in about half the processes.
void pool_rest();
// For tests: how long idle workers spin before sleeping (200 µs), and how many sleep now.
void set_pool_spin(int64_t microseconds);
int pool_sleeping_workers();

// Runs fn(begin, end) over [0, n); `cost_per_item` is in cycles. Small work runs inline
// without building a std::function (the eager fast path for tiny tensors).
template <class F>
inline void parallel_for(int64_t n, double cost_per_item, F&& fn) {
  if (n <= 0) return;
  if (n * cost_per_item < 1e5 || num_threads() == 1) {
    fn(int64_t(0), n);
    return;
  }
  parallel_for_pool(n, cost_per_item, std::function<void(int64_t, int64_t)>(std::forward<F>(fn)));
}

}  // namespace jf
