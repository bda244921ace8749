// Caching CPU allocator: power-of-two size classes with per-class free lists, so the many
// small tensors of eager execution never reach malloc after warm-up.
#include "core/buffer.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "support/errors.h"

namespace jf {
namespace {

constexpr size_t kAlign = 64;
constexpr int kNumClasses = 40;
constexpr size_t kMaxCachedBytes = size_t(1) << 30;  // idle memory kept for reuse

struct Pool {
  std::mutex mu;
  std::vector<void*> free_list[kNumClasses];
  AllocatorStats stats;
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

void free_to_pool(Buffer* b) {
  size_t cap;
  int k = size_class(b->capacity, &cap);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  if (k < kNumClasses && p.stats.bytes_cached + cap <= kMaxCachedBytes) {
    p.free_list[k].push_back(b->data);
    p.stats.bytes_cached += cap;
  } else {
    std::free(b->data);
  }
}

}  // namespace

Buffer::~Buffer() {
  if (release) release(owner);
  else if (data) free_to_pool(this);
}

BufferPtr allocate_buffer(size_t bytes) {
  size_t cap;
  int k = size_class(bytes == 0 ? 1 : bytes, &cap);
  auto b = std::make_shared<Buffer>();
  b->bytes = bytes;
  b->capacity = cap;
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.stats.allocations++;
    if (k < kNumClasses && !p.free_list[k].empty()) {
      b->data = p.free_list[k].back();
      p.free_list[k].pop_back();
      p.stats.bytes_cached -= cap;
      p.stats.cache_hits++;
      return b;
    }
  }
  b->data = std::aligned_alloc(kAlign, cap);
  if (!b->data) throw_runtime("out of memory allocating ", bytes, " bytes");
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

AllocatorStats allocator_stats() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().stats;
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
