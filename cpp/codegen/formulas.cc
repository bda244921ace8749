// The reductions' formulas, and the formula tables generated from ops.def.
#include "codegen/formulas.h"

namespace jf {

JF_REDUCE_FORMULA(Sum, ReduceFormula::kZero, OpId::AddV2);
JF_REDUCE_FORMULA(Mean, ReduceFormula::kZero, OpId::AddV2, /*mean=*/true);
JF_REDUCE_FORMULA(Prod, ReduceFormula::kOne, OpId::Mul);
JF_REDUCE_FORMULA(Max, ReduceFormula::kLowest, OpId::Maximum);
JF_REDUCE_FORMULA(Min, ReduceFormula::kHighest, OpId::Minimum);

// A reference in a discarded `if constexpr` branch is no odr-use: only ops of the table's
// kind need their formula defined.
#define JF_FORMULA_CASE(NAME, LOWER, KIND, REF)             \
  case OpId::NAME:                                          \
    if constexpr (LowerKind::k##LOWER == LowerKind::KIND) { \
      return REF;                                           \
    } else {                                                \
      return nullptr;                                       \
    }

UnaryFormula unary_formula(OpId op) {
  switch (op) {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, ...) \
  JF_FORMULA_CASE(NAME, LOWER, kUnary, &unary_##NAME)
#include "ir/ops.def"
#undef JF_OP
    default:
      return nullptr;
  }
}

BinaryFormula binary_formula(OpId op) {
  switch (op) {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, ...) \
  JF_FORMULA_CASE(NAME, LOWER, kBinary, &binary_##NAME)
#include "ir/ops.def"
#undef JF_OP
    default:
      return nullptr;
  }
}

const ReduceFormula* reduce_formula(OpId op) {
  switch (op) {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, ...) \
  JF_FORMULA_CASE(NAME, LOWER, kReduce, &reduce_##NAME)
#include "ir/ops.def"
#undef JF_OP
    default:
      return nullptr;
  }
}

}  // namespace jf
