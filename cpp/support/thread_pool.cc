// The process-wide fork-join pool, sized from JITFLOW_NUM_THREADS or the core count.
//
// Why not Eigen's thread pool: a cluster run alternates short parallel loops with short
// serial steps, tens of microseconds each. Eigen's parallelFor overshards into many blocks
// and parks the caller on a barrier, and its workers park soon after going idle, so each
// parallel step paid a futex wake: a 128K-element fused loop took 65 us in a training step
// against 22 us on one thread. Here the caller runs one part itself, each worker gets one
// part through its own mailbox (no shared queue), and idle workers spin for a while before
// sleeping, so back-to-back regions start without a wake-up. A part is claimed by whoever
// gets to it first: when a worker has not started its part by the time the caller is done
// with its own (its core is busy with another process), the caller runs that part too,
// instead of waiting a scheduler time slice for the worker.
#include "support/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/errors.h"

namespace jf {
namespace {

using Fn = std::function<void(int64_t, int64_t)>;
// Idle workers spin this long before sleeping: longer than the serial steps between two
// parallel loops of a cluster run, short enough not to burn a core between calls.
std::atomic<int64_t> g_spin_us{200};  // set_pool_spin (tests)

thread_local bool t_in_region = false;  // a worker, or a caller inside a region

struct alignas(64) Mailbox {
  // Region sequence numbers: the last posted, claimed (by the worker or the caller, one
  // compare-and-swap decides) and finished by the worker.
  std::atomic<uint64_t> posted{0}, claimed{0}, finished{0};
  const Fn* fn = nullptr;
  int64_t begin = 0, end = 0;
  std::exception_ptr error;  // what the part threw, rethrown by the caller
  std::atomic<bool> sleeping{false};
  std::mutex mu;
  std::condition_variable cv;
};

class Pool {
 public:
  explicit Pool(int threads) : boxes_(std::max(0, threads - 1)) {
    try {
      workers_.reserve(boxes_.size());
      for (auto& b : boxes_) workers_.emplace_back([this, &b] { work(b); });
    } catch (const std::exception& e) {  // std::system_error: the system refused a thread
      stop_workers();
      throw_resource_exhausted("could not start ", threads, " threads for the intra-op thread pool (",
                               workers_.size() + 1, " started): ", e.what());
    }
  }
  ~Pool() { stop_workers(); }

