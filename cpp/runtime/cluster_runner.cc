// Cluster execution.
#include "runtime/cluster_runner.h"

#include <cstring>
#include <map>
#include <set>

#include "ir/shape_fns.h"
#include "runtime/gpu/gpu_cluster.h"
#include "runtime/placement.h"
#include "support/stats.h"
#include "support/thread_pool.h"

namespace jf {

// codegen/lower.cc: lower_cluster for a graph whose shapes are one run's (a specialization
// serves every run with its size-1 pattern), so no dims are assumed equal from them.
std::unique_ptr<ClusterProgram> lower_cluster_for_varying_shapes(const Graph& g,
                                                                 const std::vector<Node*>& members,
                                                                 std::string* why);

// The inputs whose values prepare() reads: those a member takes as a shape input (a reshape
// target, a slice bound), directly or through members computed before the kernels. Only
// their values key the prepared parameters, so a loop counter that merely flows into the
// math does not make every iteration prepare again.
static std::vector<char> inputs_read_by_value(const ClusterProgram& p) {
  std::map<const Node*, size_t> member;
  for (size_t m = 0; m < p.members.size(); ++m) member[p.members[m]] = m;
  std::map<std::pair<const Node*, int>, size_t> input;
  for (size_t i = 0; i < p.inputs.size(); ++i) input[{p.inputs[i].node, p.inputs[i].index}] = i;
  std::vector<char> needed(p.members.size(), 0), out(p.inputs.size(), 0);
  for (size_t m = p.members.size(); m-- > 0;) {
    const Node& n = *p.members[m];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (!needed[m] && !n.def().is_shape_input(k, n.inputs.size())) continue;
      const Output& o = n.inputs[k];
      if (auto it = member.find(o.node); it != member.end())
        needed[it->second] = 1;
      else if (auto jt = input.find({o.node, o.index}); jt != input.end())
        out[jt->second] = 1;
    }
  }
  return out;
}

// A compiled loop splits a kernel across threads only when one iteration of it costs this
// many times what a single run needs (parallel_for's 1e5 cycles): on this 2-core machine a
// split costs a few microseconds per iteration when the workers are spinning and far more
// when another process has taken their core, while the tanh recurrence at 16,384 float32
// (about 4e5 cycles a step) runs 5.1 ms per 1,000 steps on one thread.
constexpr double kLoopSplitScale = 10.0;

// Cycles per output element of each loop step, from the ops fused into it: what run_loop
// splits a step across threads by, since a loop pays the split's cost once per iteration and
// should still win at the sizes a single run would keep on one thread (a tanh recurrence).
static std::vector<double> step_costs(const ClusterProgram& p) {
  std::vector<double> out;
  for (const Step& s : p.steps) {
    double cost = 0;
    if (s.kind != Step::kLoop || !s.root) {  // a library call, or another kind of step
      out.push_back(4.0);
      continue;
    }
    std::vector<const KExpr*> todo{s.root};
    for (const KExpr* x : s.siblings) todo.push_back(x);
    std::set<const KExpr*> seen;
    while (!todo.empty()) {
      const KExpr* e = todo.back();
      todo.pop_back();
      if (!seen.insert(e).second) continue;
      if (e->kind == KKind::kUnary || e->kind == KKind::kBinary) {
        const Cost c = op_def(e->op).cost;
        cost += c == Cost::kCheap ? 1 : c == Cost::kTranscendental ? 16 : 32;
      } else {
        cost += 1;
      }
      for (const KExpr* o : e->operands)
        if (!o->materialized || o == s.root) todo.push_back(o);
    }
    out.push_back(std::max(cost, 4.0));
  }
  return out;
}

CompiledClusterRef compile_cluster(ClusterToCompile c) {
  auto cc = std::make_shared<CompiledCluster>();
  cc->name = std::move(c.name);
  cc->scope = std::move(c.scope);
  cc->label = c.label;
  cc->must_compile = c.must_compile;
  cc->op_names = std::move(c.op_names);
  cc->program = std::move(c.program);
  cc->value_inputs = inputs_read_by_value(*cc->program);
  if (c.gpu_device >= 0) {
    compile_for_gpu(*cc, c.gpu_device, c.label);
  } else {
    fuse_row_groups(cc->program.get());  // the NVPTX backend runs the steps one by one
    cc->kernels = compile_cpu(*cc->program, c.label);
  }
  cc->step_cost = step_costs(*cc->program);  // per step as compiled
  (cc->kernels.from_cache ? stats().cache_hits : stats().compilations).fetch_add(1);
  return {cc, cc->program.get(), cc->kernels.from_cache, cc->kernels.compile_seconds};
}

namespace {
Tensor view_of(const Tensor& t) { return Tensor(t.dtype(), t.shape(), nullptr); }

// The value of a Shape member, known from its input's shape before any kernel runs: shape
// inference of the members that take it as a shape input (a fill to the shape of x) reads it.
Tensor shape_value(const TensorSpec& out, const Shape& in) {
  std::vector<int64_t> dims(in.begin(), in.end());
  return Tensor::from_int64s(dims, out.dtype);
}
}  // namespace

// Small integer inputs: prepare reads their values (they may be shapes or slice bounds).
bool CompiledCluster::shape_like_input(const Tensor& t) {
  return is_int(t.dtype()) && t.num_elements() <= kMaxShapeValueElements;
}
static bool same_values(const Tensor& t, const std::vector<int64_t>& v) {
  if (static_cast<int64_t>(v.size()) != t.num_elements()) return false;
  for (size_t i = 0; i < v.size(); ++i)
    if (t.get_int(static_cast<int64_t>(i)) != v[i]) return false;
  return true;
}

// A member whose value the runner computes before the kernels: a small integer result of
// known values (lowering allowed only such members to feed shape inputs).
static bool computable_now(const Node& n, const std::vector<TensorSpec>& specs,
                           const std::vector<Tensor>& in) {
  if (n.stateful() || specs.size() != 1 || !is_int(specs[0].dtype) ||
      specs[0].shape.num_elements() > kMaxShapeValueElements || (n.def().flags & kNoKernel))
    return false;
  for (const Tensor& t : in)
    if (!t.buffer()) return false;
  return true;
}

