// Op placement: which device an eager op runs on (the thread's jf.device scope, else the
// device of its GPU inputs), copying inputs that live elsewhere as TF's silent device policy
// does, and running ops that have no GPU kernel on the CPU (TF's soft placement).
#pragma once
#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace jf {

// jf.device scopes, per thread.
void push_device_scope(Device d);
void pop_device_scope();
bool device_scope(Device* d);  // the innermost scope, if any

// TF's device policies: kSilent copies inputs to the op's device; kExplicit raises, naming
// both devices, unless the input is a scalar or a shape/axis input (host values in TF too).
enum class DevicePolicy { kSilent, kExplicit };
void set_device_policy(DevicePolicy p);
DevicePolicy device_policy();

// Whether this op must go through run_placed (a GPU is involved: a scope or an input), and
// on which device. False means the plain CPU kernel path.
bool placement_needed(const std::vector<Tensor>& inputs, Device* d);
// Where a call with these inputs runs: the placement_needed device, else the CPU. A
// jf.function's traces are keyed by it.
Device call_placement(const std::vector<Tensor>& inputs);
// Runs the op on `d`, copying inputs to it; on a GPU, an op without a GPU kernel runs on
// the CPU and its outputs stay there.
std::vector<Tensor> run_placed(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs,
                               Device d);

}  // namespace jf
