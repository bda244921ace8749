// The single entry every op goes through: eager execution now; a trace hook (the tracer's,
// installed by the bindings) records a graph node instead while a function is being traced.
#pragma once
#include <vector>

#include "ir/op_registry.h"

namespace jf {

// Runs (or records) one op. `name` is the user's name= for the node (graph mode only).
std::vector<Tensor> execute(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                            const std::string* name = nullptr);

// The tracer's record_traced_op, installed by the bindings: returns true when it handled the
// op (recording it in a graph).
using TraceHook = bool (*)(OpId, const std::vector<Tensor>&, const Attrs&, const std::string*,
                           std::vector<Tensor>*);
void set_trace_hook(TraceHook hook);

// Called after every op that ran or was recorded while at least one gradient tape is
// active (jf.GradientTape records ops this way, eagerly and while tracing).
using TapeHook = void (*)(OpId, const std::vector<Tensor>& inputs, const Attrs&,
                          const std::vector<Tensor>& outputs);
void set_tape_hook(TapeHook hook);
void tape_activate(int delta);  // +1 when a tape starts recording, -1 when it stops
bool tapes_active();            // whether a tape records on this thread

}  // namespace jf
