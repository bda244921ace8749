// Graph passes, each in its own file; `optimize` runs them in order (pipeline.cc).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace jf {

// Removes nodes that neither feed an output nor have side effects.
void dead_code_elimination(Graph& g);
// Merges identical side-effect-free nodes (same op, inputs and attrs).
void common_subexpression_elimination(Graph& g);
// Evaluates small side-effect-free nodes whose inputs are all constants.
void constant_folding(Graph& g);
// Re-infers output specs in order, so folded constants sharpen downstream shapes.
void shape_inference(Graph& g);
// Conv2D -> BiasAdd -> residual Add / activation chains to FusedConv2D (oneDNN post-ops).
void fuse_conv(Graph& g);
// Chains of float32 NHWC convolutions kept in oneDNN's blocked layout between them (attrs
// _blocked_out / _blocked_in), where oneDNN prefers one on this CPU (conv_layout.cc).
void conv_blocked_layout(Graph& g);

// Copies `g` and runs the pipeline on the copy. With JITFLOW_DUMP=<dir>, writes the graph
// after each pass as <dir>/<label>.<NN>.<pass>.txt.
std::shared_ptr<Graph> optimize(const Graph& g, const std::string& label);

// jit_compile=True: removes the Assert nodes, as TF's XLA compiles Assert to nothing; ops
// that waited on one wait on what it waited on. Returns the removed nodes' names.
std::vector<std::string> drop_asserts(Graph& g);

// A While's step graph (loop_step.cc): its body followed by its condition on the body's
// results. Inputs: the loop variables, the body's captures, then the cond's captures;
// outputs: the next loop variables, then whether to run another iteration.
std::shared_ptr<Graph> loop_step_graph(const Graph& cond, const Graph& body, size_t num_vars);

// Rewires every use of `from` to `to` (inputs and graph outputs).
void replace_uses(Graph& g, Output from, Output to);

}  // namespace jf
