// jf.data's worker pipeline (runtime/data_pipeline.h): every item delivered once, in input order
// when ordered whatever order the workers finish in, the buffer never holds more than its
// capacity, and stopping a pipeline whose consumer went away joins its workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/data_pipeline.h"

namespace jf::data {
namespace {

Pipeline<int>::Pull count_to(int n, std::atomic<int>* pulled) {
  return [n, pulled](int* out) {
    if (*pulled >= n) return false;
    *out = (*pulled)++;
    return true;
  };
}

TEST(DataPipeline, OrderedDeliversInInputOrderAcrossWorkers) {
  std::atomic<int> pulled{0};
  Pipeline<int> p(4, 8, true, count_to(200, &pulled), [](int x) {
    // Later items finish first now and then.
    if (x % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    return x * 2;
  });
  std::vector<int> got;
  int v;
  while (p.next(&v)) got.push_back(v);
  ASSERT_EQ(got.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[i], 2 * i);
  EXPECT_FALSE(p.next(&v));  // stays at the end
}

TEST(DataPipeline, UnorderedDeliversEveryItemOnce) {
  std::atomic<int> pulled{0};
  Pipeline<int> p(3, 4, false, count_to(100, &pulled), [](int x) {
    if (x % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    return x;
  });
  std::vector<int> got;
  int v;
  while (p.next(&v)) got.push_back(v);
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], i);
}

TEST(DataPipeline, CapacityBoundsTheItemsPulledAhead) {
  std::atomic<int> pulled{0};
  Pipeline<int> p(2, 3, true, count_to(1000, &pulled), nullptr);
  int v;
  ASSERT_TRUE(p.next(&v));
  EXPECT_EQ(v, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the workers run ahead
  EXPECT_LE(pulled.load(), 1 + 3);
  EXPECT_LE(p.outstanding(), 3u);
  for (int i = 1; i < 1000; ++i) {
    ASSERT_TRUE(p.next(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_LE(p.max_outstanding(), 3u);
  EXPECT_FALSE(p.next(&v));
}

TEST(DataPipeline, StopJoinsWorkersBlockedOnAFullBuffer) {
  std::atomic<int> pulled{0};
  auto p = std::make_unique<Pipeline<int>>(3, 2, true, count_to(1 << 30, &pulled), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p->stop();
  EXPECT_LE(p->drain().size(), 2u);
  int v;
  EXPECT_FALSE(p->next(&v));
  p.reset();  // the destructor after stop() is a no-op
  EXPECT_LE(pulled.load(), 2);
}

TEST(DataPipeline, EmptyInputEndsAtOnce) {
  std::atomic<int> pulled{0};
  Pipeline<int> p(2, 2, true, count_to(0, &pulled), [](int x) { return x; });
  int v;
  EXPECT_FALSE(p.next(&v));
}

}  // namespace
}  // namespace jf::data
