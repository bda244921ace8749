// Cast between every pair of dtypes with TF's CPU results, and Bitcast. The pairs of the
// original five dtypes keep their Eigen loop (elementwise.cc); a pair with a dtype added
// later converts element by element here.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/op_registry.h"
#include "kernels/half_convert.h"
#include "kernels/kernels.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

template <class T>
constexpr bool kHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T>
constexpr bool kComplex = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;

// A float to an integer as TF's CPU kernels give it: truncated toward zero; what does not fit
// comes out as the x86 conversion instructions of TF's vectorized cast leave it: int32 gives
// INT32_MIN (NaN too), int64 INT64_MIN, uint32 2^31, uint64 2^63, and the 8- and 16-bit
// integers convert through int32 (out of range: INT32_MIN) and saturate, as the packing
// instructions do. Complex values (cast element by element in TF) keep int32's low bits instead.
template <class To, bool kWrapNarrow>
To float_to_int(double x) {
  if constexpr (sizeof(To) == 8 && std::is_signed_v<To>) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
      return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(x);
  } else if constexpr (sizeof(To) == 8) {
    if (x > -9223372036854775809.0 && x < 0) return static_cast<uint64_t>(static_cast<int64_t>(x));
    if (x >= 0 && x < 18446744073709551616.0) return static_cast<uint64_t>(x);
    return uint64_t{1} << 63;
  } else if constexpr (std::is_same_v<To, uint32_t>) {
    if (x > -2147483649.0 && x < 4294967296.0) return static_cast<uint32_t>(static_cast<int64_t>(x));
    return uint32_t{1} << 31;
  } else {
    int32_t v = (x > -2147483649.0 && x < 2147483648.0) ? static_cast<int32_t>(x)
                                                        : std::numeric_limits<int32_t>::min();
    if constexpr (!kWrapNarrow && sizeof(To) < 4) {
      v = std::min<int32_t>(std::max<int32_t>(v, std::numeric_limits<To>::min()),
                            std::numeric_limits<To>::max());
    }
    return static_cast<To>(v);
  }
}

template <class From, class To>
To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kHalf<From>)
      return static_cast<float>(x) != 0.0f;
    else
      return x != From(0);
  } else if constexpr (kComplex<From>) {
    if constexpr (kComplex<To>) {
      using R = typename To::value_type;
      return To(static_cast<R>(x.real()), static_cast<R>(x.imag()));
    } else if constexpr (std::is_integral_v<To>) {
      return float_to_int<To, true>(static_cast<double>(x.real()));  // TF keeps the real part
    } else {
      return convert<typename From::value_type, To>(x.real());
    }
  } else if constexpr (kComplex<To>) {
    using R = typename To::value_type;
    return To(convert<From, R>(x), R(0));
  } else if constexpr (kHalf<From>) {
    return convert<float, To>(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To, false>(static_cast<double>(x));
  } else if constexpr (kHalf<To>) {
    return To(static_cast<float>(x));  // through float, as Eigen's half conversions (double too)
  } else {
    return static_cast<To>(x);
  }
}

template <class From, class To>
void convert_all(const Tensor& x, Tensor& y) {
  const From* src = x.data<From>();
  To* dst = y.data<To>();
  parallel_for(x.num_elements(), 2.0, [&](int64_t b, int64_t e) {
    // float32 <-> half types in vector blocks (the same bits as convert's)
    if constexpr (kHalf<From> && std::is_same_v<To, float>) {
      halves_to_floats(reinterpret_cast<const uint16_t*>(src) + b, dst + b, e - b,
                       std::is_same_v<From, bfloat16>);
    } else if constexpr (std::is_same_v<From, float> && kHalf<To>) {
      floats_to_halves(src + b, reinterpret_cast<uint16_t*>(dst) + b, e - b, std::is_same_v<To, bfloat16>);
    } else {
      for (int64_t i = b; i < e; ++i) dst[i] = convert<From, To>(src[i]);
    }
  });
}

}  // namespace

// Cast for the pairs involving a dtype beyond the original five (k_Cast hands them here).
void cast_every_dtype(const Tensor& x, Tensor& y) {
  JF_CHECK(x.dtype() != DType::kString && y.dtype() != DType::kString, "Cast: string tensors do not cast");
  JF_SWITCH_EVERY_DTYPE(x.dtype(), From, JF_SWITCH_EVERY_DTYPE(y.dtype(), To, (convert_all<From, To>(x, y))));
}

// TF's Bitcast: the same bytes read as another dtype. The output shares the input's buffer
// (tensors are immutable); its shape comes from shape inference (infer_bitcast).
void k_Bitcast(OpCall& c) {
  const TensorSpec& s = c.spec(0);
  Tensor y = c.in[0];
  y.set_dtype(s.dtype);
  y.set_shape(s.shape);
  c.results.resize(1);
  c.results[0] = y;
}

}  // namespace jf
