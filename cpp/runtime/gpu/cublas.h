// GPU matmul through cuBLAS, loaded at run time like the driver (libcublas.so.13/.12/.11, or
// $JITFLOW_CUBLAS), so jitflow builds and imports without it.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "runtime/gpu/gpu_device.h"

namespace jf {

// y = alpha * (op(a) @ op(b)) for row-major tensors on `device`, with TF's batch
// broadcasting (y's leading dims; a and b may broadcast theirs). float32 and float64.
void gpu_matmul(GpuDevice& device, const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& y,
                double alpha = 1);
// TensorFloat-32 for float32 GEMMs (tf.config.experimental.enable_tensor_float_32_execution):
// on by default, as in TF; on GPUs without tensor cores for it cuBLAS computes in float32.
void set_tensor_float_32(bool enabled);
bool tensor_float_32();
// Whether cuBLAS could be loaded (never throws); `why` says why not.
bool cublas_available(std::string* why);

}  // namespace jf
