// The elemental formula of every op whose record (ops.def) lowers it as Unary, Binary or
// Reduce, defined side by side in formulas_*.cc. The lookup tables (formulas.cc) are
// generated from the record and name each such op's formula, so a record without its
// formula fails to link. Math ops need none: they call the record's math function
// (ElementalEmitter::math_call).
#pragma once
#include "codegen/elemental.h"

namespace jf {

#define JF_UNARY_FORMULA(NAME) llvm::Value* unary_##NAME(ElementalEmitter& E, const KExpr* e, llvm::Value* x)
// `in` is the operands' dtype (comparisons return bool).
#define JF_BINARY_FORMULA(NAME) \
  llvm::Value* binary_##NAME(ElementalEmitter& E, const KExpr* e, DType in, llvm::Value* x, llvm::Value* y)

// A reduction: its identity and the binary op that folds an element into the accumulator;
// Mean divides by the reduced extent at the end.
struct ReduceFormula {
  enum Init { kZero, kOne, kLowest, kHighest } init;
  OpId combine;
  bool mean = false;
};
#define JF_REDUCE_FORMULA(NAME, ...) \
  const ReduceFormula reduce_##NAME { __VA_ARGS__ }

using UnaryFormula = llvm::Value* (*)(ElementalEmitter&, const KExpr*, llvm::Value*);
using BinaryFormula = llvm::Value* (*)(ElementalEmitter&, const KExpr*, DType, llvm::Value*, llvm::Value*);

// Declared for every op; only those of the matching kind are referenced (and must exist).
#define JF_OP(NAME, ...)   \
  JF_UNARY_FORMULA(NAME);  \
  JF_BINARY_FORMULA(NAME); \
  extern const ReduceFormula reduce_##NAME;
#include "ir/ops.def"
#undef JF_OP

// The formula of an op (nullptr when its record's kind has none).
UnaryFormula unary_formula(OpId op);
BinaryFormula binary_formula(OpId op);
const ReduceFormula* reduce_formula(OpId op);

}  // namespace jf
