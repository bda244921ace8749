// Function and branch graph construction, and the If/While nodes that call branches.
#include "tracing/func_builder.h"

#include <map>

namespace jf {

// The stack lives in trace_context.cc; these give TracePause access to it.
std::vector<TraceState*> take_trace_stack();
void restore_trace_stack(std::vector<TraceState*> s);

FuncBuilder::FuncBuilder(bool nested) : state_(nested ? current_trace() : nullptr) {}
FuncBuilder::~FuncBuilder() {
  if (entered_) pop_trace();
}

void FuncBuilder::enter() {
  push_trace(&state_);
  entered_ = true;
}
void FuncBuilder::exit() {
  if (entered_) pop_trace();
  entered_ = false;
}

Tensor FuncBuilder::placeholder(DType dt, const Shape& shape, const std::string& name) {
  Node* n = state_.add_placeholder(dt, shape, name.empty() ? "args" : name);
  args_.push_back(n);
  return state_.symbolic(n, 0);
}

std::shared_ptr<Graph> FuncBuilder::finish(const std::vector<Tensor>& outputs) {
  Graph& g = *state_.graph;
  for (const Tensor& t : outputs) g.outputs.push_back(state_.capture(t));
  g.inputs = args_;
  for (auto& c : state_.captures) {
    g.inputs.push_back(c.second);
    capture_values_.push_back(c.first);
  }
  return state_.graph;
}

TracePause::TracePause() : saved_(take_trace_stack()) {}
TracePause::~TracePause() { restore_trace_stack(std::move(saved_)); }

static Tensor eval_node_output(Node* n, int index, std::map<Node*, std::vector<Tensor>>& memo) {
  auto it = memo.find(n);
  if (it != memo.end()) return it->second[index];
  if (n->op == OpId::Placeholder || (n->def().flags & kNoKernel))
    throw_invalid("this value depends on the traced function's input '", n->name,
                  "'; a variable's initial value must not (create it from constants or a callable)");
  std::vector<Tensor> ins;
  for (const Output& o : n->inputs) ins.push_back(eval_node_output(o.node, o.index, memo));
  auto outs = run_kernel(n->def(), ins, n->attrs);
  memo[n] = outs;
  return outs[index];
}

Tensor evaluate_lifted(const Tensor& t) {
  if (!t.is_symbolic()) return t;
  std::map<Node*, std::vector<Tensor>> memo;
  return eval_node_output(t.sym()->node, t.sym()->index, memo);
}

static TraceState& tracing_or_fail(const char* what) {
  TraceState* ts = current_trace();
  if (!ts) throw_invalid(what, " graph nodes can only be built while tracing");
  return *ts;
}

static std::string spec_str(const TensorSpec& s) { return str_cat(dtype_name(s.dtype), s.shape.str()); }

std::vector<Tensor> make_if(const Tensor& pred, FuncBuilder& then_b, std::shared_ptr<Graph> then_g,
                            FuncBuilder& else_b, std::shared_ptr<Graph> else_g, const std::string* name) {
  TraceState& ts = tracing_or_fail("jf.cond");
  if (pred.dtype() != DType::kBool || pred.rank() != 0)
    throw_invalid("jf.cond: the predicate must be a scalar bool tensor, got ", pred.desc());
  if (then_g->outputs.size() != else_g->outputs.size())
    throw_invalid("jf.cond: true_fn and false_fn must return the same structure; they returned ",
                  then_g->outputs.size(), " and ", else_g->outputs.size(), " tensors");
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < then_g->outputs.size(); ++i) {
    const TensorSpec& a = then_g->outputs[i].node->outputs[then_g->outputs[i].index];
    const TensorSpec& b = else_g->outputs[i].node->outputs[else_g->outputs[i].index];
    if (a.dtype != b.dtype || a.shape.rank() != b.shape.rank())
      throw_invalid("jf.cond: output ", i, " of true_fn is ", spec_str(a), " but false_fn's is ",
                    spec_str(b));
    TensorSpec m = a;
    for (int d = 0; d < a.shape.rank(); ++d)
      if (a.shape[d] != b.shape[d]) m.shape[d] = -1;
    specs.push_back(m);
  }
  std::vector<Tensor> ins{pred};
  for (const Tensor& t : then_b.capture_values()) ins.push_back(t);
  for (const Tensor& t : else_b.capture_values()) ins.push_back(t);
  Attrs a;
  a.set("num_then_inputs", static_cast<int64_t>(then_b.capture_values().size()));
  Node* n = ts.add_op(OpId::If, ins, a, name, &specs);
  n->subgraphs = {then_g, else_g};
  ts.order_control_flow(n);
  std::vector<Tensor> out;
  for (int i = 0; i < static_cast<int>(specs.size()); ++i) out.push_back(ts.symbolic(n, i));
  return out;
}

std::vector<Tensor> make_while(const std::vector<Tensor>& loop_vars, FuncBuilder& cond_b,
                               std::shared_ptr<Graph> cond_g, FuncBuilder& body_b,
                               std::shared_ptr<Graph> body_g, int64_t maximum_iterations,
                               const std::string* name, const std::vector<Shape>& invariants) {
  TraceState& ts = tracing_or_fail("jf.while_loop");
  if (cond_g->outputs.size() != 1) throw_invalid("jf.while_loop: cond must return one boolean scalar");
  const TensorSpec& cs = cond_g->outputs[0].node->outputs[cond_g->outputs[0].index];
  if (cs.dtype != DType::kBool || cs.shape.rank() != 0)
    throw_invalid("jf.while_loop: cond must return a scalar bool tensor, got ", spec_str(cs));
  if (body_g->outputs.size() != loop_vars.size())
    throw_invalid("jf.while_loop: body returned ", body_g->outputs.size(), " tensors for ", loop_vars.size(),
                  " loop variables");
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < loop_vars.size(); ++i) {
    const TensorSpec& b = body_g->outputs[i].node->outputs[body_g->outputs[i].index];
    TensorSpec v{loop_vars[i].dtype(), i < invariants.size() ? invariants[i] : loop_vars[i].shape()};
    bool ok = b.dtype == v.dtype && b.shape.rank() == v.shape.rank();
    for (int d = 0; ok && d < v.shape.rank(); ++d) ok = v.shape[d] < 0 || b.shape[d] == v.shape[d];
    if (!ok)
      throw_invalid("jf.while_loop: loop variable ", i, " enters the loop as ", spec_str(v), " but has ",
                    spec_str(b), " after one iteration; shapes and dtypes of loop variables must not change");
    specs.push_back(v);
  }
  std::vector<Tensor> ins = loop_vars;
  for (const Tensor& t : cond_b.capture_values()) ins.push_back(t);
  for (const Tensor& t : body_b.capture_values()) ins.push_back(t);
  Attrs a;
  a.set("num_loop_vars", static_cast<int64_t>(loop_vars.size()));
  a.set("num_cond_captures", static_cast<int64_t>(cond_b.capture_values().size()));
  a.set("maximum_iterations", maximum_iterations);
  Node* n = ts.add_op(OpId::While, ins, a, name, &specs);
  n->subgraphs = {cond_g, body_g};
  ts.order_control_flow(n);
  std::vector<Tensor> out;
  for (int i = 0; i < static_cast<int>(specs.size()); ++i) out.push_back(ts.symbolic(n, i));
  return out;
}

}  // namespace jf
