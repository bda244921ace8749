// The trace context stack: while a Python function is traced, every op goes through the
// dispatcher's hook into the innermost graph under construction, with name scopes and attr
// scopes (jit_scope) applied to each new node.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace jf {

struct SymbolicValue {
  std::weak_ptr<Graph> graph;
  Node* node;
  int index;
};

// An attr scope value: a fixed AttrValue, or a function of the new node (compile_ops=callable).
struct ScopedAttr {
  AttrValue value;
  std::function<bool(const Node&)> fn;
};

class TraceState {
 public:
  explicit TraceState(TraceState* parent);
  std::shared_ptr<Graph> graph;
  TraceState* parent;

  // Maps a tensor used by an op to a graph output: own symbolic values directly, eager
  // values as Const nodes, values of an enclosing graph as captured Placeholders.
  Output capture(const Tensor& t);
  Node* add_op(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs, const std::string* name,
               std::vector<TensorSpec>* specs_override = nullptr);
  Tensor symbolic(Node* n, int index) const;
  Node* add_placeholder(DType dt, const Shape& shape, const std::string& name);

  // Captured outer tensors, in order, with the Placeholder each one became.
  std::vector<std::pair<Tensor, Node*>> captures;
  std::vector<std::string> name_scopes;
  std::map<std::string, ScopedAttr> attr_scope;
  std::vector<Node*> control_deps;  // added as control inputs to every new node
  // Side effects on one resource keep program order (TF's automatic control dependencies):
  // the last stateful op per variable id (-1: every other stateful op, e.g. print, random).
  std::map<int64_t, Node*> last_stateful;
  // An If/While node whose branches or body touch resources takes its place in the order of
  // each of them, as the ops inside would: after the last earlier op on that resource, before
  // the next. Called once the node's subgraphs are set.
  void order_control_flow(Node* n);

 private:
  std::map<const void*, Node*> const_cache_;
  std::map<std::pair<const Node*, int>, Node*> capture_cache_;
};

// Stack of graphs under construction (per thread).
TraceState* current_trace();
bool is_tracing();
void push_trace(TraceState* s);
void pop_trace();
// Records an op in the innermost graph under construction and returns its symbolic outputs;
// false when no trace is open on this thread. The bindings install it as the dispatcher's
// trace hook: they sit above both, so tracing never includes the runtime.
bool record_traced_op(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs, const std::string* name,
                      std::vector<Tensor>* out);

// The user's source location for a node, provided by the Python bindings.
void set_source_location_fn(std::string (*fn)());

// jit_scope (docs/jit_scope.md, 'Attributes'): enter sets _XlaCompile/_XlaSeparateCompiledGradients (and
// _XlaScope for a root scope); exit restores the previous attr scope. Throws RuntimeError
// outside a trace, with TF's message.
struct JitScopeFrame {
  std::map<std::string, ScopedAttr> saved;
  TraceState* state = nullptr;
};
JitScopeFrame jit_scope_enter(bool compile, std::function<bool(const Node&)> compile_fn, bool separate);
void jit_scope_exit(const JitScopeFrame& f);

// Name scopes: returns the unique scope name that was pushed ("" when not tracing).
std::string name_scope_enter(const std::string& name);
void name_scope_exit();

}  // namespace jf
