// jf.data's batches of tensor slices (runtime/slice_batcher.h): the shuffle buffer replayed
// from its draws, rows gathered in a given order into one buffer per component with the
// short last batch kept or dropped, and bad orders refused.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/slice_batcher.h"
#include "support/errors.h"

namespace jf::data {
namespace {

TEST(SliceBatcher, ShuffleOrderReplaysTheBuffer) {
  // Slots {0, 1}: draw 1 emits 1 (2 takes its slot), draw 0 emits 0 (3 comes in), draw 1
  // emits 2 (4 comes in); then the drain: draw 1 of {3, 4} emits 4, draw 0 emits 3.
  EXPECT_EQ(SliceBatcher::shuffle_order(5, 2, {1, 0, 1}, {1, 0}), (std::vector<int64_t>{1, 0, 2, 4, 3}));
  // A buffer as large as the input: only the drain, which swaps the drawn slot with the last.
  EXPECT_EQ(SliceBatcher::shuffle_order(3, 3, {}, {0, 0, 0}), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_THROW(SliceBatcher::shuffle_order(3, 2, {2}, {0, 0}), Error);  // a draw outside the buffer
  EXPECT_THROW(SliceBatcher::shuffle_order(3, 2, {}, {0, 0}), Error);   // too few draws
}

TEST(SliceBatcher, GathersRowsInOrderAndKeepsOrDropsTheRemainder) {
  Tensor src = Tensor::empty(DType::kInt32, Shape{5, 2});
  for (int i = 0; i < 10; ++i) src.data<int32_t>()[i] = i;
  SliceBatcher keep({src}, {4, 0, 3, 1, 2}, 2, false, {});
  ASSERT_EQ(keep.num_batches(), 3);
  std::vector<Tensor> b0 = keep.make(0);
  ASSERT_EQ(b0.size(), 1u);
  EXPECT_EQ(b0[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(std::vector<int32_t>(b0[0].data<int32_t>(), b0[0].data<int32_t>() + 4),
            (std::vector<int32_t>{8, 9, 0, 1}));
  std::vector<Tensor> last = keep.make(2);
  EXPECT_EQ(last[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(last[0].data<int32_t>()[0], 4);
  SliceBatcher drop({src}, {}, 2, true, {});
  EXPECT_EQ(drop.num_batches(), 2);
  EXPECT_THROW(drop.make(2), Error);
  EXPECT_THROW(SliceBatcher({src}, {0, 1, 2, 3, 5}, 2, false, {}), Error);  // a row out of range
  EXPECT_THROW(SliceBatcher({src}, {}, 0, false, {}), Error);               // batch size 0
}

}  // namespace
}  // namespace jf::data
