// The op dispatcher: graph recording when a trace is active, otherwise the eager kernel.
#include "runtime/dispatch.h"

#include "runtime/placement.h"
#include "support/stats.h"

namespace jf {
namespace {
TraceHook g_hook = nullptr;
TapeHook g_tape_hook = nullptr;
thread_local int t_active_tapes = 0;
}  // namespace

void set_trace_hook(TraceHook hook) { g_hook = hook; }
void set_tape_hook(TapeHook hook) { g_tape_hook = hook; }
void tape_activate(int delta) { t_active_tapes += delta; }
bool tapes_active() { return t_active_tapes > 0; }

static std::vector<Tensor> execute_untaped(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                           const std::string* name) {
  std::vector<Tensor> out;
  if (g_hook && g_hook(op, inputs, attrs, name, &out)) return out;
  const OpDef& def = op_def(op);
  for (const Tensor& t : inputs)
    if (t.is_symbolic())
      throw_invalid(def.name, ": a tensor from a traced function's graph was used outside it");
  stats().eager_ops.fetch_add(1, std::memory_order_relaxed);
  Device d;
  if (placement_needed(inputs, &d)) return run_placed(def, inputs, attrs, d);
  return run_kernel(def, inputs, attrs);
}

std::vector<Tensor> execute(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                            const std::string* name) {
  std::vector<Tensor> out = execute_untaped(op, inputs, attrs, name);
  if (t_active_tapes > 0 && g_tape_hook) g_tape_hook(op, inputs, attrs, out);
  return out;
}

}  // namespace jf
