// jf.data's batches of tensor slices, made without Python: the rows of whole source tensors
// taken in a given order (a shuffle's), each row's components passed through a chain of map
// functions (ConcreteFunctions run per element, as tf.data's map is), and every component of a
// batch gathered into one buffer. make() may be called from several threads at once: the
// data.Pipeline in data_pipeline.h runs it on worker threads ahead of the consumer.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "runtime/function.h"

namespace jf::data {

class SliceBatcher {
 public:
  // sources: tensors of one dim-0 size n (a row of each is an element); order: the row at
  // each position (empty: 0, 1, ..., n-1), values in [0, n); maps: applied in turn to each
  // element; drop_remainder: the last, shorter batch is left out.
  SliceBatcher(std::vector<Tensor> sources, std::vector<int64_t> order, int64_t batch_size,
               bool drop_remainder, std::vector<std::shared_ptr<ConcreteFunction>> maps);

  int64_t num_elements() const { return n_; }
  int64_t num_batches() const;
  // Batch b's components, each [rows, ...] (InvalidArgumentError, as tf.data's batch, when a
  // map gives elements of different shapes; a map's own errors pass through).
  std::vector<Tensor> make(int64_t b) const;

  // The order a tf.data-style shuffle buffer of m slots gives n elements (m <= n): the buffer
  // holds the first m, each of the n - m `steady` draws (in [0, m)) emits that slot and refills
  // it with the next input, then each of the m `drain` draws (in [0, m - k) for the k-th)
  // emits that slot and moves the last slot into it.
  static std::vector<int64_t> shuffle_order(int64_t n, int64_t m, const std::vector<int64_t>& steady,
                                            const std::vector<int64_t>& drain);

 private:
  std::vector<Tensor> element(int64_t row) const;

  std::vector<Tensor> sources_;
  std::vector<size_t> row_bytes_;
  std::vector<Shape> row_shapes_;
  std::vector<int64_t> order_;
  int64_t n_ = 0, batch_ = 1;
  bool drop_ = false;
  std::vector<std::shared_ptr<ConcreteFunction>> maps_;
};

}  // namespace jf::data
