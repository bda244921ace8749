// One GPU as the runtime sees it: its primary context, one stream, a caching allocator
// (device memory is slow to allocate and free; freed blocks are kept per size class), and
// the status words of compiled code's run-time checks, read when the stream is synchronized.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/gpu/cuda_driver.h"

namespace jf {

class GpuDevice {
 public:
  // The device, initialized on first use; throws jf::Error without a usable GPU.
  static GpuDevice& get(int index);

  CUdeviceptr allocate(size_t bytes);  // a cached block of the size class, or cuMemAlloc
  void release(CUdeviceptr p, size_t bytes);
  // A block released when it goes out of scope (also when an exception passes).
  struct Block {
    Block(GpuDevice& d, size_t n) : device(d), bytes(n), ptr(d.allocate(n)) {}
    ~Block() { device.release(ptr, bytes); }
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    GpuDevice& device;
    size_t bytes;
    CUdeviceptr ptr;
  };
  void empty_cache();  // cuMemFree every cached block
  // Copies are ordered on the device's stream; copy_to_host waits for it.
  void copy_to_device(CUdeviceptr dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, CUdeviceptr src, size_t bytes);
  void copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  // Waits for the stream, then raises the first failed run-time check of the work it ran
  // (see StatusWord); check=false leaves the words for the next synchronization.
  void synchronize(bool check = true);
  void make_current() const;  // the context on the calling thread (driver calls need it)
  // Held by whoever enqueues work on the stream (copies, a run's launches), so a run
  // captured into a CUDA graph (gpu_graph.h) captures its own work and no other thread's.
  std::unique_lock<std::recursive_mutex> enqueue_lock() {
    return std::unique_lock<std::recursive_mutex>(enqueue_mu_);
  }
  void* stream() const { return stream_; }
  int index() const { return index_; }
  int multiprocessors() const { return sm_count_; }

  // A run-time check's status word (kernel_ir.h: CheckKind) in page-locked host memory the
  // device writes through `device_address`: kernels that find a bad value store its code,
  // and nothing is copied or awaited per run. A run marks the word pending; synchronize()
  // reads pending words and calls `raise` with a nonzero code (after zeroing it), so an
  // error surfaces at the next synchronization, as CUDA's asynchronous errors do.
  struct StatusWord {
    int64_t* host = nullptr;
    CUdeviceptr device_address = 0;
    std::function<void(int64_t)> raise;
    bool pending = false;  // under the device's lock
    ~StatusWord();
  };
  std::shared_ptr<StatusWord> status_word(std::function<void(int64_t)> raise);
  void mark_pending(const std::shared_ptr<StatusWord>& w);

  struct Stats {
    int64_t driver_allocations = 0, cache_hits = 0, bytes_cached = 0, bytes_in_use = 0;
  };
  Stats stats() const;
  static size_t size_class(size_t bytes);  // 256 B up, powers of two

 private:
  explicit GpuDevice(int index);
  int index_ = 0, sm_count_ = 0;
  void* context_ = nullptr;
  void* stream_ = nullptr;
  mutable std::mutex mu_;
  std::recursive_mutex enqueue_mu_;
  std::map<size_t, std::vector<CUdeviceptr>> free_;  // size class -> cached blocks
  Stats stats_;
  std::vector<std::weak_ptr<StatusWord>> pending_;  // under mu_
};

}  // namespace jf
