// Trace recording: captures, node creation with scopes, jit_scope and name_scope state.
#include "tracing/trace_context.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "ir/partial_shape.h"

namespace jf {
namespace {

thread_local std::vector<TraceState*> t_stack;
std::string (*g_source_fn)() = nullptr;

// What shape inference sees for a graph value: the constant itself, or dtype+shape only.
Tensor infer_view(const Output& o) {
  if (const Tensor* v = o.node->const_value()) return *v;
  const TensorSpec& s = o.node->outputs[o.index];
  return Tensor(s.dtype, s.shape, nullptr);
}

}  // namespace

// A branch or loop body traced inside a jit_scope belongs to it: its ops inherit the scope's
// attrs, so the body is clustered like the ops around it. Other attr scopes stop at bodies.
TraceState::TraceState(TraceState* p) : graph(std::make_shared<Graph>()), parent(p) {
  if (!p) return;
  for (const char* k : {"_XlaCompile", "_XlaSeparateCompiledGradients", "_XlaScope"}) {
    auto it = p->attr_scope.find(k);
    if (it != p->attr_scope.end()) attr_scope[k] = it->second;
  }
}

Tensor TraceState::symbolic(Node* n, int index) const {
  const TensorSpec& s = n->outputs[index];
  Tensor t(s.dtype, s.shape, nullptr);
  t.set_sym(std::make_shared<SymbolicValue>(SymbolicValue{graph, n, index}));
  return t;
}

Node* TraceState::add_placeholder(DType dt, const Shape& shape, const std::string& name) {
  Attrs a;
  a.set("dtype", dt);
  a.set("shape", shape);
  Node* n = graph->add_node(OpId::Placeholder, graph->unique_name(name), {}, a, {{dt, shape}});
  if (g_source_fn) n->source = g_source_fn();
  return n;
}

Output TraceState::capture(const Tensor& t) {
  if (!t.is_symbolic()) {
    auto it = const_cache_.find(t.buffer().get());
    if (it != const_cache_.end() && it->second->outputs[0].shape == t.shape() &&
        it->second->outputs[0].dtype == t.dtype())
      return {it->second, 0};
    Attrs a;
    a.set("value", t);
    a.set("dtype", t.dtype());
    std::string base = name_scopes.empty() ? "Const" : name_scopes.back() + "/Const";
    Node* n = graph->add_node(OpId::Const, graph->unique_name(base), {}, a, {{t.dtype(), t.shape()}});
    const_cache_[t.buffer().get()] = n;
    return {n, 0};
  }
  const SymbolicValue& sv = *t.sym();
  auto g = sv.graph.lock();
  if (g == graph) return {sv.node, sv.index};
  bool outer = false;
  for (TraceState* p = parent; p && !outer; p = p->parent) outer = p->graph == g;
  if (!g || !outer)
    throw_invalid("A tensor from another jf.function's graph (", sv.node->name,
                  ") was used here; return it "
                  "from that function, or pass it in as an argument");
  auto key = std::make_pair(static_cast<const Node*>(sv.node), sv.index);
  auto it = capture_cache_.find(key);
  if (it != capture_cache_.end()) return {it->second, 0};
  Node* ph = add_placeholder(t.dtype(), t.shape(), "captured");
  captures.push_back({t, ph});
  capture_cache_[key] = ph;
  return {ph, 0};
}

Node* TraceState::add_op(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const std::string* name, std::vector<TensorSpec>* specs_override) {
  const OpDef& def = op_def(op);
  std::vector<Output> ins;
  std::vector<Tensor> views;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    ins.push_back(capture(t));
    views.push_back(infer_view(ins.back()));
  }
  std::vector<TensorSpec> specs;
  if (specs_override) {
    specs = *specs_override;
  } else {
    auto partial = partial_shape_inputs(def, ins);
    specs = infer_specs(def, views, attrs, partial.empty() ? nullptr : &partial);
  }
  std::string base = name && !name->empty() ? *name : std::string(def.name);
  if (!name_scopes.empty()) base = name_scopes.back() + "/" + base;
  Node* n = graph->add_node(op, graph->unique_name(base), std::move(ins), attrs, std::move(specs));
  if (g_source_fn) n->source = g_source_fn();
  n->control_inputs = control_deps;
  // Stateful ops on the same resource keep their program order through control edges, so
  // clustering and the executor's re-sorting never move a variable read across a write;
  // ops on different variables stay free to cluster around each other.
  if (def.flags & kStateful) {
    int64_t resource = n->attrs.has("var_id") ? n->attrs.get<int64_t>("var_id", -1) : -1;
    Node*& last = last_stateful[resource];
    if (last) n->control_inputs.push_back(last);
    last = n;
  }
  // Each stateful random node owns its own stream (TF: per-kernel state), so two functions
  // with the same seeds draw the same values, and each call of one function draws anew.
  if (def.flags & kRandomStream) {
    static std::atomic<int64_t> next_stream{1};
    n->attrs.set("_stream_id", next_stream.fetch_add(1));
  }
  // Attr scopes (jit_scope): set only attrs the op does not already have.
  for (auto& kv : attr_scope) {
    if (n->attrs.has(kv.first)) continue;
    if (kv.second.fn)
      n->attrs.set(kv.first, static_cast<bool>(kv.second.fn(*n)));
    else
      n->attrs.set(kv.first, kv.second.value);
  }
  return n;
}

