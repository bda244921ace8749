// Eager kernels of the ops that build and take apart complex numbers: Complex, Real, Imag,
// Conj, Angle and ComplexAbs (std::complex arithmetic, split across the thread pool).
#include <cmath>
#include <complex>

#include "core/broadcast.h"
#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "support/thread_pool.h"

namespace jf {

namespace {

// y[i] = f(x[i]) for a complex input of either width; R is the result's scalar: the complex
// type itself (Conj) or its float part (Real, Imag, Angle, ComplexAbs).
template <bool kToReal, class F>
void complex_map(OpCall& c, F f) {
  const Tensor& x = c.in[0];
  Tensor& y = c.alloc(0);
  auto run = [&](auto tag) {
    using C = typename decltype(tag)::type;
    using R = std::conditional_t<kToReal, typename C::value_type, C>;
    const C* src = x.data<C>();
    R* dst = y.data<R>();
    parallel_for(x.num_elements(), 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = static_cast<R>(f(src[i]));
    });
  };
  if (x.dtype() == DType::kComplex128)
    run(DTypeTag<std::complex<double>>{});
  else
    run(DTypeTag<std::complex<float>>{});
}

template <class T>
void complex_from_parts(const Tensor& re, const Tensor& im, Tensor& y) {
  BroadcastPlan p = make_broadcast(y.shape(), {re.shape(), im.shape()});
  const T* a = re.data<T>();
  const T* b = im.data<T>();
  std::complex<T>* out = y.data<std::complex<T>>();
  parallel_for(y.num_elements(), 4, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      auto [oa, ob] = p.offsets2(i);
      out[i] = std::complex<T>(a[oa], b[ob]);
    }
  });
}

}  // namespace

// The elementwise conjugate of a complex tensor, for the adjoint products (kernels/matmul.cc).
Tensor conj_of(const Tensor& x) {
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  auto run = [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C* src = x.data<C>();
    C* dst = y.data<C>();
    parallel_for(x.num_elements(), 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = std::conj(src[i]);
    });
  };
  if (x.dtype() == DType::kComplex128)
    run(DTypeTag<std::complex<double>>{});
  else
    run(DTypeTag<std::complex<float>>{});
  return y;
}

void k_Complex(OpCall& c) {
  Tensor& y = c.alloc(0);
  if (c.in[0].dtype() == DType::kFloat64)
    complex_from_parts<double>(c.in[0], c.in[1], y);
  else
    complex_from_parts<float>(c.in[0], c.in[1], y);
}
void k_Real(OpCall& c) {
  complex_map<true>(c, [](auto v) { return v.real(); });
}
void k_Imag(OpCall& c) {
  complex_map<true>(c, [](auto v) { return v.imag(); });
}
void k_Conj(OpCall& c) {
  complex_map<false>(c, [](auto v) { return std::conj(v); });
}
// atan2(imag, real), as TF's Angle kernel (std::arg).
void k_Angle(OpCall& c) {
  complex_map<true>(c, [](auto v) { return std::arg(v); });
}
// hypot(real, imag): no overflow where |z| is representable, as TF's ComplexAbs.
void k_ComplexAbs(OpCall& c) {
  complex_map<true>(c, [](auto v) { return std::hypot(v.real(), v.imag()); });
}

}  // namespace jf
