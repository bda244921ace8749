// Placement of eager ops and the copies between devices it implies.
#include "runtime/placement.h"

#include <atomic>

#include "codegen/kernel_ir.h"
#include "runtime/gpu/gpu_ops.h"

namespace jf {

namespace {
// Plain thread-locals (constant-initialized, no guard): every eager op reads the depth.
constexpr int kMaxScopeDepth = 64;
thread_local int t_depth = 0;
thread_local Device t_scopes[kMaxScopeDepth];
std::atomic<int> g_policy{static_cast<int>(DevicePolicy::kSilent)};

// Values TF keeps in host memory for a GPU kernel: shape and axis inputs; scalars are
// cheap to move, so the explicit policy lets them cross too.
bool host_value(const OpDef& def, const std::vector<Tensor>& in, size_t i) {
  return is_shape_input(def.id, i, in.size()) || in[i].num_elements() <= 1;
}

}  // namespace

void push_device_scope(Device d) {
  if (t_depth == kMaxScopeDepth) throw_invalid("jf.device scopes nested more than ", kMaxScopeDepth, " deep");
  t_scopes[t_depth++] = d;
}
void pop_device_scope() {
  if (t_depth > 0) --t_depth;
}
bool device_scope(Device* d) {
  if (t_depth == 0) return false;
  *d = t_scopes[t_depth - 1];
  return true;
}

void set_device_policy(DevicePolicy p) { g_policy = static_cast<int>(p); }
DevicePolicy device_policy() { return static_cast<DevicePolicy>(g_policy.load()); }

bool placement_needed(const std::vector<Tensor>& inputs, Device* d) {
  if (t_depth > 0) {
    *d = t_scopes[t_depth - 1];
    if (d->type == DeviceType::kGPU) return true;
    for (const Tensor& t : inputs)
      if (!t.on_host()) return true;  // an explicit CPU scope brings GPU inputs back
    return false;
  }
  for (const Tensor& t : inputs)
    if (!t.on_host()) {
      *d = t.device();
      return true;
    }
  return false;
}

Device call_placement(const std::vector<Tensor>& inputs) {
  Device d;
  return placement_needed(inputs, &d) ? d : Device{};
}

std::vector<Tensor> run_placed(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs,
                               Device d) {
  std::vector<Tensor> in = inputs;
  for (size_t i = 0; i < in.size(); ++i) {
    Device from = in[i].device();
    if (from == d || in[i].is_symbolic()) continue;
    bool keep_on_host = d.type == DeviceType::kGPU && is_shape_input(def.id, i, in.size());
    if (keep_on_host) {
      in[i] = in[i].to_device(Device{});
      continue;
    }
    if (device_policy() == DevicePolicy::kExplicit && def.id != OpId::Identity && !host_value(def, in, i))
      throw_invalid(def.name, ": input ", i, " (", in[i].desc(), ") is on ", short_device_name(from),
                    " but the op runs on ", short_device_name(d),
                    " and the device policy is 'explicit'; copy it with jf.identity under jf.device('",
                    short_device_name(d), "')");
    in[i] = in[i].to_device(d);
  }
  if (def.id == OpId::Identity) return in;  // the copy above is the op (TF moves data this way)
  if (d.type == DeviceType::kCPU) return run_kernel(def, in, attrs);
  std::vector<Tensor> out;
  if (gpu_run_op(def, in, attrs, d.index, &out)) return out;
  // Soft placement: no GPU kernel for this op (stateful, or no emitter for its dtypes).
  for (Tensor& t : in) t = t.to_device(Device{});
  return run_kernel(def, in, attrs);
}

}  // namespace jf
