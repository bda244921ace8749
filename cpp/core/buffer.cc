// Caching CPU allocator: power-of-two size classes with per-class free lists, so the many
// small tensors of eager execution never reach malloc after warm-up.
#include "core/buffer.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <vector>

#include "support/errors.h"

namespace jf {
namespace {

constexpr size_t kAlign = 64;
constexpr int kNumClasses = 40;
constexpr size_t kMaxCachedBytes = size_t(1) << 30;  // idle memory kept for reuse
// Small blocks also get a per-thread cache: the executor's many tiny tensors then skip
// the global lock entirely.
constexpr int kLocalClasses = 12;  // up to 128 KiB
constexpr size_t kLocalDepth = 32;

struct Pool {
  std::mutex mu;
  std::vector<void*> free_list[kNumClasses];
  AllocatorStats stats;  // bytes_cached under mu; the counters below are lock-free
  std::atomic<int64_t> allocations{0}, cache_hits{0};
};

Pool& pool() {
  static Pool* p = new Pool();  // leaked on purpose: buffers may die during static teardown
  return *p;
}

int size_class(size_t bytes, size_t* cap) {
  size_t c = kAlign;
  int k = 0;
  while (c < bytes) {
    c <<= 1;
    ++k;
  }
  *cap = c;
  return k;
}

struct LocalCache {
  std::vector<void*> lists[kLocalClasses];
  ~LocalCache();
};
thread_local LocalCache t_local;

void free_global(void* data, int k, size_t cap);

LocalCache::~LocalCache() {
  for (int k = 0; k < kLocalClasses; ++k)
    for (void* d : lists[k]) free_global(d, k, size_t(64) << k);
}

void free_to_pool(Buffer* b) {
  size_t cap;
  int k = size_class(b->capacity, &cap);
  if (k < kLocalClasses && t_local.lists[k].size() < kLocalDepth) {
    t_local.lists[k].push_back(b->data);
    return;
  }
  free_global(b->data, k, cap);
}

void free_global(void* data, int k, size_t cap) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  if (k < kNumClasses && p.stats.bytes_cached + cap <= kMaxCachedBytes) {
    p.free_list[k].push_back(data);
    p.stats.bytes_cached += cap;
  } else {
    std::free(data);
  }
}

// Physical memory, lowered to a cgroup (v2 or v1) memory limit when one is set.
size_t memory_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t limit = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : SIZE_MAX;
  for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(f);
    unsigned long long v = 0;
    if (in >> v && v > 0 && v < limit) limit = static_cast<size_t>(v);  // "max" does not parse
  }
  return limit;
}
}  // namespace

size_t max_allocation_bytes() {
  static const size_t limit = memory_limit();  // function-local: safe during static init
  return limit;
}

Buffer::~Buffer() {
  if (release)
    release(owner);
  else if (data)
    free_to_pool(this);
}

BufferPtr allocate_buffer(size_t bytes) {
  if (bytes > max_allocation_bytes())
    throw_resource_exhausted("OOM when allocating ", bytes, " bytes on ", device_name(Device{}),
                             " (the limit per allocation is this machine's memory, ", max_allocation_bytes(),
                             " bytes)");
  size_t cap;
  int k = size_class(bytes == 0 ? 1 : bytes, &cap);
  auto b = std::make_shared<Buffer>();
  b->bytes = bytes;
  b->capacity = cap;
  Pool& p = pool();
  p.allocations.fetch_add(1, std::memory_order_relaxed);
  if (k < kLocalClasses && !t_local.lists[k].empty()) {
    p.cache_hits.fetch_add(1, std::memory_order_relaxed);
    b->data = t_local.lists[k].back();
    t_local.lists[k].pop_back();
    return b;
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (k < kNumClasses && !p.free_list[k].empty()) {
      b->data = p.free_list[k].back();
      p.free_list[k].pop_back();
      p.stats.bytes_cached -= cap;
      p.cache_hits.fetch_add(1, std::memory_order_relaxed);
      return b;
    }
  }
  b->data = std::aligned_alloc(kAlign, cap);
  if (!b->data) throw_resource_exhausted("OOM when allocating ", bytes, " bytes on ", device_name(Device{}));
  return b;
}

BufferPtr wrap_external(void* data, size_t bytes, void (*release)(void*), void* owner) {
  auto b = std::make_shared<Buffer>();
  b->data = data;
  b->bytes = bytes;
  b->capacity = bytes;
  b->release = release;
  b->owner = owner;
  return b;
}

namespace {
DeviceHooks g_device_hooks;
}  // namespace

void set_device_hooks(const DeviceHooks& h) { g_device_hooks = h; }
const DeviceHooks& device_hooks() { return g_device_hooks; }

BufferPtr allocate_on(Device d, size_t bytes) {
  if (d.type == DeviceType::kCPU) return allocate_buffer(bytes);
  if (!g_device_hooks.allocate) throw_runtime("no GPU runtime is open: cannot allocate on ", device_name(d));
  return g_device_hooks.allocate(d, bytes);
}

std::string short_device_name(Device d) {
  return str_cat(d.type == DeviceType::kGPU ? "/GPU:" : "/CPU:", d.index);
}

std::string device_name(Device d) {
  return str_cat(
      "/job:localhost/replica:0/task:0/device:", d.type == DeviceType::kGPU ? "GPU:" : "CPU:", d.index);
}

AllocatorStats allocator_stats() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  AllocatorStats s = p.stats;
  s.allocations = p.allocations.load();
  s.cache_hits = p.cache_hits.load();
  return s;
}

void allocator_release_cached() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  for (auto& l : p.free_list) {
    for (void* d : l) std::free(d);
    l.clear();
  }
  p.stats.bytes_cached = 0;
}

}  // namespace jf
