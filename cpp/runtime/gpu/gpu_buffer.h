// Tensors in GPU memory: buffers from a GpuDevice's caching allocator, returned to it when
// the last tensor drops them, and the copies core code makes through DeviceHooks.
#pragma once
#include "core/tensor.h"
#include "runtime/gpu/cuda_driver.h"

namespace jf {

// A buffer of `bytes` on /GPU:<device>.
BufferPtr allocate_gpu_buffer(int device, size_t bytes);
// The device address of t's first element (t must be on a GPU).
CUdeviceptr device_ptr(const Tensor& t);
// Registers allocate/copy with core (set_device_hooks); GpuDevice::get calls it once.
void install_gpu_hooks();

}  // namespace jf
