// The process-wide Eigen thread pool that eager kernels split large work across.
#pragma once
#include <cstdint>
#include <functional>

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

namespace jf {

// Shared Eigen device: its parallelFor uses a cost model so tiny tensors stay on one thread.
const Eigen::ThreadPoolDevice& cpu_device();
int num_threads();
void set_num_threads(int n);

// Runs fn(begin, end) over [0, n) in blocks; `cost_per_item` is in cycles for the cost model.
void parallel_for(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace jf
