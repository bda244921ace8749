// The fork-join pool: every element covered once, parts aligned, exceptions from any part
// reach the caller (after every part ended), nested regions run inline, idle workers sleep
// when told to (pool_rest).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/thread_pool.h"

namespace jf {
namespace {

TEST(ThreadPool, SplitCoversEveryElementOnceWithAlignedParts) {
  set_num_threads(3);
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int> parts{0};
  parallel_split(1000, 16, [&](int64_t b, int64_t e) {
    EXPECT_EQ(b % 16, 0);
    ++parts;
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  EXPECT_EQ(parts.load(), 3);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  set_num_threads(2);
}

TEST(ThreadPool, ExceptionsFromAnyPartReachTheCaller) {
  set_num_threads(2);
  for (int64_t bad : {int64_t(0), int64_t(999)}) {  // a worker's part, then the caller's
    std::atomic<int64_t> done{0};
    EXPECT_THROW(parallel_split(1000, 1,
                                [&](int64_t b, int64_t e) {
                                  if (b <= bad && bad < e) throw std::runtime_error("part failed");
                                  done += e - b;
                                }),
                 std::runtime_error);
    EXPECT_EQ(done.load(), 500);  // the other part ran to its end before the rethrow
  }
  std::atomic<int64_t> sum{0};  // the pool still works
  parallel_split(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100);
}

// A part whose worker has not started when the caller is done is run by the caller, so a
// busy core (here: every worker's core taken by a spinning thread) delays a region by at most
// the parts already started, never by a scheduler time slice per region. Every element is
// still covered exactly once.
TEST(ThreadPool, PartsAreClaimedOnceWhenWorkersAreSlowToStart) {
  set_num_threads(2);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i)
    hogs.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  for (int region = 0; region < 2000; ++region) {
    std::vector<int> hits(256, 0);
    parallel_split(256, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[i];
    });
    for (int h : hits) ASSERT_EQ(h, 1) << "region " << region;
  }
  stop = true;
  for (auto& t : hogs) t.join();
}

TEST(ThreadPool, NestedRegionsRunInline) {
  set_num_threads(2);
  std::atomic<int> inner_parts{0};
  parallel_split(64, 1, [&](int64_t, int64_t) {
    parallel_split(64, 1, [&](int64_t b, int64_t e) {
      EXPECT_EQ(b, 0);
      EXPECT_EQ(e, 64);
      ++inner_parts;
    });
  });
  EXPECT_EQ(inner_parts.load(), 2);  // one inline inner region per outer part
}

TEST(ThreadPool, IdleWorkersSleepWhenTheCallerRests) {
  set_num_threads(2);
  set_pool_spin(10'000'000);  // ten seconds: only a rest puts the worker to sleep in this test
  std::atomic<int> parts{0};
  auto region = [&] { parallel_split(256, 64, [&](int64_t, int64_t) { ++parts; }); };
  auto wait_for = [](int sleeping) {
    for (int i = 0; i < 1000 && pool_sleeping_workers() != sleeping; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return pool_sleeping_workers();
  };
  region();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(pool_sleeping_workers(), 0);  // still spinning
  pool_rest();
  EXPECT_EQ(wait_for(1), 1);
  region();  // a region wakes it, and runs every part
  EXPECT_EQ(parts.load(), 4);
  set_pool_spin(200);
}

}  // namespace
}  // namespace jf
