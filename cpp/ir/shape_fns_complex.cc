// Shape inference for the ops that build or take apart complex numbers (TF's Complex, Real,
// Imag, Angle, ComplexAbs): each maps a float dtype to its complex counterpart or back.
#include "ir/op_registry.h"

namespace jf {

namespace {
DType complex_of(DType d) { return d == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64; }
DType real_of(DType d) { return d == DType::kComplex128 ? DType::kFloat64 : DType::kFloat32; }
}  // namespace

// Complex(real, imag): both float32 or both float64, broadcast; complex64 or complex128.
void infer_complex(OpCall& c) {
  c.check_claimed(0);
  if (c.in[1].dtype() != c.in[0].dtype())
    c.fail_type("real and imag must have the same dtype, got ", dtype_name(c.in[0].dtype()), " and ",
                dtype_name(c.in[1].dtype()));
  Shape s;
  if (!broadcast_shapes(c.in[0].shape(), c.in[1].shape(), &s))
    c.fail("Incompatible shapes: ", c.in[0].shape().str(), " vs. ", c.in[1].shape().str());
  c.add_output(complex_of(c.in[0].dtype()), s);
}

// Real, Imag, Angle, ComplexAbs: a complex input's float counterpart, same shape.
void infer_complex_part(OpCall& c) {
  c.check_claimed(0);
  c.add_output(real_of(c.in[0].dtype()), c.in[0].shape());
}

}  // namespace jf
