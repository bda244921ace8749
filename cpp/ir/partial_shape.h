// The partly known value of a shape vector in a graph (TF's constant partial shape).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace jf {

// The value of a rank-1 integer graph value with its unknown elements as -1, when the graph
// knows at least one of them: a constant, Shape(x), a Pack of scalars, a ConcatV2 or a slice
// of such vectors, through Cast and Identity. nullopt when nothing is known.
std::optional<std::vector<int64_t>> partial_shape_value(const Output& o);

// For an op about to be inferred: the partial values of its symbolic shape inputs, indexed
// by input (empty when none is known), for OpCall::partial.
std::vector<std::optional<std::vector<int64_t>>> partial_shape_inputs(const OpDef& def,
                                                                      const std::vector<Output>& ins);

}  // namespace jf
