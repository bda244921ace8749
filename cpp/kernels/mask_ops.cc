// Eager kernels of the ops whose output shape depends on their input values: Where (the
// coordinates of the nonzero elements), Unique and UniqueWithCounts (distinct values in
// first-occurrence order). Each counts first, then makes its outputs in the counted shape
// (shape inference leaves that dim unknown).
#include <unordered_map>

#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

namespace jf {
namespace {

template <class T>
bool nonzero(T v) {
  return v != T(0);  // NaN is nonzero (true), -0.0 is zero, as TF's Where
}

// The hash key of element i. TF's half-float Unique keys by the bits, so 0.0 and -0.0 are two
// values there (unlike float32's), and each NaN is its own: a NaN's key is past every bit
// pattern, made unique by its position.
template <class T>
using HashKey = std::conditional_t<kEigenHalf<T>, uint64_t, T>;
template <class T>
HashKey<T> key_of(const T& v, int64_t i) {
  if constexpr (kEigenHalf<T>)
    return Eigen::numext::isnan(v) ? (uint64_t{1} << 16) + static_cast<uint64_t>(i)
                                   : Eigen::numext::bit_cast<uint16_t>(v);
  else
    return v;
}

template <class I, class T>
void unique_typed(OpCall& c, bool counts) {
  const Tensor& x = c.in[0];
  const int64_t n = x.num_elements();
  const DType it = c.attrs.get<DType>("out_idx", DType::kInt32);
  Tensor& idx = make_output(c, 1, it, x.shape());
  I* ix = idx.data<I>();
  const T* v = x.data<T>();
  // TF's kernel: a hash map from value to its first position among the distinct values.
  // Equal float32/float64 values (0.0 and -0.0 included) share an entry; each NaN is its own.
  std::unordered_map<HashKey<T>, I> first;
  first.reserve(static_cast<size_t>(n));
  std::vector<int64_t> firsts;  // positions in x of the distinct values, in order
  for (int64_t i = 0; i < n; ++i) {
    auto ins = first.emplace(key_of(v[i], i), static_cast<I>(firsts.size()));
    if (ins.second) firsts.push_back(i);
    ix[i] = ins.first->second;
  }
  const int64_t k = static_cast<int64_t>(firsts.size());
  if (it == DType::kInt32 && k > INT32_MAX) c.fail("more than 2**31 - 1 distinct values for out_idx int32");
  T* y = make_output(c, 0, x.dtype(), Shape{k}).template data<T>();
  for (int64_t j = 0; j < k; ++j) y[j] = v[firsts[j]];
  if (counts) {
    I* cnt = make_output(c, 2, it, Shape{k}).template data<I>();
    std::fill(cnt, cnt + k, I(0));
    for (int64_t i = 0; i < n; ++i) ++cnt[ix[i]];
  }
}

template <OpId kOp, class I>
void unique_into(OpCall& c, bool counts) {
  if (is_string(c.in[0])) return unique_typed<I, std::string>(c, counts);
  JF_SWITCH_CLAIMED(op_types(kOp), c.in[0].dtype(), T, unique_typed<I, T>(c, counts));
}

template <OpId kOp>
void unique(OpCall& c, bool counts) {
  if (c.attrs.get<DType>("out_idx", DType::kInt32) == DType::kInt64)
    unique_into<kOp, int64_t>(c, counts);
  else
    unique_into<kOp, int32_t>(c, counts);
}

}  // namespace

void k_Where(OpCall& c) {
  const Tensor& x = c.in[0];
  const int r = x.rank();
  const int64_t n = x.num_elements();
  JF_SWITCH_CLAIMED(op_types(OpId::Where), x.dtype(), T, {
    const T* v = x.data<T>();
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += nonzero(v[i]);
    int64_t* out = make_output(c, 0, DType::kInt64, Shape{count, r}).data<int64_t>();
    const Shape& s = x.shape();
    std::vector<int64_t> at(r, 0);  // the coordinates of element i, advanced row-major
    for (int64_t i = 0; i < n; ++i) {
      if (nonzero(v[i])) {
        std::copy(at.begin(), at.end(), out);
        out += r;
      }
      for (int d = r - 1; d >= 0; --d) {
        if (++at[d] < s[d]) break;
        at[d] = 0;
      }
    }
  });
}

void k_Unique(OpCall& c) { unique<OpId::Unique>(c, false); }
void k_UniqueWithCounts(OpCall& c) { unique<OpId::UniqueWithCounts>(c, true); }

}  // namespace jf
