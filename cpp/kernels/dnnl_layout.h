// What the oneDNN kernels share about the blocked activation layout a chain of convolutions
// and pools keeps (passes/conv_layout.cc): the engine, and the blocked layout of a tensor.
#pragma once
#include <dnnl.hpp>

namespace jf {

// The CPU engine every oneDNN primitive runs on.
dnnl::engine& dnnl_engine();
// An NCHW-dims float32 tensor in oneDNN's preferred blocked layout (nChw16c or nChw8c: only
// where conv_blocked_block() > 0).
dnnl::memory::desc dnnl_blocked_desc(const dnnl::memory::dims& dims);

}  // namespace jf