namespace {
// The resources the stateful ops of g (and of its nested subgraphs) touch: variable ids, and
// -1 for stateful ops without one (print, random streams).
void collect_resources(const Graph& g, std::set<int64_t>& out) {
  for (const auto& up : g.nodes()) {
    if (op_def(up->op).flags & kStateful)
      out.insert(up->attrs.has("var_id") ? up->attrs.get<int64_t>("var_id", -1) : -1);
    for (const auto& sub : up->subgraphs)
      if (sub) collect_resources(*sub, out);
  }
}
}  // namespace

void TraceState::order_control_flow(Node* n) {
  std::set<int64_t> resources;
  for (const auto& sub : n->subgraphs)
    if (sub) collect_resources(*sub, resources);
  for (int64_t r : resources) {
    Node*& last = last_stateful[r];
    if (last && last != n &&
        std::find(n->control_inputs.begin(), n->control_inputs.end(), last) == n->control_inputs.end())
      n->control_inputs.push_back(last);
    last = n;
  }
}

TraceState* current_trace() { return t_stack.empty() ? nullptr : t_stack.back(); }
bool is_tracing() { return !t_stack.empty(); }
void push_trace(TraceState* s) { t_stack.push_back(s); }
void pop_trace() {
  JF_CHECK(!t_stack.empty());
  t_stack.pop_back();
}
bool record_traced_op(OpId op, const std::vector<Tensor>& inputs, const Attrs& attrs, const std::string* name,
                      std::vector<Tensor>* out) {
  if (t_stack.empty()) return false;
  TraceState* ts = t_stack.back();
  Node* n = ts->add_op(op, inputs, attrs, name);
  for (int i = 0; i < static_cast<int>(n->outputs.size()); ++i) out->push_back(ts->symbolic(n, i));
  return true;
}
void set_source_location_fn(std::string (*fn)()) { g_source_fn = fn; }

JitScopeFrame jit_scope_enter(bool compile, std::function<bool(const Node&)> compile_fn, bool separate) {
  TraceState* ts = current_trace();
  if (!ts)
    throw_runtime(
        "xla.experimental.jit_scope is not supported when eager execution is enabled. "
        "Try use it inside jf.function.");
  JitScopeFrame f{ts->attr_scope, ts};
  ScopedAttr c;
  c.value = compile;
  c.fn = std::move(compile_fn);
  ts->attr_scope["_XlaCompile"] = c;
  ts->attr_scope["_XlaSeparateCompiledGradients"] = ScopedAttr{separate, nullptr};
  Graph& g = *ts->graph;
  if (g.jit_scope_depth == 0) {
    ts->attr_scope["_XlaScope"] =
        ScopedAttr{std::string("jit_scope_") + std::to_string(g.jit_scope_count), nullptr};
    g.jit_scope_count++;
  }
  g.jit_scope_depth++;
  return f;
}

void jit_scope_exit(const JitScopeFrame& f) {
  f.state->attr_scope = f.saved;
  f.state->graph->jit_scope_depth--;
}

std::string name_scope_enter(const std::string& name) {
  TraceState* ts = current_trace();
  if (!ts) return "";
  std::string full = name;
  if (!name.empty() && name.back() == '/') {
    full = name.substr(0, name.size() - 1);  // an absolute scope, reused as is
  } else {
    if (!ts->name_scopes.empty()) full = ts->name_scopes.back() + "/" + name;
    full = ts->graph->unique_name(full);
  }
  ts->name_scopes.push_back(full);
  return full;
}

void name_scope_exit() {
  TraceState* ts = current_trace();
  if (ts && !ts->name_scopes.empty()) ts->name_scopes.pop_back();
}

}  // namespace jf

namespace jf {
std::vector<TraceState*> take_trace_stack() {
  std::vector<TraceState*> s;
  s.swap(t_stack);
  return s;
}
void restore_trace_stack(std::vector<TraceState*> s) { t_stack = std::move(s); }
}  // namespace jf
