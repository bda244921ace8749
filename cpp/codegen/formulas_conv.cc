// The elemental formula of BiasAdd: an add (lowering reshapes an NCHW bias so that it
// broadcasts like numpy's), which is what lets the bias fuse into the loop after a
// convolution's library step.
#include "codegen/formulas.h"

namespace jf {

JF_BINARY_FORMULA(BiasAdd) {
  return is_float(in) ? E.builder().CreateFAdd(x, y) : E.builder().CreateAdd(x, y);
}

}  // namespace jf