// The value of member m known before the kernels run, given its inputs' views: a Shape's,
// and a small integer lowering marked (value_before_run); else an undefined tensor.
Tensor CompiledCluster::member_value(size_t m, const std::vector<TensorSpec>& specs,
                                     const std::vector<Tensor>& views) const {
  const ClusterProgram& p = *program;
  const Node& n = *p.members[m];
  if (n.op == OpId::Shape) return shape_value(specs[0], views[0].shape());
  if (!p.value_before_run.empty() && p.value_before_run[m] && computable_now(n, specs, views))
    return run_kernel(n.def(), views, n.attrs)[0];  // a slice bound i + 1
  return Tensor();
}

// Which dims are 1: the part of the shapes a program's dims depend on.
static void add_pattern(const Shape& s, std::string* k) {
  for (int d = 0; d < s.rank(); ++d) *k += s[d] == 1 ? '1' : 'n';
  *k += '|';
}

std::string CompiledCluster::fallback_reason() const {
  std::lock_guard<std::mutex> g(spec_mu_);
  return fallback_reason_;
}

int CompiledCluster::num_specializations() const {
  std::lock_guard<std::mutex> g(spec_mu_);
  int n = 0;
  for (const auto& kv : specializations_) n += kv.second.cluster != nullptr;
  return n;
}

std::vector<Tensor> CompiledCluster::fall_back(const std::vector<Tensor>& inputs,
                                               const std::string& why) const {
  // The message is built only for the error or the one warning, not for every eager run.
  auto message = [&] {
    std::string inputs_desc, ops;
    for (const Tensor& t : inputs) inputs_desc += (inputs_desc.empty() ? "" : ", ") + t.desc();
    int shown = 0;
    for (const Node* n : program->members)
      if (n->op != OpId::Const && shown++ < 4) ops += (ops.empty() ? "" : ", ") + n->name;
    if (shown > 4) ops += ", ...";
    return str_cat(label, " (ops ", ops, ") cannot run compiled code for inputs (", inputs_desc, "): ", why);
  };
  if (must_compile) throw_invalid("jit_compile=True: ", message());
  {
    std::lock_guard<std::mutex> g(spec_mu_);
    fallback_reason_ = why;
  }
  fallbacks_.fetch_add(1);
  stats().cluster_fallbacks.fetch_add(1);
  if (!warned_.exchange(true))
    warn("jitflow: " + message() +
         "; it runs on eager kernels (counted in "
         "jf.debugging.stats()['cluster_fallbacks'], shown by jf.explain)");
  return run_eagerly(inputs);
}

// Entries are never changed once stored (std::map keeps their addresses).
const CompiledCluster::Specialization& CompiledCluster::specialized_for(const std::vector<Tensor>& inputs,
                                                                        const std::string& key) const {
  {
    std::lock_guard<std::mutex> g(spec_mu_);
    auto it = specializations_.find(key);
    if (it != specializations_.end()) return it->second;
  }
  Specialization sp;
  try {
    // Built outside the lock: another thread may build the same one; the first stored wins.
    auto sc = specialize(inputs);
    sp.cluster = sc;
    std::map<const Node*, int> index;
    for (size_t i = 0; i < sc->owned_graph->inputs.size(); ++i)
      index[sc->owned_graph->inputs[i]] = static_cast<int>(i);
    for (const Output& o : sc->program->inputs) sp.input_of.push_back(index.at(o.node));
    stats().specializations.fetch_add(1);
  } catch (const Error& e) {
    sp.error = str_cat("its specialization for this broadcast pattern could not be compiled: ", e.what());
  }
  std::lock_guard<std::mutex> g(spec_mu_);
  return specializations_.emplace(key, std::move(sp)).first->second;
}

// The cluster's members copied into a graph of their own whose inputs have these inputs'
// shapes, lowered and compiled like any cluster. Lowering keeps only which dims are 1 (the
// others are run-time parameters), so the program serves every shapes of this pattern, and
// the compile cache, keyed by the program, serves a pattern seen before in any function.
std::shared_ptr<const CompiledCluster> CompiledCluster::specialize(const std::vector<Tensor>& inputs) const {
  const ClusterProgram& p = *program;
  auto g = std::make_shared<Graph>();
  std::map<std::pair<const Node*, int>, Output> value;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    TensorSpec s{inputs[i].dtype(), inputs[i].shape()};
    Node* ph = g->add_node(OpId::Placeholder, g->unique_name("input"), {}, Attrs(), {s});
    g->inputs.push_back(ph);
    value[{p.inputs[i].node, p.inputs[i].index}] = {ph, 0};
  }
  std::vector<Node*> members;
  std::map<const Node*, Tensor> shape_values;  // member_value()s, for their consumers
  for (Node* n : p.members) {
    std::vector<Output> ins;
    std::vector<Tensor> views;
    for (const Output& o : n->inputs) {
      auto it = value.find({o.node, o.index});
      if (it == value.end()) {
        const Tensor* c = o.node->const_value();
        JF_CHECK(c, name, ": input ", o.node->name, " of ", n->name, " is not a cluster value");
        Node* k = g->add_node(OpId::Const, g->unique_name(o.node->name), {}, o.node->attrs, o.node->outputs);
        it = value.emplace(std::make_pair(o.node, o.index), Output{k, o.index}).first;
      }
      ins.push_back(it->second);
      const Tensor* c = it->second.node->const_value();
      const TensorSpec& s = it->second.node->outputs[it->second.index];
      auto sv = shape_values.find(it->second.node);
      views.push_back(c ? *c : sv != shape_values.end() ? sv->second : Tensor(s.dtype, s.shape, nullptr));
    }
    std::vector<TensorSpec> specs =
        n->op == OpId::Const ? n->outputs : infer_specs(n->def(), views, n->attrs);
    Node* m = g->add_node(n->op, n->name, ins, n->attrs, specs);
    Tensor known = member_value(members.size(), specs, views);
    if (known.defined()) shape_values[m] = known;
    members.push_back(m);
    for (size_t k = 0; k < specs.size(); ++k) value[{n, static_cast<int>(k)}] = {m, static_cast<int>(k)};
  }
  for (const Output& o : p.outputs) g->outputs.push_back(value.at({o.node, o.index}));
  std::string why;
  ClusterToCompile todo{name,
                        scope,
                        label + ".specialized",
                        op_names,
                        lower_cluster_for_varying_shapes(*g, members, &why),
                        gpu_device,
                        must_compile};
  if (!todo.program) throw_unimplemented(why);
  auto cc = std::const_pointer_cast<CompiledCluster>(compile_cluster(std::move(todo)).cluster);
  cc->owned_graph = g;
  cc->is_specialization = true;
  return cc;
}

