// The statistics reductions' formulas: Any folds with LogicalOr from false, All with
// LogicalAnd from true (the same loops as Sum; bool accumulators are i1), EuclideanNorm adds.
#include "codegen/formulas.h"

namespace jf {

JF_REDUCE_FORMULA(Any, ReduceFormula::kZero, OpId::LogicalOr);
JF_REDUCE_FORMULA(All, ReduceFormula::kOne, OpId::LogicalAnd);
// The sum of squares; lowering squares the operand first and takes the root after.
JF_REDUCE_FORMULA(EuclideanNorm, ReduceFormula::kZero, OpId::AddV2);

}  // namespace jf
