// Shapes: small inline arrays of dims (no heap), -1 marks an unknown dim in graphs.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "support/errors.h"

namespace jf {

constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    for (int64_t d : dims) push_back(d);
  }
  explicit Shape(const std::vector<int64_t>& dims) {
    for (int64_t d : dims) push_back(d);
  }
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + rank_; }
  void push_back(int64_t d) {
    if (rank_ >= kMaxRank) throw_invalid("tensors of rank > ", kMaxRank, " are not supported");
    d_[rank_++] = d;
  }
  void insert(int pos, int64_t d) {
    push_back(0);
    for (int i = rank_ - 1; i > pos; --i) d_[i] = d_[i - 1];
    d_[pos] = d;
  }
  void erase(int pos) {
    for (int i = pos; i + 1 < rank_; ++i) d_[i] = d_[i + 1];
    --rank_;
  }
  void resize(int r, int64_t fill = 1) {
    if (r < 0) throw_invalid("a negative rank (", r, ") is not a shape");
    while (rank_ < r) push_back(fill);
    rank_ = r;
  }
  bool fully_defined() const {
    for (int i = 0; i < rank_; ++i)
      if (d_[i] < 0) return false;
    return true;
  }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= d_[i];
    return n;
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i)
      if (d_[i] != o.d_[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  // "[2,3]" with "?" for unknown dims, as TF prints shapes in errors.
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank_; ++i) {
      if (i) s += ",";
      s += d_[i] < 0 ? std::string("?") : std::to_string(d_[i]);
    }
    return s + "]";
  }

 private:
  int rank_ = 0;
  int64_t d_[kMaxRank] = {};
};

// Row-major strides in elements.
inline void row_major_strides(const Shape& s, int64_t* strides) {
  int64_t st = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    strides[i] = st;
    st *= s[i];
  }
}

// numpy broadcasting of two shapes; ok=false when incompatible. Unknown dims (-1) broadcast
// against 1 and against themselves.
inline bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  int r = a.rank() > b.rank() ? a.rank() : b.rank();
  Shape o;
  o.resize(r);
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == db)
      o[i] = da;
    else if (da == 1)
      o[i] = db;
    else if (db == 1)
      o[i] = da;
    else if (da < 0)
      o[i] = db;
    else if (db < 0)
      o[i] = da;
    else
      return false;
  }
  *out = o;
  return true;
}

// Normalises a possibly negative axis against rank; throws naming the op when out of range.
inline int normalize_axis(int64_t axis, int rank, const char* op) {
  if (axis < -rank || axis >= (rank == 0 ? 1 : rank))
    throw_invalid(op, ": axis ", axis, " is out of range for a tensor of rank ", rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace jf
