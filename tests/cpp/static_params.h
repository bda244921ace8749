// Test helper: the parameter slots of a cluster program whose shapes are all static (the
// small named-node graphs of the C++ tests), read from the graph's output specs.
#pragma once
#include <gtest/gtest.h>

#include <vector>

#include "codegen/kernel_ir.h"

namespace jf {

inline std::vector<int64_t> static_params(const ClusterProgram& p) {
  std::vector<int64_t> params(p.num_params, 0);
  int nin = static_cast<int>(p.inputs.size());
  for (int s = 0; s < p.num_params; ++s) {
    const ParamFill& f = p.fills[s];
    if (f.kind == ParamFill::kInputDim)
      params[s] = f.a < nin ? p.inputs[f.a].node->outputs[p.inputs[f.a].index].shape[f.b]
                            : p.constants[f.a - nin].shape()[f.b];
    else if (f.kind == ParamFill::kNodeDim)
      params[s] = p.members[f.a]->outputs[f.b].shape[f.c];
    else
      ADD_FAILURE() << "static_params: slot " << s << " needs a slice or split plan";
  }
  return params;
}

}  // namespace jf
