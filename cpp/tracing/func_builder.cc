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

Output FuncBuilder::add_capture(const Tensor& t) {
  size_t before = state_.captures.size();
  Output o = state_.capture(t);
  if (state_.captures.size() > before) {
    state_.graph->inputs.push_back(o.node);
    capture_values_.push_back(t);
  }
  return o;
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

namespace {

// The variables that ops in g (and in its nested subgraphs) access, each with whether any of
// them writes it (an assignment, a Generator's draw) rather than only reads it.
void collect_variables(const Graph& g, std::map<int64_t, bool>& written) {
  for (const auto& up : g.nodes()) {
    if ((up->def().flags & kResourceAccess) && up->attrs.has("var_id")) {
      bool& w = written[up->attrs.get<int64_t>("var_id", -1)];
      w = w || up->op != OpId::ReadVariableOp;
    }
    for (const auto& sub : up->subgraphs)
      if (sub) collect_variables(*sub, written);
  }
}

// g's reads of variable `id` become Identity nodes of a new input of g captured from `value`
// (a read of the variable in the enclosing graph).
void hoist_reads(FuncBuilder& b, Graph& g, int64_t id, const Tensor& value) {
  std::vector<Node*> reads;
  for (const auto& up : g.nodes())
    if (up->op == OpId::ReadVariableOp && up->attrs.get<int64_t>("var_id", -1) == id)
      reads.push_back(up.get());
  if (reads.empty()) return;  // only nested subgraphs read it: they took it as an input already
  Output ph = b.add_capture(value);
  for (Node* r : reads) {
    Attrs kept;
    for (const auto& kv : r->attrs.items())
      if (kv.first != "var_id") kept.set(kv.first, kv.second);
    r->op = OpId::Identity;
    r->attrs = kept;
    r->inputs = {ph};
  }
  // The new input was created last: sort it ahead of the reads that now use it (the others
  // keep their order, creation order being the program order).
  ph.node->order_key = 0;
  g.topo_sort();
}

// A variable accessed inside the subgraphs of an If/While node is read once more just before
// the node, and that value becomes an input of the node, as TF passes the variable's handle:
//  - a variable the subgraphs only read: their reads become uses of that input, so they see
//    the same value (nothing inside writes it) and a gradient of the reads reaches the
//    variable as the gradient of the read before the node;
//  - a variable written inside: the reads stay (they see the writes), and the input is the
//    variable's value when the node starts, marked `_variable_port` on the Placeholder of
//    every subgraph (a While: its body) that accesses it. The gradient replays the subgraphs
//    from that value (autodiff/grads_control.py) and gives the reads' gradients to it.
// `subgraphs` pairs each subgraph with its builder; `port_graphs` says which may hold ports.
void variable_inputs(TraceState& ts, const std::vector<std::pair<FuncBuilder*, Graph*>>& subgraphs,
                     const std::vector<bool>& port_graphs) {
  std::map<int64_t, bool> written;
  for (const auto& sg : subgraphs) collect_variables(*sg.second, written);
  for (const auto& [id, w] : written) {
    if (id < 0) continue;
    Tensor value;
    auto read_before = [&]() {
      if (!value.is_symbolic()) {
        Attrs a;
        a.set("var_id", id);
        value = ts.symbolic(ts.add_op(OpId::ReadVariableOp, {}, a, nullptr), 0);
      }
      return value;
    };
    for (size_t i = 0; i < subgraphs.size(); ++i) {
      FuncBuilder& b = *subgraphs[i].first;
      Graph& g = *subgraphs[i].second;
      std::map<int64_t, bool> here;
      collect_variables(g, here);
      if (!here.count(id)) continue;
      if (!w)
        hoist_reads(b, g, id, read_before());
      else if (port_graphs[i])
        b.add_capture(read_before()).node->attrs.set("_variable_port", id);
    }
  }
}

}  // namespace

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
  variable_inputs(ts, {{&then_b, then_g.get()}, {&else_b, else_g.get()}}, {true, true});
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
  variable_inputs(ts, {{&cond_b, cond_g.get()}, {&body_b, body_g.get()}}, {false, true});
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
