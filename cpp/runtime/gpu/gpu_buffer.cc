// GPU buffers and the host<->device copies behind Tensor::to_device.
#include "runtime/gpu/gpu_buffer.h"

#include <cstring>
#include <vector>

#include "runtime/gpu/gpu_device.h"
#include "support/errors.h"

namespace jf {

namespace {
struct GpuBlock {
  GpuDevice* device;
  CUdeviceptr ptr;
  size_t bytes;
};

void release_block(void* owner) {
  auto* b = static_cast<GpuBlock*>(owner);
  b->device->release(b->ptr, b->bytes);
  delete b;
}

CUdeviceptr address(const Buffer& b, size_t offset) { return reinterpret_cast<CUdeviceptr>(b.data) + offset; }

void copy_buffers(const Buffer& dst, size_t doff, const Buffer& src, size_t soff, size_t n) {
  bool dgpu = dst.device.type == DeviceType::kGPU, sgpu = src.device.type == DeviceType::kGPU;
  if (!dgpu && !sgpu) {
    std::memcpy(static_cast<char*>(dst.data) + doff, static_cast<char*>(src.data) + soff, n);
  } else if (dgpu && !sgpu) {
    GpuDevice& d = GpuDevice::get(dst.device.index);
    d.copy_to_device(address(dst, doff), static_cast<char*>(src.data) + soff, n);
    d.synchronize();  // the host source may be freed as soon as we return
  } else if (!dgpu) {
    GpuDevice::get(src.device.index).copy_to_host(static_cast<char*>(dst.data) + doff, address(src, soff), n);
  } else if (dst.device == src.device) {
    GpuDevice& d = GpuDevice::get(dst.device.index);
    d.copy_on_device(address(dst, doff), address(src, soff), n);
  } else {  // between two GPUs: through the host (no peer access is set up)
    std::vector<char> host(n);
    GpuDevice::get(src.device.index).copy_to_host(host.data(), address(src, soff), n);
    GpuDevice& d = GpuDevice::get(dst.device.index);
    d.copy_to_device(address(dst, doff), host.data(), n);
    d.synchronize();
  }
}

BufferPtr allocate_hook(Device d, size_t bytes) { return allocate_gpu_buffer(d.index, bytes); }
}  // namespace

BufferPtr allocate_gpu_buffer(int device, size_t bytes) {
  GpuDevice& d = GpuDevice::get(device);
  auto* block = new GpuBlock{&d, 0, bytes};
  try {
    block->ptr = d.allocate(bytes);
  } catch (...) {
    delete block;
    throw;
  }
  BufferPtr b = wrap_external(reinterpret_cast<void*>(block->ptr), bytes, release_block, block);
  b->device = Device{DeviceType::kGPU, device};
  return b;
}

CUdeviceptr device_ptr(const Tensor& t) {
  JF_CHECK(t.buffer() && t.device().type == DeviceType::kGPU, "device_ptr of a host tensor ", t.desc());
  return reinterpret_cast<CUdeviceptr>(t.raw());
}

void install_gpu_hooks() {
  DeviceHooks h;
  h.allocate = allocate_hook;
  h.copy = copy_buffers;
  set_device_hooks(h);
}

}  // namespace jf
