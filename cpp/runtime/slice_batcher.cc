// SliceBatcher: rows are views into the source buffers (no copy until the batch gather), so an
// element with no map costs one memcpy per component.
#include "runtime/slice_batcher.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "support/errors.h"

namespace jf::data {
namespace {

std::string dims_text(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

SliceBatcher::SliceBatcher(std::vector<Tensor> sources, std::vector<int64_t> order, int64_t batch_size,
                           bool drop_remainder, std::vector<std::shared_ptr<ConcreteFunction>> maps)
    : sources_(std::move(sources)),
      order_(std::move(order)),
      batch_(batch_size),
      drop_(drop_remainder),
      maps_(std::move(maps)) {
  if (sources_.empty()) throw_invalid("SliceBatcher: no source tensors");
  if (batch_ < 1) throw_invalid("Batch size must be greater than zero.");
  n_ = sources_[0].rank() > 0 ? sources_[0].shape()[0] : -1;
  for (Tensor& t : sources_) {
    if (t.is_symbolic() || t.dtype() == DType::kString || t.rank() < 1 || t.shape()[0] != n_)
      throw_invalid("SliceBatcher: sources must be numeric host tensors of one length, got ", t.desc());
    if (!t.on_host()) t = t.to_device(Device{});
    Shape row = t.shape();
    row.erase(0);
    row_shapes_.push_back(row);
    row_bytes_.push_back(static_cast<size_t>(row.num_elements()) * dtype_size(t.dtype()));
  }
  if (!order_.empty() && static_cast<int64_t>(order_.size()) != n_)
    throw_invalid("SliceBatcher: an order of ", order_.size(), " positions for ", n_, " rows");
  for (int64_t r : order_)
    if (r < 0 || r >= n_) throw_invalid("SliceBatcher: row ", r, " out of range [0, ", n_, ")");
}

int64_t SliceBatcher::num_batches() const { return drop_ ? n_ / batch_ : (n_ + batch_ - 1) / batch_; }

std::vector<Tensor> SliceBatcher::element(int64_t row) const {
  std::vector<Tensor> comps;
  comps.reserve(sources_.size());
  for (size_t c = 0; c < sources_.size(); ++c) {
    const Tensor& s = sources_[c];
    const size_t offset =
        static_cast<size_t>(static_cast<char*>(s.raw()) - static_cast<char*>(s.buffer()->data));
    comps.emplace_back(s.dtype(), row_shapes_[c], s.buffer(),
                       offset + static_cast<size_t>(row) * row_bytes_[c]);
  }
  for (const auto& f : maps_) comps = f->call(std::move(comps));
  return comps;
}

std::vector<Tensor> SliceBatcher::make(int64_t b) const {
  const int64_t begin = b * batch_;
  const int64_t rows = std::min(batch_, n_ - begin);
  if (b < 0 || rows <= 0 || (drop_ && rows < batch_)) throw_invalid("SliceBatcher: no batch ", b);
  std::vector<Tensor> out;
  std::vector<Shape> first;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t p = begin + i;
    std::vector<Tensor> e = element(order_.empty() ? p : order_[p]);
    if (i == 0) {
      for (Tensor& t : e) {
        if (t.dtype() == DType::kString) throw_invalid("SliceBatcher: a map gave a string component");
        Shape s = t.shape();
        first.push_back(s);
        s.insert(0, rows);
        out.push_back(Tensor::empty(t.dtype(), s));
      }
    }
    if (e.size() != out.size())
      throw_invalid("SliceBatcher: a map gave ", e.size(), " components, then ", out.size());
    for (size_t c = 0; c < e.size(); ++c) {
      Tensor& t = e[c];
      if (t.shape() != first[c] || t.dtype() != out[c].dtype())
        throw_invalid(
            "Cannot add tensor to the batch: number of elements does not match. Shapes are: [tensor]: ",
            dims_text(t.shape()), ", [batch]: ", dims_text(first[c]));
      if (!t.on_host()) t = t.to_device(Device{});
      const size_t nb = t.nbytes();
      if (nb) std::memcpy(static_cast<char*>(out[c].raw()) + static_cast<size_t>(i) * nb, t.raw(), nb);
    }
  }
  return out;
}

std::vector<int64_t> SliceBatcher::shuffle_order(int64_t n, int64_t m, const std::vector<int64_t>& steady,
                                                 const std::vector<int64_t>& drain) {
  if (m < 0 || m > n || static_cast<int64_t>(steady.size()) != n - m ||
      static_cast<int64_t>(drain.size()) != m)
    throw_invalid("shuffle_order: ", steady.size(), " and ", drain.size(), " draws for ", n, " elements in ",
                  m, " slots");
  std::vector<int64_t> buf(static_cast<size_t>(m)), out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) buf[i] = i;
  int64_t next = m;
  for (int64_t j : steady) {
    if (j < 0 || j >= m) throw_invalid("shuffle_order: draw ", j, " outside [0, ", m, ")");
    out.push_back(buf[j]);
    buf[j] = next++;
  }
  for (int64_t j : drain) {
    if (j < 0 || j >= static_cast<int64_t>(buf.size()))
      throw_invalid("shuffle_order: draw ", j, " out of range");
    std::swap(buf[j], buf.back());
    out.push_back(buf.back());
    buf.pop_back();
  }
  return out;
}

}  // namespace jf::data
