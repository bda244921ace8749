// Tensors: a dtype, a shape and a shared contiguous row-major buffer (eager values), or a
// symbolic reference to a graph node output while tracing.
#pragma once
#include <memory>
#include <string>

#include "core/buffer.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace jf {

// Buffers up to this size are kept per value between runs of a plan (small tensors, where
// allocation costs more than the kernel); larger ones go back to the caching allocator.
constexpr size_t kRecycleMaxBytes = 64 * 1024;

struct SymbolicValue;  // defined by the tracer: a node output in a graph under construction

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, const Shape& shape, BufferPtr buf, size_t offset = 0)
      : dtype_(dtype), shape_(shape), buf_(std::move(buf)), offset_(offset) {}

  // A fresh uninitialised tensor.
  static Tensor empty(DType dtype, const Shape& shape);
  // Like empty(), but reuses *keep when nothing else holds it (use_count 1, so no live
  // tensor can alias it) and it has the right size; otherwise allocates and, when small
  // (kRecycleMaxBytes), stores the new buffer in *keep for the next call. The executor and
  // the cluster runner keep one such buffer per value between runs.
  static Tensor empty_reusing(DType dtype, const Shape& shape, BufferPtr* keep);
  // A rank-0 tensor holding v converted to dtype. For an integer dtype v must be integral
  // and in range (else InvalidArgumentError); integers beyond 2**53 need scalar_int.
  static Tensor scalar(DType dtype, double v);
  // A rank-0 tensor holding the integer v exactly (integer dtypes; a float dtype rounds once,
  // bool is v != 0). Integers never pass through double.
  static Tensor scalar_int(DType dtype, int64_t v);
  static Tensor from_int64s(const std::vector<int64_t>& v, DType dtype = DType::kInt32);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t nbytes() const { return num_elements() * dtype_size(dtype_); }
  const BufferPtr& buffer() const { return buf_; }
  Device device() const { return buf_ ? buf_->device : Device{}; }
  bool on_host() const { return !buf_ || buf_->device.type == DeviceType::kCPU; }
  // The same value on device d: this tensor when it is already there, otherwise a copy.
  Tensor to_device(Device d) const;
  bool defined() const { return buf_ != nullptr || sym_ != nullptr; }
  bool is_symbolic() const { return sym_ != nullptr; }
  const std::shared_ptr<SymbolicValue>& sym() const { return sym_; }
  void set_sym(std::shared_ptr<SymbolicValue> s) { sym_ = std::move(s); }
  void set_shape(const Shape& s) { shape_ = s; }
  // Drops the value (an empty slot), keeping no reference to the buffer.
  void reset() {
    buf_.reset();
    sym_.reset();
  }
  void set_dtype(DType d) { dtype_ = d; }

  void* raw() const { return static_cast<char*>(buf_->data) + offset_; }
  template <class T>
  T* data() const {
    return static_cast<T*>(raw());
  }

  // Same buffer, new shape (element counts must match).
  Tensor reshaped(const Shape& s) const;
  // Reads element i (any dtype) as double / int64, for small values (axes, shapes); a
  // device tensor is copied to the host first. get_double rounds int64 values beyond 2**53:
  // read integers with get_int.
  double get_double(int64_t i) const;
  int64_t get_int(int64_t i) const;
  std::vector<int64_t> to_int64s() const;
  std::string desc() const;  // "float32[2,3]"

 private:
  DType dtype_ = DType::kInvalid;
  Shape shape_;
  BufferPtr buf_;
  size_t offset_ = 0;
  std::shared_ptr<SymbolicValue> sym_;
};

}  // namespace jf
