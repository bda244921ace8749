// Half types in compiled code: a cluster computes float16 and bfloat16 values in float32 and
// rounds them to the half type only where they are stored for someone else to read (the
// cluster's outputs, a library step's operands), as XLA's CPU backend does.
#pragma once
#include <vector>

#include "codegen/kernel_ir.h"

namespace jf {

// A value the program must hand over in memory of `dtype` (a cluster output of a half type).
struct StoredValue {
  KExpr** value;
  DType dtype;
};

// Rewrites a lowered program before its materialization is planned: every computed half-type
// value becomes float32; half values stay only in memory (cluster inputs, constants, library
// step results) and in explicit casts to a half type, which still round. Each read of one
// widens it (a cast to float32); each stored value and each half operand of a library step
// gets a cast back to its half type. Re-sorts the expressions into a topological order and
// renumbers them, since the widening casts are made after their readers.
void compute_halves_in_float32(ClusterProgram* p, std::vector<Step>* library_steps,
                               const std::vector<StoredValue>& stored);

}  // namespace jf
