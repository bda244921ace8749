// What the oneDNN kernels share about the blocked activation layout a chain of convolutions
// and pools keeps (passes/conv_layout.cc): the engine, and the blocked layout of a tensor.
#pragma once
#include <omp.h>

#include <dnnl.hpp>

namespace jf {

// The CPU engine every oneDNN primitive runs on.
dnnl::engine& dnnl_engine();
// An NCHW-dims float32 tensor in oneDNN's preferred blocked layout (nChw16c or nChw8c: only
// where conv_blocked_block() > 0).
dnnl::memory::desc dnnl_blocked_desc(const dnnl::memory::dims& dims);

// oneDNN's kernels on the calling thread only, from before a primitive is made until it has
// run: its OpenMP team and our pool would fight for the cores (a CNN step ran 10x slower in
// oneDNN with a team of two on two cores; the batch is split over the pool instead), and
// oneDNN sizes a primitive's work split by the threads it sees when it is made (one made for
// two threads and run on one was 40x slower).
struct OneThread {
  int saved = omp_get_max_threads();
  OneThread() {
    if (saved != 1) omp_set_num_threads(1);
  }
  ~OneThread() {
    if (saved != 1) omp_set_num_threads(saved);
  }
};

}  // namespace jf