  void stop_workers() {
    stop_ = true;
    for (auto& b : boxes_) {
      std::lock_guard<std::mutex> lock(b.mu);
      b.cv.notify_one();
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  // Idle workers sleep now rather than spin out their time: the caller goes on with a long
  // serial stretch (pool_rest).
  void rest() { rest_.fetch_add(1, std::memory_order_relaxed); }

  int sleeping() {
    int n = 0;
    for (auto& b : boxes_) n += b.sleeping.load();
    return n;
  }

  // Parts of `step` elements: workers take the first ones, the caller the last.
  void run(int64_t n, int64_t parts, int64_t step, const Fn& fn) {
    std::unique_lock<std::mutex> region(region_mu_, std::try_to_lock);
    if (!region.owns_lock()) return fn(0, n);  // another thread's region is running
    int64_t posted = std::min<int64_t>(parts - 1, static_cast<int64_t>(boxes_.size()));
    uint64_t seq = ++seq_;
    for (int64_t p = 0; p < posted; ++p) {
      Mailbox& b = boxes_[p];
      b.fn = &fn;
      b.begin = p * step;
      b.end = std::min(n, b.begin + step);
      b.posted.store(seq);
      if (b.sleeping.load()) {
        std::lock_guard<std::mutex> lock(b.mu);
        b.cv.notify_one();
      }
    }
    // The workers read fn from this frame: wait for them even when the caller's part throws.
    std::exception_ptr error;
    t_in_region = true;
    try {
      fn(posted * step, n);
    } catch (...) {
      error = std::current_exception();
    }
    for (int64_t p = 0; p < posted; ++p) {
      Mailbox& b = boxes_[p];
      if (claim(b, seq)) {  // its worker has not started: run the part here
        try {
          fn(b.begin, b.end);
        } catch (...) {
          if (!error) error = std::current_exception();
        }
        continue;
      }
      for (int spin = 0; b.finished.load(std::memory_order_acquire) != seq; ++spin)
        spin < 4096 ? _mm_pause() : std::this_thread::yield();
      if (b.error && !error) error = b.error;
      b.error = nullptr;
    }
    t_in_region = false;
    if (error) std::rethrow_exception(error);
  }

 private:
  std::vector<Mailbox> boxes_;
  std::vector<std::thread> workers_;
  std::mutex region_mu_;
  uint64_t seq_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rest_{0};

  // Takes region `seq`'s part of `b` unless someone already did (a worker that read an older
  // region's number, and woke late, fails too).
  static bool claim(Mailbox& b, uint64_t seq) {
    uint64_t last = b.claimed.load(std::memory_order_acquire);
    return last < seq && b.claimed.compare_exchange_strong(last, seq, std::memory_order_acq_rel);
  }

  void work(Mailbox& b) {
    t_in_region = true;
    uint64_t seen = 0;
    while (!stop_) {
      auto idle_since = std::chrono::steady_clock::now();
      const uint64_t rest = rest_.load(std::memory_order_relaxed);
      for (int spin = 1; b.posted.load(std::memory_order_acquire) == seen && !stop_; ++spin) {
        _mm_pause();
        if (spin % 256 == 0 && (rest_.load(std::memory_order_relaxed) != rest ||
                                std::chrono::steady_clock::now() - idle_since >
                                    std::chrono::microseconds(g_spin_us.load(std::memory_order_relaxed)))) {
          std::unique_lock<std::mutex> lock(b.mu);
          b.sleeping.store(true);
          b.cv.wait(lock, [&] { return b.posted.load() != seen || stop_; });
          b.sleeping.store(false);
        }
      }
      if (stop_) return;
      seen = b.posted.load(std::memory_order_acquire);
      if (!claim(b, seen)) continue;  // the caller ran it
      try {
        (*b.fn)(b.begin, b.end);
      } catch (...) {
        b.error = std::current_exception();
      }
      b.finished.store(seen, std::memory_order_release);
    }
  }
};

// The pool is swapped, not resized: a region running on the old one keeps it alive (and
// its workers running) until it ends.
struct PoolState {
  std::shared_ptr<Pool> pool;  // null when n == 1
  std::atomic<int> n{1};
  std::mutex mu;  // serializes resizes
  void resize(int threads) {
    std::lock_guard<std::mutex> lock(mu);
    threads = std::clamp(threads, 1, kMaxThreads);
    std::shared_ptr<Pool> fresh = threads > 1 ? std::make_shared<Pool>(threads) : nullptr;
    std::atomic_store(&pool, fresh);
    n = threads;
  }
};

PoolState& state() {
  static PoolState* s = [] {
    auto* st = new PoolState();  // leaked on purpose: workers must outlive static teardown
    int cores = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
    int n = cores;
    if (const char* e = std::getenv("JITFLOW_NUM_THREADS")) {
      // Read whole, in range: atoi would take "1e9" as 1 and 10**9 as a billion workers.
      char* end = nullptr;
      errno = 0;
      long v = std::strtol(e, &end, 10);
      if (*e && !*end && errno == 0 && v >= 1 && v <= kMaxThreads)
        n = static_cast<int>(v);
      else
        std::fprintf(stderr, "jitflow: JITFLOW_NUM_THREADS=%s is not a thread count in [1, %d]; using %d\n",
                     e, kMaxThreads, cores);
    }
    try {
      st->resize(n);
    } catch (const std::exception& e) {  // the system cannot start them: run single-threaded
      std::fprintf(stderr, "jitflow: %s; running single-threaded\n", e.what());
      st->resize(1);
    }
    return st;
  }();
  return *s;
}

void fork_join(int64_t n, int64_t parts, int64_t align, const Fn& fn) {
  // Nested regions run inline: a worker waiting on the pool could wait on itself.
  if (parts <= 1 || t_in_region) return fn(0, n);
  std::shared_ptr<Pool> pool = std::atomic_load(&state().pool);
  if (!pool) return fn(0, n);
  int64_t step = (n + parts - 1) / parts;
  step = (step + align - 1) / align * align;
  parts = (n + step - 1) / step;
  if (parts <= 1) return fn(0, n);
  pool->run(n, parts, step, fn);
}

}  // namespace

int num_threads() { return state().n; }

void set_num_threads(int64_t n) {
  if (n < 1 || n > kMaxThreads)
    throw_invalid("the number of intra-op threads must be in [1, ", kMaxThreads, "], got ", n);
  PoolState& s = state();
  if (n != s.n) s.resize(static_cast<int>(n));
}

// Parts are rounded to 64 elements so vector loops and cache lines are not split.
void parallel_for_pool(int64_t n, double cost_per_item, const Fn& fn) {
  int64_t parts = std::min<int64_t>(state().n, static_cast<int64_t>(n * cost_per_item / 5e4));
  fork_join(n, parts, n >= 128 * parts ? 64 : 1, fn);
}

void pool_rest() {
  if (std::shared_ptr<Pool> pool = std::atomic_load(&state().pool)) pool->rest();
}

void set_pool_spin(int64_t microseconds) { g_spin_us = microseconds; }

int pool_sleeping_workers() {
  std::shared_ptr<Pool> pool = std::atomic_load(&state().pool);
  return pool ? pool->sleeping() : 0;
}

void parallel_split(int64_t n, int64_t align, const Fn& fn) {
  fork_join(n, std::min<int64_t>(state().n, (n + align - 1) / align), align, fn);
}

}  // namespace jf
