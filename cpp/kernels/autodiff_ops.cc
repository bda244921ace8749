// The eager kernel of StopGradient, the one op of autodiff control (tf.stop_gradient).
#include <cstring>

#include "ir/op_registry.h"
#include "kernels/kernels.h"

namespace jf {

// Unlike Identity, the result is a copy: an eager GradientTape keys tensors by buffer address
// (docs/autodiff.md), so a result sharing its input's buffer would be the input to the tape
// and the gradient would flow through it. Compiled, StopGradient is a reshape of nothing.
void k_StopGradient(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.on_host()) {
    Tensor y = Tensor::empty(x.dtype(), x.shape());
    copy_elements(is_string(x), y.raw(), x.raw(), x.nbytes());
    c.results[0] = y;
    return;
  }
  c.results[0] = x.to_device(Device{}).to_device(x.device());  // a device copy, via the host
}

}  // namespace jf