// Concrete specs of every member (shape inference on the actual input shapes), then the
// parameter slots. Returns false when a dim equality the kernels assume does not hold.
bool CompiledCluster::prepare(const std::vector<Tensor>& inputs, Prepared* pr) const {
  const ClusterProgram& p = *program;
  std::map<const Node*, int> index;
  for (size_t i = 0; i < p.members.size(); ++i) index[p.members[i]] = static_cast<int>(i);
  std::map<std::pair<const Node*, int>, const Tensor*> external;
  std::map<std::pair<const Node*, int>, size_t> external_index;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    external[{p.inputs[i].node, p.inputs[i].index}] = &inputs[i];
    external_index[{p.inputs[i].node, p.inputs[i].index}] = i;
  }
  std::vector<std::vector<TensorSpec>> specs(p.members.size());
  std::vector<std::vector<Tensor>> views(p.members.size());
  std::vector<Tensor> values(p.members.size());  // member_value()s, for their consumers
  for (size_t m = 0; m < p.members.size(); ++m) {
    Node* n = p.members[m];
    std::vector<Tensor>& v = views[m];
    for (const Output& o : n->inputs) {
      if (const Tensor* c = o.node->const_value())
        v.push_back(*c);
      else if (index.count(o.node)) {
        const TensorSpec& s = specs[index[o.node]][o.index];
        const Tensor& known = values[index[o.node]];
        v.push_back(known.defined() ? known : Tensor(s.dtype, s.shape, nullptr));
      } else {
        const Tensor* t = external.at({o.node, o.index});
        // Inputs read as shapes keep their values (a run-time reshape, a slice bound).
        v.push_back(reads_value(external_index.at({o.node, o.index}), *t) ? *t : view_of(*t));
      }
    }
    specs[m] = n->op == OpId::Const ? n->outputs : infer_specs(n->def(), v, n->attrs);
    values[m] = member_value(m, specs[m], v);
  }
  for (const Tensor& t : inputs) add_pattern(t.shape(), &pr->pattern);
  for (const auto& node_specs : specs)
    for (const TensorSpec& s : node_specs) add_pattern(s.shape, &pr->pattern);
  pr->step_specs.assign(p.steps.size(), {});
  pr->step_in_shapes.assign(p.steps.size(), {});
  pr->library_out.assign(p.num_buffers, 0);
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kind == Step::kLibrary) {
      const int m = index.at(p.steps[k].node);
      pr->step_specs[k] = specs[m];
      for (const Tensor& v : views[m]) pr->step_in_shapes[k].push_back(v.shape());
      pr->library_out[p.steps[k].root->buffer] = 1;
      for (const KExpr* o : p.steps[k].siblings) pr->library_out[o->buffer] = 1;
    }
  pr->params.assign(p.num_params, 0);
  for (int s = 0; s < p.num_params; ++s) {
    const ParamFill& f = p.fills[s];
    int64_t v = 0;
    switch (f.kind) {
      case ParamFill::kInputDim: {
        int nin = static_cast<int>(p.inputs.size());
        v = f.a < nin ? inputs[f.a].shape()[f.b] : p.constants[f.a - nin].shape()[f.b];
        break;
      }
      case ParamFill::kNodeDim:
        v = specs[f.a][f.b].shape[f.c];
        break;
      case ParamFill::kSliceStart:
      case ParamFill::kSliceStride: {
        Node* n = p.members[f.a];
        for (size_t k = 1; k < views[f.a].size(); ++k)
          JF_CHECK(views[f.a][k].buffer(), n->name,
                   ": a slice bound's value is not known before the kernels run");
        if (n->op == OpId::Slice) {  // Slice(input, begin, size): begin[d], unit strides
          v = f.kind == ParamFill::kSliceStart ? views[f.a][1].to_int64s().at(f.b) : 1;
          break;
        }
        OpCall call(&n->def(), views[f.a], n->attrs);
        SlicePlan plan = strided_slice_plan(call, views[f.a][0].shape(), views[f.a][1].to_int64s(),
                                            views[f.a][2].to_int64s(), views[f.a][3].to_int64s());
        v = f.kind == ParamFill::kSliceStart ? plan.dims[f.b].start : plan.dims[f.b].stride;
        break;
      }
      case ParamFill::kSplitStart:
        for (int k = 0; k < f.b; ++k) v += specs[f.a][k].shape[f.c];
        break;
    }
    pr->params[s] = v;
  }
  for (auto& eq : p.equal_slots)
    if (pr->params[eq.first] != pr->params[eq.second]) return false;
  pr->buffer_shapes.assign(p.num_buffers, Shape());
  for (int b = 0; b < p.num_buffers; ++b) {
    const KExpr* e = p.buffer_expr[b];
    if (!e) continue;
    Shape s;
    for (int d : e->dims) s.push_back(d < 0 ? 1 : pr->params[d]);
    pr->buffer_shapes[b] = s;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    pr->input_shapes.push_back(inputs[i].shape());
    pr->input_values.push_back(reads_value(i, inputs[i]) ? inputs[i].to_int64s() : std::vector<int64_t>());
  }
  pr->ok = true;
  return true;
}

