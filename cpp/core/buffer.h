// Refcounted, 64-byte-aligned device buffers, served from a caching allocator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace jf {

enum class DeviceType : uint8_t { kCPU = 0, kGPU = 1 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// A Buffer owns `bytes` of memory unless `release` says otherwise: external memory (DLPack,
// numpy) is kept alive by `owner` and freed by calling `release(owner)`.
struct Buffer {
  void* data = nullptr;
  size_t bytes = 0;
  size_t capacity = 0;  // bytes actually reserved (the allocator's size class)
  Device device;
  void (*release)(void*) = nullptr;
  void* owner = nullptr;
  ~Buffer();
};

using BufferPtr = std::shared_ptr<Buffer>;

// Allocates from the caching allocator (size classes, reused without returning to the OS).
// More than max_allocation_bytes() raises ResourceExhausted before anything is tried.
BufferPtr allocate_buffer(size_t bytes);
// The largest single host allocation attempted: the machine's physical memory, or the
// process's cgroup memory limit when lower (more could only fail, or get the process killed).
size_t max_allocation_bytes();
// Wraps memory owned by someone else; `release(owner)` runs when the last reference drops.
BufferPtr wrap_external(void* data, size_t bytes, void (*release)(void*), void* owner);

// Device memory belongs to the GPU runtime, which registers these hooks when it opens a device:
// core code (host reads of small values, conversions) copies through them without
// depending on the runtime. No hooks means no device buffers can exist.
struct DeviceHooks {
  BufferPtr (*allocate)(Device d, size_t bytes) = nullptr;
  // Copies between buffers on any devices (host<->device, device<->device); waits for it.
  void (*copy)(const Buffer& dst, size_t dst_offset, const Buffer& src, size_t src_offset,
               size_t bytes) = nullptr;
};
void set_device_hooks(const DeviceHooks& h);
const DeviceHooks& device_hooks();
// Memory on `d`: the caching host allocator for the CPU, the device's allocator otherwise.
BufferPtr allocate_on(Device d, size_t bytes);
// TF's full device name, "/job:localhost/replica:0/task:0/device:GPU:0".
std::string device_name(Device d);
// The short form users write in jf.device: "/GPU:0".
std::string short_device_name(Device d);

struct AllocatorStats {
  int64_t allocations = 0;   // requests served
  int64_t cache_hits = 0;    // requests served from the free lists
  int64_t bytes_cached = 0;  // bytes idle in the free lists
};
AllocatorStats allocator_stats();
void allocator_release_cached();

}  // namespace jf
