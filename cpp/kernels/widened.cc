// Half-float runs of the float32 kernels (convolutions and pools): the half inputs widened to
// float32 (exactly), the op's float32 kernel run, each half output rounded once: the sums of
// products keep float32's precision until that rounding, and the half types need no kernels of
// their own.
#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

namespace jf {
namespace {

Tensor widened(const Tensor& x) {
  if (x.dtype() == DType::kFloat16) return widen_to_float<Eigen::half>(x);
  return widen_to_float<Eigen::bfloat16>(x);
}

}  // namespace

bool run_widened(OpCall& c, void (*kernel)(OpCall&)) {
  bool any = false;
  for (const Tensor& t : c.in) any = any || is_half(t.dtype());
  if (!any) return false;
  std::vector<Tensor> in(c.in.size());
  for (size_t i = 0; i < c.in.size(); ++i) in[i] = is_half(c.in[i].dtype()) ? widened(c.in[i]) : c.in[i];
  OpCall w(c.def, in, c.attrs);
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    TensorSpec s = c.spec(i);
    if (is_half(s.dtype)) s.dtype = DType::kFloat32;
    w.out.push_back(s);
  }
  kernel(w);
  if (c.results.size() < c.num_outputs()) c.results.resize(c.num_outputs());
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    if (!is_half(c.spec(i).dtype)) {
      c.results[i] = w.results[i];
      continue;
    }
    Tensor& y = c.alloc(i);
    if (c.spec(i).dtype == DType::kFloat16)
      round_from_float<Eigen::half>(w.results[i], y);
    else
      round_from_float<Eigen::bfloat16>(w.results[i], y);
  }
  return true;
}

}  // namespace jf