std::vector<Tensor> CompiledCluster::run_eagerly(const std::vector<Tensor>& inputs) const {
  const ClusterProgram& p = *program;
  std::map<std::pair<const Node*, int>, Tensor> vals;
  for (size_t i = 0; i < p.inputs.size(); ++i) vals[{p.inputs[i].node, p.inputs[i].index}] = inputs[i];
  // An inlined If (if_to_select.h) runs the taken branch only: each of its merge selects
  // holds the condition, and takes the taken branch's value.
  std::map<std::string, const Node*> merge;
  for (const Node* n : p.members)
    if (n->attrs.has("_merge")) merge[n->attrs.get<std::string>("_merge", "")] = n;
  auto value = [&](const Output& o) {
    const Tensor* c = o.node->const_value();
    return c ? *c : vals.at({o.node, o.index});
  };
  for (Node* n : p.members) {
    if (n->attrs.has("_guard")) {
      const Node* m = merge.at(n->attrs.get<std::string>("_guard", ""));
      if ((value(m->inputs[0]).get_int(0) != 0) != n->attrs.get<bool>("_guard_then", true)) continue;
    }
    if (n->attrs.has("_merge")) {
      vals[{n, 0}] = value(n->inputs[value(n->inputs[0]).get_int(0) != 0 ? 1 : 2]);
      continue;
    }
    std::vector<Tensor> in;
    for (const Output& o : n->inputs) in.push_back(value(o));
    auto out = gpu_device >= 0 ? run_placed(n->def(), in, n->attrs, Device{DeviceType::kGPU, gpu_device})
                               : run_kernel(n->def(), in, n->attrs);
    for (size_t k = 0; k < out.size(); ++k) vals[{n, static_cast<int>(k)}] = out[k];
  }
  std::vector<Tensor> res;
  for (const Output& o : p.outputs) {
    auto it = vals.find({o.node, o.index});
    if (it != vals.end()) {
      res.push_back(it->second);
      continue;
    }
    // A check in the branch not taken: an output only so that it runs, read by nothing.
    const TensorSpec& s = o.node->outputs[o.index];
    res.push_back(Tensor::empty(s.dtype, s.shape.fully_defined() ? s.shape : Shape()));
  }
  return res;
}

const CompiledCluster::Prepared* CompiledCluster::prepared_for(RunState& st,
                                                               const std::vector<Tensor>& inputs,
                                                               std::string* pattern) const {
  Prepared* pr = st.prepared.get();
  bool same = pr && pr->input_shapes.size() == inputs.size();
  for (size_t i = 0; same && i < inputs.size(); ++i)
    same = pr->input_shapes[i] == inputs[i].shape() &&
           (!reads_value(i, inputs[i]) || same_values(inputs[i], pr->input_values[i]));
  if (same) return pr;
  auto fresh = std::make_unique<Prepared>();
  if (!prepare(inputs, fresh.get())) {  // another size-1 (broadcast) pattern than traced
    *pattern = fresh->pattern;
    return nullptr;
  }
  st.prepared = std::move(fresh);
  return st.prepared.get();
}

void CompiledCluster::bind_buffers(RunState& st, const Prepared& pr, const std::vector<Tensor>& inputs,
                                   int64_t* status) const {
  const ClusterProgram& p = *program;
  int nin = static_cast<int>(inputs.size());
  std::vector<Tensor>& bufs = st.bufs;
  std::vector<char*>& ptrs = st.ptrs;
  bufs.resize(p.num_buffers);
  ptrs.assign(p.num_buffers + 1, nullptr);
  ptrs[p.num_buffers] = reinterpret_cast<char*>(status);
  for (int i = 0; i < nin; ++i) bufs[i] = inputs[i];
  for (size_t c = 0; c < p.constants.size(); ++c) bufs[nin + c] = p.constants[c];
  for (int b = 0; b < p.num_buffers; ++b) {
    const bool scratch = !p.scratch_only.empty() && p.scratch_only[b];  // one row, in the kernel
    if (!bufs[b].defined() && p.buffer_expr[b] && !pr.library_out[b] && !scratch)
      bufs[b] = Tensor::empty_reusing(p.buffer_expr[b]->dtype, pr.buffer_shapes[b], &st.recycle[b]);
    if (bufs[b].defined() && bufs[b].buffer()) ptrs[b] = static_cast<char*>(bufs[b].raw());
  }
}

// Eager's error for a strict TensorArrayWrite at element j of an array of `rows`.
[[noreturn]] static void raise_bad_row(int64_t j, int64_t rows) {
  throw_invalid("Trying to modify element ", j, " in a list with ", rows, " elements.");
}

// A TensorArrayWrite's element index, checked against the array's rows: -1 for an index a
// dropping write (a gradient's) skips; a strict write's bad index raises eager's error.
static int64_t array_row(const char* index, DType dt, int64_t rows, bool strict) {
  const int64_t j = dt == DType::kInt64 ? *reinterpret_cast<const int64_t*>(index)
                                        : *reinterpret_cast<const int32_t*>(index);
  if (j >= 0 && j < rows) return j;
  if (strict) raise_bad_row(j, rows);
  return -1;
}

// A compiled TensorArrayWrite: the array with one element set. It writes into the array's own
// buffer when the step may (Step::in_place) and that buffer is this run's (an earlier step's)
// or the loop runner made it the result's (a carried array); otherwise into a copy.
void CompiledCluster::write_array(RunState& st, const Prepared& pr, size_t k) const {
  const ClusterProgram& p = *program;
  const Step& s = p.steps[k];
  std::vector<Tensor>& bufs = st.bufs;
  const int src = s.args[0]->buffer, dst = s.root->buffer;
  const Shape& shape = pr.step_specs[k][0].shape;
  const DType dt = pr.step_specs[k][0].dtype;
  const int64_t rows = shape[0];
  const size_t row = rows ? dtype_size(dt) * static_cast<size_t>(shape.num_elements() / rows) : 0;
  const bool own = src >= static_cast<int>(p.inputs.size() + p.constants.size());
  const bool aliased =
      bufs[dst].defined() && bufs[dst].buffer() && bufs[src].buffer() && bufs[dst].raw() == bufs[src].raw();
  if (!(s.in_place && (own || aliased))) {
    Tensor out = Tensor::empty_reusing(dt, shape, &st.recycle[dst]);
    const size_t bytes = row * static_cast<size_t>(rows);
    if (bufs[src].shape() != shape) {  // an array without elements learns their shape: zeros
      std::memset(out.raw(), 0, bytes);
    } else if (bytes) {
      std::memcpy(out.raw(), bufs[src].raw(), bytes);
      stats().tensor_array_copied_bytes.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    }
    bufs[dst] = std::move(out);
  } else if (!aliased) {
    bufs[dst] = bufs[src];
  }
  st.ptrs[dst] = static_cast<char*>(bufs[dst].raw());
  const Tensor& ix = bufs[s.args[1]->buffer];
  const int64_t j = array_row(static_cast<const char*>(ix.raw()), ix.dtype(), rows,
                              s.node->attrs.get<int64_t>("mode", 0) == 0);
  if (j >= 0 && row) std::memcpy(st.ptrs[dst] + j * row, bufs[s.args[2]->buffer].raw(), row);
}

