// Tensor helpers: allocation, scalars and host-side element access for small tensors.
#include "core/tensor.h"

#include <cmath>
#include <limits>

namespace jf {

namespace {
// The bytes of a dense tensor of this shape, saturating at SIZE_MAX instead of wrapping
// (a wrapped count would allocate a small buffer for a huge tensor).
size_t dense_bytes(DType dtype, const Shape& shape) {
  size_t n = dtype_size(dtype);
  bool overflow = false;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    overflow |= d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  }
  return overflow ? SIZE_MAX : n;
}

// A string tensor's elements are constructed std::strings: the buffer owns an array of them
// and destroys it with the last reference (never the caching allocator's raw bytes).
Tensor empty_strings(const Shape& shape) {
  const int64_t n = shape.num_elements();
  if (static_cast<uint64_t>(n) > max_allocation_bytes() / sizeof(std::string))
    throw_resource_exhausted("OOM when allocating tensor with shape", shape.str(), " and type string");
  auto* data = new std::string[n > 0 ? n : 1];
  BufferPtr buf = wrap_external(
      data, n * sizeof(std::string), [](void* p) { delete[] static_cast<std::string*>(p); }, data);
  return Tensor(DType::kString, shape, std::move(buf));
}
}  // namespace

Tensor Tensor::empty(DType dtype, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) throw_invalid("cannot allocate a tensor with unknown or negative dims ", shape.str());
  if (dtype == DType::kString) return empty_strings(shape);
  size_t bytes = dense_bytes(dtype, shape);
  if (bytes > max_allocation_bytes())  // TF's message; raised before anything is tried
    throw_resource_exhausted("OOM when allocating tensor with shape", shape.str(), " and type ",
                             dtype_name(dtype), " on ", device_name(Device{}), " (",
                             bytes == SIZE_MAX ? std::string("more than 2**64") : std::to_string(bytes),
                             " bytes; the limit per allocation is this machine's memory, ",
                             max_allocation_bytes(), " bytes)");
  return Tensor(dtype, shape, allocate_buffer(bytes));
}

Tensor Tensor::empty_reusing(DType dtype, const Shape& shape, BufferPtr* keep) {
  if (dtype == DType::kString) return empty(dtype, shape);  // its elements are objects: fresh ones
  BufferPtr& r = *keep;
  size_t bytes = dense_bytes(dtype, shape);
  if (r && r.use_count() == 1 && r->bytes == bytes) return Tensor(dtype, shape, r);
  Tensor t = empty(dtype, shape);
  if (bytes <= kRecycleMaxBytes) r = t.buffer();
  return t;
}

// v into *p; the small and unsigned integers take only integral values in their range.
template <class T>
static void set_scalar(T* p, double v, DType dtype) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!(v >= static_cast<double>(std::numeric_limits<T>::min()) &&
          v <= static_cast<double>(std::numeric_limits<T>::max())) ||
        v != std::trunc(v) || (sizeof(T) == 8 && v >= 18446744073709551616.0))
      throw_invalid("Cannot convert ", v, " to a scalar of dtype ", dtype_name(dtype));
  }
  *p = static_cast<T>(v);
}

Tensor Tensor::scalar(DType dtype, double v) {
  if (is_int(dtype)) {
    // Casting a non-integral or out-of-range double to an integer is undefined behaviour.
    double lo = dtype == DType::kInt32 ? -2147483648.0 : -9223372036854775808.0;
    if (!(v >= lo && v < -lo) || v != std::trunc(v))
      throw_invalid("Cannot convert ", v, " to a scalar of dtype ", dtype_name(dtype));
    return scalar_int(dtype, static_cast<int64_t>(v));
  }
  Tensor t = empty(dtype, Shape{});
  JF_SWITCH_EVERY_DTYPE(dtype, T, set_scalar<T>(t.data<T>(), v, dtype));
  return t;
}

// Integers wrap into the narrower dtypes (TF's conversion of a Python int to uint8).
Tensor Tensor::scalar_int(DType dtype, int64_t v) {
  Tensor t = empty(dtype, Shape{});
  JF_SWITCH_EVERY_DTYPE(dtype, T, *t.data<T>() = static_cast<T>(v));
  return t;
}

// An element's value as a real number (a complex one's real part).
template <class T, class R>
static R element_as(T x) {
  if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
    return static_cast<R>(x.real());
  else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
    return static_cast<R>(static_cast<float>(x));
  else
    return static_cast<R>(x);
}

Tensor Tensor::from_int64s(const std::vector<int64_t>& v, DType dtype) {
  Tensor t = empty(dtype, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kInt32) {
      if (v[i] < INT32_MIN || v[i] > INT32_MAX)
        throw_invalid("value ", v[i], " does not fit in an int32 tensor (use int64)");
      t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    } else
      t.data<int64_t>()[i] = v[i];
  }
  return t;
}

Tensor Tensor::reshaped(const Shape& s) const {
  JF_CHECK(s.num_elements() == num_elements(), "reshape ", shape_.str(), " -> ", s.str());
  Tensor t = *this;
  t.shape_ = s;
  return t;
}

Tensor Tensor::to_device(Device d) const {
  if (is_symbolic() || !buf_ || device() == d) return *this;
  if (dtype_ == DType::kString)
    throw_invalid("a string tensor cannot be copied to ", device_name(d), ": strings live on the host");
  Tensor t(dtype_, shape_, allocate_on(d, nbytes()));
  const DeviceHooks& h = device_hooks();
  JF_CHECK(h.copy, "device copy without a GPU runtime");
  if (nbytes()) h.copy(*t.buf_, 0, *buf_, offset_, nbytes());
  return t;
}

double Tensor::get_double(int64_t i) const {
  if (!on_host()) return to_device(Device{}).get_double(i);
  double v = 0;
  JF_SWITCH_EVERY_DTYPE(dtype_, T, v = (element_as<T, double>(data<T>()[i])));
  return v;
}

int64_t Tensor::get_int(int64_t i) const {
  if (!on_host()) return to_device(Device{}).get_int(i);
  int64_t v = 0;
  JF_SWITCH_EVERY_DTYPE(dtype_, T, v = (element_as<T, int64_t>(data<T>()[i])));
  return v;
}

std::vector<int64_t> Tensor::to_int64s() const {
  if (!on_host()) return to_device(Device{}).to_int64s();
  std::vector<int64_t> v(num_elements());
  for (int64_t i = 0; i < num_elements(); ++i) v[i] = get_int(i);
  return v;
}

std::string Tensor::desc() const { return str_cat(dtype_name(dtype_), shape_.str()); }

}  // namespace jf
