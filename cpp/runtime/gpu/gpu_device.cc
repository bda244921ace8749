// GPU device state: context, stream and the caching allocator.
#include "runtime/gpu/gpu_device.h"

#include <memory>

#include "runtime/gpu/gpu_buffer.h"
#include "support/errors.h"

namespace jf {

namespace {
constexpr int kAttrMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
}

GpuDevice& GpuDevice::get(int index) {
  cuda_api();  // throws, naming why, without a usable GPU
  const CudaStatus& s = cuda_status();
  if (index < 0 || index >= s.device_count)
    throw_invalid("/GPU:", index, " does not exist: the driver reports ", s.device_count, " GPU(s)");
  static std::mutex mu;
  static std::map<int, std::unique_ptr<GpuDevice>>* devices = new std::map<int, std::unique_ptr<GpuDevice>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& d = (*devices)[index];
  if (!d) {
    d.reset(new GpuDevice(index));
    install_gpu_hooks();  // device tensors can exist from here on
  }
  return *d;
}

GpuDevice::GpuDevice(int index) : index_(index) {
  const CudaApi& api = cuda_api();
  int dev = 0;
  cuda_check(api.cuDeviceGet(&dev, index), "cuDeviceGet");
  cuda_check(api.cuDevicePrimaryCtxRetain(&context_, dev), "cuDevicePrimaryCtxRetain");
  make_current();
  cuda_check(api.cuStreamCreate(&stream_, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  sm_count_ = cuda_device_attribute(index, kAttrMultiprocessorCount);
}

void GpuDevice::make_current() const { cuda_check(cuda_api().cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

size_t GpuDevice::size_class(size_t bytes) {
  size_t c = 256;
  while (c < bytes) c <<= 1;
  return c;
}

CUdeviceptr GpuDevice::allocate(size_t bytes) {
  size_t c = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(c);
    if (it != free_.end() && !it->second.empty()) {
      CUdeviceptr p = it->second.back();
      it->second.pop_back();
      stats_.cache_hits++;
      stats_.bytes_cached -= c;
      stats_.bytes_in_use += c;
      return p;
    }
  }
  make_current();
  CUdeviceptr p = 0;
  CUresult r = cuda_api().cuMemAlloc_v2(&p, c);
  if (r != 0) {  // out of memory with blocks cached: give them back and try once more
    empty_cache();
    cuda_check(cuda_api().cuMemAlloc_v2(&p, c), "cuMemAlloc");
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.driver_allocations++;
  stats_.bytes_in_use += c;
  return p;
}

void GpuDevice::release(CUdeviceptr p, size_t bytes) {
  size_t c = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  free_[c].push_back(p);
  stats_.bytes_in_use -= c;
  stats_.bytes_cached += c;
}

void GpuDevice::empty_cache() {
  std::map<size_t, std::vector<CUdeviceptr>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    stats_.bytes_cached = 0;
  }
  make_current();
  synchronize(false);  // a cached block may still be read by queued work
  for (auto& kv : blocks)
    for (CUdeviceptr p : kv.second) cuda_check(cuda_api().cuMemFree_v2(p), "cuMemFree");
}

void GpuDevice::copy_to_device(CUdeviceptr dst, const void* src, size_t bytes) {
  auto lock = enqueue_lock();
  make_current();
  cuda_check(cuda_api().cuMemcpyHtoDAsync_v2(dst, src, bytes, stream_), "cuMemcpyHtoDAsync");
}

void GpuDevice::copy_to_host(void* dst, CUdeviceptr src, size_t bytes) {
  auto lock = enqueue_lock();
  make_current();
  cuda_check(cuda_api().cuMemcpyDtoHAsync_v2(dst, src, bytes, stream_), "cuMemcpyDtoHAsync");
  synchronize();
}

void GpuDevice::copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  auto lock = enqueue_lock();
  make_current();
  cuda_check(cuda_api().cuMemcpyDtoDAsync_v2(dst, src, bytes, stream_), "cuMemcpyDtoDAsync");
}

void GpuDevice::synchronize(bool check) {
  cuda_check(cuda_api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  if (!check) return;
  std::vector<std::weak_ptr<StatusWord>> words;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) return;
    words.swap(pending_);
  }
  std::shared_ptr<StatusWord> failed;
  int64_t code = 0;
  for (auto& weak : words)
    if (auto w = weak.lock()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        w->pending = false;
      }
      int64_t v = *static_cast<volatile int64_t*>(w->host);
      if (v && !failed) failed = w, code = v;
      *w->host = 0;
    }
  if (failed) failed->raise(code);
}

std::shared_ptr<GpuDevice::StatusWord> GpuDevice::status_word(std::function<void(int64_t)> raise) {
  constexpr unsigned kDeviceMap = 2;  // CU_MEMHOSTALLOC_DEVICEMAP
  make_current();
  auto w = std::make_shared<StatusWord>();
  void* host = nullptr;
  cuda_check(cuda_api().cuMemHostAlloc(&host, sizeof(int64_t), kDeviceMap), "cuMemHostAlloc");
  w->host = static_cast<int64_t*>(host);
  *w->host = 0;
  cuda_check(cuda_api().cuMemHostGetDevicePointer_v2(&w->device_address, host, 0),
             "cuMemHostGetDevicePointer");
  w->raise = std::move(raise);
  return w;
}

GpuDevice::StatusWord::~StatusWord() {
  if (host && cuda_status().available) cuda_api().cuMemFreeHost(host);
}

void GpuDevice::mark_pending(const std::shared_ptr<StatusWord>& w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (w->pending) return;
  w->pending = true;
  pending_.push_back(w);
}

GpuDevice::Stats GpuDevice::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace jf
