// What CollectiveAllReduce's kernel (kernels/collective_ops.cc) tells jf.distribute's Python side.
#pragma once

namespace jf {

// The rank whose failure notice a CollectiveAllReduce node received (the node raised
// UnavailableError naming it), or -1: a worker failing after that sends no notice of its own.
int collective_failed_rank();

// How many all-reduces the nodes ran and the seconds they spent in them (benchmarks, tests).
struct CollectiveStats {
  long long calls = 0;
  double seconds = 0;
};
CollectiveStats collective_stats();

}  // namespace jf