bool CompiledCluster::small_dot_params(const Prepared& pr, size_t k, int64_t* dims) const {
  const Step& s = program->steps[k];
  const TensorSpec& spec = pr.step_specs[k][0];
  const DotForm form = s.dot;
  const Shape& bs = pr.step_in_shapes[k][1];  // B: [depth, n], or [n, depth] transposed
  const int64_t m = spec.shape[0], n = spec.shape[1], depth = bs[form.transpose_b ? 1 : 0];
  if (m * n * depth > kSmallDotVolume || depth > (m == 1 ? kSmallDotMaxDepth / 2 : kSmallDotMaxDepth))
    return false;
  if (form.transpose_b && (n * depth > kSmallDotTransposedB || m < kSmallDotTransposedRows)) return false;
  dims[kDotM] = m, dims[kDotN] = n, dims[kDotK] = depth;
  dims[kDotA] = s.args[0]->buffer, dims[kDotB] = s.args[1]->buffer, dims[kDotC] = s.root->buffer;
  return true;
}

bool CompiledCluster::run_small_dot(RunState& st, const Prepared& pr, size_t k) const {
  int64_t dims[kDotParams];
  if (!small_dot_params(pr, k, dims)) return false;
  const TensorSpec& spec = pr.step_specs[k][0];
  const DotForm form = program->steps[k].dot;
  const int64_t m = dims[kDotM], n = dims[kDotN];
  const int c = static_cast<int>(dims[kDotC]);
  st.bufs[c] = Tensor::empty_reusing(spec.dtype, spec.shape, &st.recycle[c]);
  st.ptrs[c] = static_cast<char*>(st.bufs[c].raw());
  if (!kernels.small_dots_ready()) {  // quick code, whose product entries are stubs
    if (m && n) small_dot_reference(st.ptrs.data(), dims, spec.dtype, form);
    return true;
  }
  stats().small_dot_runs.fetch_add(1, std::memory_order_relaxed);
  if (m && n) kernels.fns[k](st.ptrs.data(), dims, 0, m);
  return true;
}

// A step of the branch an If did not take: its buffers are read only by the If's merge
// selects, which pick the other branch's values, but they read every operand, so a library
// step's outputs (which its kernel would allocate) are given memory of their size.
void CompiledCluster::skip_step(RunState& st, const Prepared& pr, const Step& s) const {
  stats().skipped_branch_steps.fetch_add(1, std::memory_order_relaxed);
  if (s.kind != Step::kLibrary) return;
  std::vector<const KExpr*> outs{s.root};
  outs.insert(outs.end(), s.siblings.begin(), s.siblings.end());
  for (const KExpr* e : outs) {
    Tensor& t = st.bufs[e->buffer];
    if (t.defined() && t.buffer() && t.dtype() == e->dtype && t.shape() == pr.buffer_shapes[e->buffer])
      continue;
    t = Tensor::empty_reusing(e->dtype, pr.buffer_shapes[e->buffer], &st.recycle[e->buffer]);
    st.ptrs[e->buffer] = static_cast<char*>(t.raw());
  }
}

void CompiledCluster::run_steps(RunState& st, const Prepared& pr, bool loop) const {
  const ClusterProgram& p = *program;
  std::vector<Tensor>& bufs = st.bufs;
  std::vector<char*>& ptrs = st.ptrs;
  const int64_t* params = pr.params.data();
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    if (!step_runs(s, ptrs.data())) {
      skip_step(st, pr, s);
      continue;
    }
    if (s.kind == Step::kLibrary && s.node->op == OpId::TensorArrayWrite) {
      write_array(st, pr, k);
      continue;
    }
    if (s.kind == Step::kLibrary && k < kernels.fns.size() && kernels.fns[k] && run_small_dot(st, pr, k))
      continue;
    if (s.kind == Step::kLibrary) {
      // Specs were inferred once per input shapes: run the Eigen kernel directly.
      st.lib_in.clear();
      for (size_t i = 0; i < s.args.size(); ++i)
        st.lib_in.push_back(bufs[s.args[i]->buffer].reshaped(pr.step_in_shapes[k][i]));
      OpCall call(&s.node->def(), st.lib_in, s.node->attrs);
      call.fixed_out = &pr.step_specs[k];
      call.recycle = &st.recycle[s.root->buffer];
      call.results.swap(st.lib_out);
      s.node->def().kernel(call);
      call.results.swap(st.lib_out);
      bufs[s.root->buffer] = std::move(st.lib_out[0]);
      ptrs[s.root->buffer] = static_cast<char*>(bufs[s.root->buffer].raw());
      for (size_t j = 0; j < s.siblings.size(); ++j) {  // a kernel's further outputs
        const int b = s.siblings[j]->buffer;
        bufs[b] = std::move(st.lib_out[j + 1]);
        ptrs[b] = static_cast<char*>(bufs[b].raw());
      }
      st.lib_out.clear();
      continue;
    }
    if (s.kind == Step::kRowGroup) {
      const int64_t rows = row_group_rows(s, params), width = params[s.width];
      if (rows == 0) continue;
      stats().row_group_runs.fetch_add(1, std::memory_order_relaxed);
      StepFn fn = kernels.fns[k];
      char** bp = ptrs.data();
      const double cost =
          4.0 * static_cast<double>(width > 0 ? width : 1) * static_cast<double>(s.parts.size());
      parallel_for(rows, cost, [&](int64_t b, int64_t e) { fn(bp, params, b, e); });
      continue;
    }
    const Shape& os = pr.buffer_shapes[s.root->buffer];
    int64_t n = os.num_elements();
    if (n == 0) continue;
    int64_t red = reduced_extent(s, params);
    // A loop pays a split every iteration, and one late worker stalls the whole loop: its
    // kernels split at ten times a single run's threshold (kLoopSplitScale).
    double cost = (loop ? step_cost[k] / kLoopSplitScale : 4.0) * static_cast<double>(red > 0 ? red : 1);
    StepFn fn = kernels.fns[k];
    char** bp = ptrs.data();
    parallel_for(n, cost, [&](int64_t b, int64_t e) { fn(bp, params, b, e); });
  }
}

