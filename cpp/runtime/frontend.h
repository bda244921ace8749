// Front-end op builders shared by the Python bindings (operators and jf.* functions): the
// few TF API functions that are more than one op type (truediv of ints, matmul by rank).
#pragma once
#include <string>

#include "runtime/dispatch.h"

namespace jf {

Tensor run1(OpId op, const std::vector<Tensor>& in, const Attrs& attrs = Attrs(),
            const std::string* name = nullptr);
Tensor cast(const Tensor& x, DType to, const std::string* name = nullptr);
// TF's truediv: integer operands are cast to float64 first (int32 / int32 -> float64).
Tensor truediv(const Tensor& a, const Tensor& b, const std::string* name = nullptr);
// MatMul for two matrices, BatchMatMulV2 otherwise (as tf.linalg.matmul does).
Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, const std::string* name = nullptr);

}  // namespace jf
