// Cluster execution.
#include "runtime/cluster_runner.h"

#include <map>

#include "ir/shape_fns.h"
#include "runtime/gpu/gpu_cluster.h"
#include "runtime/placement.h"
#include "support/stats.h"
#include "support/thread_pool.h"

namespace jf {

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
  ClusterToCompile todo{
      name,       scope,       label + ".specialized", op_names, lower_cluster(*g, members, &why),
      gpu_device, must_compile};
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
  pr->library_out.assign(p.num_buffers, 0);
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kind == Step::kLibrary) {
      pr->step_specs[k] = specs[index.at(p.steps[k].node)];
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
  for (Node* n : p.members) {
    std::vector<Tensor> in;
    for (const Output& o : n->inputs) {
      const Tensor* c = o.node->const_value();
      in.push_back(c ? *c : vals.at({o.node, o.index}));
    }
    auto out = gpu_device >= 0 ? run_placed(n->def(), in, n->attrs, Device{DeviceType::kGPU, gpu_device})
                               : run_kernel(n->def(), in, n->attrs);
    for (size_t k = 0; k < out.size(); ++k) vals[{n, static_cast<int>(k)}] = out[k];
  }
  std::vector<Tensor> res;
  for (const Output& o : p.outputs) res.push_back(vals.at({o.node, o.index}));
  return res;
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
  Prepared* pr = st.prepared.get();
  bool same = pr && pr->input_shapes.size() == inputs.size();
  for (size_t i = 0; same && i < inputs.size(); ++i)
    same = pr->input_shapes[i] == inputs[i].shape() &&
           (!reads_value(i, inputs[i]) || same_values(inputs[i], pr->input_values[i]));
  if (!same) {
    auto fresh = std::make_unique<Prepared>();
    if (!prepare(inputs, fresh.get())) {  // another size-1 (broadcast) pattern than traced
      if (is_specialization) return fall_back(inputs, "the inputs' dims do not match its specialization");
      const Specialization& sp = specialized_for(inputs, fresh->pattern);
      if (!sp.cluster) return fall_back(inputs, sp.error);
      std::vector<Tensor> in;
      for (int i : sp.input_of) in.push_back(inputs[i]);
      return sp.cluster->run(in);
    }
    st.prepared = std::move(fresh);
    pr = st.prepared.get();
  }
  stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
  int nin = static_cast<int>(inputs.size());
  std::vector<Tensor>& bufs = st.bufs;
  std::vector<char*>& ptrs = st.ptrs;
  bufs.resize(p.num_buffers);
  ptrs.assign(p.num_buffers + 1, nullptr);
  int64_t status = 0;  // run-time checks of the compiled code (kernel_ir.h: CheckKind)
  ptrs[p.num_buffers] = reinterpret_cast<char*>(&status);
  for (int i = 0; i < nin; ++i) bufs[i] = inputs[i];
  for (size_t c = 0; c < p.constants.size(); ++c) bufs[nin + c] = p.constants[c];
  for (int b = 0; b < p.num_buffers; ++b) {
    const bool scratch = !p.scratch_only.empty() && p.scratch_only[b];  // one row, in the kernel
    if (!bufs[b].defined() && p.buffer_expr[b] && !pr->library_out[b] && !scratch)
      bufs[b] = Tensor::empty_reusing(p.buffer_expr[b]->dtype, pr->buffer_shapes[b], &st.recycle[b]);
    if (bufs[b].defined() && bufs[b].buffer()) ptrs[b] = static_cast<char*>(bufs[b].raw());
  }
  const int64_t* params = pr->params.data();
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    if (s.kind == Step::kLibrary) {
      // Specs were inferred once per input shapes: run the Eigen kernel directly.
      st.lib_in.clear();
      for (KExpr* a : s.args) st.lib_in.push_back(bufs[a->buffer].reshaped(pr->buffer_shapes[a->buffer]));
      OpCall call(&s.node->def(), st.lib_in, s.node->attrs);
      call.fixed_out = &pr->step_specs[k];
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
    const Shape& os = pr->buffer_shapes[s.root->buffer];
    int64_t n = os.num_elements();
    if (n == 0) continue;
    int64_t red = reduced_extent(s, params);
    double cost = 4.0 * static_cast<double>(red > 0 ? red : 1);
    StepFn fn = kernels.fns[k];
    char** bp = ptrs.data();
    parallel_for(n, cost, [&](int64_t b, int64_t e) { fn(bp, params, b, e); });
  }
  if (status) raise_check(status);
  std::vector<Tensor> out;
  for (const KExpr* e : p.output_exprs) out.push_back(bufs[e->buffer]);
  return out;
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