std::vector<Tensor> CompiledCluster::run(const std::vector<Tensor>& inputs) const {
  if (gpu_device >= 0) return run_gpu(inputs);
  const ClusterProgram& p = *program;
  auto lease = state_.take([&] {
    auto* st = new RunState();
    st->recycle.resize(p.num_buffers);
    return st;
  });
  RunState& st = *lease;
  std::string pattern;
  const Prepared* pr = prepared_for(st, inputs, &pattern);
  if (!pr) {
    if (is_specialization) return fall_back(inputs, "the inputs' dims do not match its specialization");
    const Specialization& sp = specialized_for(inputs, pattern);
    if (!sp.cluster) return fall_back(inputs, sp.error);
    std::vector<Tensor> in;
    for (int i : sp.input_of) in.push_back(inputs[i]);
    return sp.cluster->run(in);
  }
  stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
  int64_t status = 0;  // run-time checks of the compiled code (kernel_ir.h: CheckKind)
  bind_buffers(st, *pr, inputs, &status);
  run_steps(st, *pr, false);
  if (status) raise_check(status);
  std::vector<Tensor> out;
  for (const KExpr* e : p.output_exprs) out.push_back(st.bufs[e->buffer]);
  return out;
}

std::string CompiledCluster::loop_fallback_reason() const {
  std::lock_guard<std::mutex> g(spec_mu_);
  return loop_fallback_reason_;
}

bool CompiledCluster::loop_fall_back(const std::string& why) const {
  {
    std::lock_guard<std::mutex> g(spec_mu_);
    loop_fallback_reason_ = why;
  }
  loop_fallbacks_.fetch_add(1);
  stats().compiled_loop_fallbacks.fetch_add(1);
  if (!loop_warned_.exchange(true))
    warn(str_cat("jitflow: the loop whose step is ", label, " cannot run as one compiled loop: ", why,
                 "; the executor runs its compiled step once per iteration (counted in "
                 "jf.debugging.stats()['compiled_loop_fallbacks'], shown by jf.explain)"));
  return false;
}

bool CompiledCluster::run_loop(const std::vector<Tensor>& step_inputs, size_t num_vars,
                               const std::vector<int64_t>& in_of, const std::vector<int64_t>& out_of,
                               int64_t max_iter, std::vector<Tensor>* vars) const {
  return run_loop_in(state_, step_inputs, num_vars, in_of, out_of, max_iter, vars);
}

// A carried TensorArray traced without its element shape enters the loop with none (its
// unknown dims 0) and takes the shape of its first write: the step's write learns it.
static bool learns_element_shape(const ClusterProgram& p, int out, const Tensor& t, const Shape& next) {
  if (t.num_elements() != 0 || t.rank() != next.rank() || t.rank() < 1 || t.shape()[0] != next[0])
    return false;
  for (const Step& s : p.steps)
    if (s.kind == Step::kLibrary && s.node->op == OpId::TensorArrayWrite && s.root->buffer == out)
      return s.node->attrs.get<bool>("learn_shape", false);
  return false;
}

// Iterations after which a loop run on one thread lets the pool's workers sleep (pool_rest).
constexpr int64_t kRestAfter = 64;

