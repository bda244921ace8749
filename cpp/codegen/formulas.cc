// The reductions' formulas, and the formula table generated from ops.def.
#include "codegen/formulas.h"

namespace jf {

JF_REDUCE_FORMULA(Sum, ReduceFormula::kZero, OpId::AddV2);
JF_REDUCE_FORMULA(Mean, ReduceFormula::kZero, OpId::AddV2, /*mean=*/true);
JF_REDUCE_FORMULA(Prod, ReduceFormula::kOne, OpId::Mul);
JF_REDUCE_FORMULA(Max, ReduceFormula::kLowest, OpId::Maximum);
JF_REDUCE_FORMULA(Min, ReduceFormula::kHighest, OpId::Minimum);

namespace {

struct Formulas {
  UnaryFormula unary = nullptr;
  BinaryFormula binary = nullptr;
  const ReduceFormula* reduce = nullptr;
};

// One entry per op, naming the formula its record's kind needs. A reference in a discarded
// `if constexpr` branch is no odr-use, so only ops of that kind need a definition, and a
// missing one fails to link.
const Formulas& formulas(OpId op) {
  static const Formulas kTable[] = {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, ...)                            \
  [] {                                                                                  \
    Formulas f;                                                                         \
    if constexpr (LowerKind::k##LOWER == LowerKind::kUnary) f.unary = &unary_##NAME;    \
    if constexpr (LowerKind::k##LOWER == LowerKind::kBinary) f.binary = &binary_##NAME; \
    if constexpr (LowerKind::k##LOWER == LowerKind::kReduce) f.reduce = &reduce_##NAME; \
    return f;                                                                           \
  }(),
#include "ir/ops.def"
#undef JF_OP
  };
  return kTable[static_cast<int>(op)];
}

}  // namespace

UnaryFormula unary_formula(OpId op) { return formulas(op).unary; }
BinaryFormula binary_formula(OpId op) { return formulas(op).binary; }
const ReduceFormula* reduce_formula(OpId op) { return formulas(op).reduce; }

}  // namespace jf