bool CompiledCluster::run_loop_in(const Parked<RunState>& slot, const std::vector<Tensor>& step_inputs,
                                  size_t num_vars, const std::vector<int64_t>& in_of,
                                  const std::vector<int64_t>& out_of, int64_t max_iter,
                                  std::vector<Tensor>* vars) const {
  const ClusterProgram& p = *program;
  const int nin = static_cast<int>(p.inputs.size());
  JF_CHECK(gpu_device < 0 && in_of.size() == p.inputs.size() && out_of.size() == num_vars + 1, label,
           ": the loop's step does not match its cluster");
  std::vector<Tensor> inputs(nin);
  for (int i = 0; i < nin; ++i) inputs[i] = step_inputs[in_of[i]];
  auto lease = slot.take([&] {
    auto* st = new RunState();
    st->recycle.resize(p.num_buffers);
    return st;
  });
  RunState& st = *lease;
  st.loop_recycle.resize(p.num_buffers);
  std::string pattern;
  const Prepared* pr = prepared_for(st, inputs, &pattern);
  if (!pr) {  // another size-1 pattern than traced: its specialization runs the loop
    if (is_specialization) return loop_fall_back("its inputs' dims do not match its specialization");
    const Specialization& sp = specialized_for(inputs, pattern);
    if (!sp.cluster) return loop_fall_back(sp.error);
    std::vector<int64_t> sp_in_of;
    for (int i : sp.input_of) sp_in_of.push_back(in_of[i]);
    return sp.cluster->run_loop(step_inputs, num_vars, sp_in_of, out_of, max_iter, vars);
  }
  bool learning = false;
  // Each variable the step computes: the program input reading it (-1: none) and the buffer
  // its next value is written to. After an iteration the two swap, so the next one reads
  // what this one wrote and writes over the value two iterations old.
  // An array written in place (the step's TensorArrayWrite of it may: Step::in_place) has one
  // buffer: after the first iteration copied the caller's array, the input slot and the
  // output slot hold the same buffer and never swap, and each iteration writes one element.
  struct Carried {
    int in, out;
    bool in_place;
  };
  std::vector<Carried> carried;
  std::vector<char> taken(p.num_buffers, 0);
  const int first_own = nin + static_cast<int>(p.constants.size());
  for (size_t v = 0; v < num_vars; ++v) {
    if (out_of[v] < 0) continue;  // passed through unchanged
    const KExpr* e = p.output_exprs.at(out_of[v]);
    const Tensor& t = step_inputs[v];
    int in = -1;
    for (int i = 0; i < nin; ++i)
      if (in_of[i] == static_cast<int64_t>(v)) in = i;
    if (in >= 0 && reads_value(in, t))
      return loop_fall_back(str_cat("loop variable ", v, " (", t.desc(),
                                    ") is read as a shape or slice bound, so each iteration prepares "
                                    "the step's shapes again"));
    if (e->buffer < first_own || taken[e->buffer])
      return loop_fall_back(str_cat("loop variable ", v, " shares its buffer with another value"));
    taken[e->buffer] = 1;
    const Shape& next = pr->buffer_shapes[e->buffer];
    if (e->dtype == t.dtype() && learns_element_shape(p, e->buffer, t, next)) {
      learning = true;
      continue;
    }
    if (e->dtype != t.dtype() || next != t.shape())
      return loop_fall_back(str_cat("loop variable ", v, " changes from ", t.desc(), " to ",
                                    dtype_name(e->dtype), next.str(), " in an iteration"));
    carried.push_back({in, e->buffer, in >= 0 && writes_array_in_place(p, in, e->buffer)});
  }
  const int64_t kc = out_of[num_vars];
  const KExpr* ce = kc >= 0 ? p.output_exprs.at(kc) : nullptr;
  if (!ce || ce->dtype != DType::kBool || pr->buffer_shapes[ce->buffer].num_elements() != 1)
    return loop_fall_back("its condition is not a boolean scalar computed by the step");
  if (learning) {
    // The first iteration gives the array its element shape; the others then run as one loop
    // with those shapes, prepared in a run state of their own (both stay prepared).
    stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
    int64_t status = 0;
    bind_buffers(st, *pr, inputs, &status);
    run_steps(st, *pr, false);
    if (status) raise_check(status);
    std::vector<Tensor> next(step_inputs);
    for (size_t v = 0; v < num_vars; ++v)
      if (out_of[v] >= 0) next[v] = st.bufs[p.output_exprs.at(out_of[v])->buffer];
    const bool more = *reinterpret_cast<const bool*>(st.ptrs[ce->buffer]);
    if (!more || max_iter == 1) {
      stats().compiled_loop_runs.fetch_add(1, std::memory_order_relaxed);
      stats().compiled_loop_iterations.fetch_add(1, std::memory_order_relaxed);
      vars->assign(next.begin(), next.begin() + num_vars);
      return true;
    }
    stats().compiled_loop_iterations.fetch_add(1, std::memory_order_relaxed);
    return run_loop_in(learned_state_, next, num_vars, in_of, out_of, max_iter < 0 ? -1 : max_iter - 1, vars);
  }
  stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
  stats().compiled_loop_runs.fetch_add(1, std::memory_order_relaxed);
  int64_t status = 0;
  bind_buffers(st, *pr, inputs, &status);
  std::vector<Tensor>& bufs = st.bufs;
  std::vector<char*>& ptrs = st.ptrs;
  // The first iteration swaps the caller's values out of the carried slots; from then on
  // every buffer is the loop's own and stays put.
  run_steps(st, *pr, true);
  if (status) raise_check(status);
  int64_t it = 1;
  bool more = *reinterpret_cast<const bool*>(ptrs[ce->buffer]);
  std::vector<std::pair<int, int>> swaps;
  for (const Carried& c : carried) {
    if (c.in < 0) continue;  // written, never read: the last write is its value
    if (c.in_place) {
      bufs[c.in] = bufs[c.out];
      ptrs[c.in] = ptrs[c.out];
      continue;
    }
    std::swap(bufs[c.in], bufs[c.out]);
    std::swap(ptrs[c.in], ptrs[c.out]);
    if (!pr->library_out[c.out]) {  // the caller's value is never written over
      bufs[c.out] = Tensor::empty_reusing(bufs[c.in].dtype(), bufs[c.in].shape(), &st.loop_recycle[c.out]);
      ptrs[c.out] = static_cast<char*>(bufs[c.out].raw());
    }
    swaps.emplace_back(c.in, c.out);
  }
  // When no step is an Eigen call or worth splitting across threads, the iterations run the
  // steps directly and swap raw pointers: nothing else happens between two of them. A carried
  // array's write is a row copy there (its buffer is the loop's own by now), and a small
  // product writes a buffer of the loop's own. Each step's sizes go in the frame the module's
  // loop driver shares (kernel_ir.h: LoopFrame).
  struct Call {
    StepFn fn;
    const int64_t* slot;  // the step's part of the frame
    const Step* step;
    bool dot = false;
    int index = -1, value = -1, array = -1;  // a TensorArrayWrite: its buffers
    DType index_type = DType::kInt32;
    bool strict = true;
  };
  const size_t nsteps = p.steps.size();
  std::vector<int64_t> frame(kLoopFrameHead + kLoopFrameStride * nsteps, 0);
  frame[kFrameBadStep] = -1;
  std::vector<Call> calls;
  bool direct = true;
  for (size_t k = 0; k < nsteps && direct; ++k) {
    const Step& s = p.steps[k];
    int64_t* slot = frame.data() + kLoopFrameHead + kLoopFrameStride * k;
    if (s.kind == Step::kLibrary && s.node->op == OpId::TensorArrayWrite) {
      bool carried_array = false;
      for (const Carried& c : carried) carried_array |= c.in_place && c.out == s.root->buffer;
      direct = carried_array;
      if (!direct) break;
      Call c{nullptr, slot, &s};
      const TensorSpec& spec = pr->step_specs[k][0];
      c.index = s.args[1]->buffer;
      c.value = s.args[2]->buffer;
      c.array = s.root->buffer;
      c.index_type = bufs[c.index].dtype();
      c.strict = s.node->attrs.get<int64_t>("mode", 0) == 0;
      slot[0] = spec.shape[0];
      slot[1] =
          slot[0] ? static_cast<int64_t>(dtype_size(spec.dtype)) * (spec.shape.num_elements() / slot[0]) : 0;
      calls.push_back(c);
      continue;
    }
    if (is_small_dot_step(s) && k < kernels.fns.size() && kernels.fns[k] && kernels.small_dots_ready() &&
        small_dot_params(*pr, k, slot)) {
      const TensorSpec& spec = pr->step_specs[k][0];
      const int c = s.root->buffer;
      bufs[c] = Tensor::empty_reusing(spec.dtype, spec.shape, &st.loop_recycle[c]);
      ptrs[c] = static_cast<char*>(bufs[c].raw());
      if (slot[kDotM] && slot[kDotN]) calls.push_back({kernels.fns[k], slot, &s, true});
      continue;
    }
    if (s.kind != Step::kLoop) {
      direct = false;
      break;
    }
    const int64_t n = pr->buffer_shapes[s.root->buffer].num_elements();
    const int64_t red = reduced_extent(s, pr->params.data());
    direct = num_threads() == 1 || n * step_cost[k] * (red > 0 ? red : 1) < 1e5 * kLoopSplitScale;
    slot[0] = n;
    if (n > 0) calls.push_back({kernels.fns[k], slot, &s});
  }
  if (direct) {
    char** bp = ptrs.data();
    const int64_t* params = pr->params.data();
    int64_t parity = 0;
    auto settle = [&] {  // the tensors follow the pointers
      if (parity & 1)
        for (const auto& [a, b] : swaps) std::swap(bufs[a], bufs[b]);
      parity = 0;
      stats().skipped_branch_steps.fetch_add(frame[kFrameSkipped], std::memory_order_relaxed);
      stats().small_dot_runs.fetch_add(frame[kFrameDots], std::memory_order_relaxed);
      frame[kFrameSkipped] = frame[kFrameDots] = 0;
    };
    // The module's loop driver runs the iterations when the plan it was compiled with is the
    // one found here and every step has elements (a kernel called for none may still read
    // its gather's index in its entry).
    StepFn driver = kernels.fns.size() > nsteps ? kernels.fns[nsteps] : nullptr;
    if (driver && more && calls.size() == nsteps && p.loop->cond == ce->buffer && p.loop->swaps == swaps) {
      auto run_driver = [&](int64_t limit) {
        driver(bp, params, limit, reinterpret_cast<int64_t>(frame.data()));
        it += frame[kFrameIterations];
        parity += frame[kFrameIterations];
        return frame[kFrameIterations] == limit && frame[kFrameBadStep] < 0 && !status &&
               *reinterpret_cast<const bool*>(bp[ce->buffer]) && (max_iter < 0 || it < max_iter);
      };
      stats().compiled_loop_driver_runs.fetch_add(1, std::memory_order_relaxed);
      // A loop still running after its first iterations is a long serial stretch: the pool's
      // idle workers sleep rather than spin beside it.
      if (run_driver(max_iter < 0 ? kRestAfter : std::min(kRestAfter, max_iter - it))) {
        pool_rest();
        run_driver(max_iter < 0 ? -1 : max_iter - it);
      }
      if (frame[kFrameBadStep] >= 0) {
        const int64_t* slot = frame.data() + kLoopFrameHead + kLoopFrameStride * frame[kFrameBadStep];
        settle();
        raise_bad_row(frame[kFrameBadIndex], slot[0]);
      }
      if (status) {
        settle();
        raise_check(status);
      }
      more = false;  // the driver ran until the condition, or the bound, stopped the loop
    }
    for (int64_t run = 0; more && (max_iter < 0 || it < max_iter); ++run) {
      if (run == kRestAfter) pool_rest();
      for (const Call& c : calls) {
        if (!step_runs(*c.step, bp)) {  // a loop step's buffers need nothing then
          ++frame[kFrameSkipped];
          continue;
        }
        if (c.dot) {
          c.fn(bp, c.slot, 0, c.slot[kDotM]);
          ++frame[kFrameDots];
          continue;
        }
        if (c.fn) {
          c.fn(bp, params, 0, c.slot[0]);
          continue;
        }
        int64_t j;
        try {
          j = array_row(bp[c.index], c.index_type, c.slot[0], c.strict);
        } catch (...) {
          settle();
          throw;
        }
        if (j >= 0 && c.slot[1]) std::memcpy(bp[c.array] + j * c.slot[1], bp[c.value], c.slot[1]);
      }
      if (status) {
        settle();
        raise_check(status);
      }
      ++it;
      more = *reinterpret_cast<const bool*>(bp[ce->buffer]);
      for (const auto& [a, b] : swaps) std::swap(bp[a], bp[b]);
      ++parity;
    }
    settle();
  }
  while (more && (max_iter < 0 || it < max_iter)) {
    run_steps(st, *pr, true);
    if (status) raise_check(status);
    ++it;
    more = *reinterpret_cast<const bool*>(ptrs[ce->buffer]);
    for (const auto& [a, b] : swaps) {
      std::swap(bufs[a], bufs[b]);
      std::swap(ptrs[a], ptrs[b]);
    }
  }
  stats().compiled_loop_iterations.fetch_add(it, std::memory_order_relaxed);
  vars->assign(step_inputs.begin(), step_inputs.begin() + num_vars);
  size_t k = 0;
  for (size_t v = 0; v < num_vars; ++v) {
    if (out_of[v] < 0) continue;
    const Carried& c = carried[k++];
    (*vars)[v] = bufs[c.in >= 0 ? c.in : c.out];
  }
  return true;
}

// Eager's error for the check an element failed.
void CompiledCluster::raise_check(int64_t status) const {
  const ClusterProgram& p = *program;
  const int64_t id = status / kCheckKinds - 1;
  const auto kind = static_cast<CheckKind>(status % kCheckKinds);
  JF_CHECK(id >= 0 && id < static_cast<int64_t>(p.exprs.size()) && p.exprs[id]->node, "bad status ", status);
  const Node* n = p.exprs[id]->node;
  if (kind == CheckKind::kNaN || kind == CheckKind::kInf || kind == CheckKind::kInfAndNaN)
    throw_invalid(check_numerics_error(n->attrs.get<std::string>("message", ""), kind != CheckKind::kInf,
                                       kind != CheckKind::kNaN),
                  " (node ", n->name, ", compiled in ", label, ")");
  const char* what = kind == CheckKind::kDivisionByZero ? "Integer division by zero"
                     : kind == CheckKind::kNegativePower
                         ? "Integers to negative integer powers are not allowed"
                     : kind == CheckKind::kEmptyRange ? "Need minval < maxval"
                                                      : "indices are not in [0, the gathered dim's size)";
  throw_invalid(n->type(), ": ", what, " (node ", n->name, ", compiled in ", label, ")");
}

}  // namespace jf
