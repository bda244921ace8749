// Cluster execution.
#include "runtime/cluster_runner.h"

#include <map>

#include "ir/shape_fns.h"
#include "runtime/gpu/gpu_cluster.h"
#include "runtime/placement.h"
#include "runtime/stats.h"
#include "support/thread_pool.h"

namespace jf {

CompiledClusterRef compile_cluster(ClusterToCompile c) {
  auto cc = std::make_shared<CompiledCluster>();
  cc->name = std::move(c.name);
  cc->scope = std::move(c.scope);
  cc->op_names = std::move(c.op_names);
  cc->program = std::move(c.program);
  if (c.gpu_device >= 0)
    compile_for_gpu(*cc, c.gpu_device, c.label);
  else
    cc->kernels = compile_cpu(*cc->program, c.label);
  (cc->kernels.from_cache ? stats().cache_hits : stats().compilations).fetch_add(1);
  return {cc, cc->program.get(), cc->kernels.from_cache, cc->kernels.compile_seconds};
}

namespace {
Tensor view_of(const Tensor& t) { return Tensor(t.dtype(), t.shape(), nullptr); }
}  // namespace

// Concrete specs of every member (shape inference on the actual input shapes), then the
// parameter slots. Returns false when a dim equality the kernels assume does not hold.
bool CompiledCluster::prepare(const std::vector<Tensor>& inputs, Prepared* pr) const {
  const ClusterProgram& p = *program;
  std::map<const Node*, int> index;
  for (size_t i = 0; i < p.members.size(); ++i) index[p.members[i]] = static_cast<int>(i);
  std::map<std::pair<const Node*, int>, const Tensor*> external;
  for (size_t i = 0; i < p.inputs.size(); ++i) external[{p.inputs[i].node, p.inputs[i].index}] = &inputs[i];
  std::vector<std::vector<TensorSpec>> specs(p.members.size());
  std::vector<std::vector<Tensor>> views(p.members.size());
  for (size_t m = 0; m < p.members.size(); ++m) {
    Node* n = p.members[m];
    std::vector<Tensor>& v = views[m];
    for (const Output& o : n->inputs) {
      if (const Tensor* c = o.node->const_value())
        v.push_back(*c);
      else if (index.count(o.node)) {
        const TensorSpec& s = specs[index[o.node]][o.index];
        v.push_back(Tensor(s.dtype, s.shape, nullptr));
      } else {
        const Tensor* t = external.at({o.node, o.index});
        // Small integer inputs keep their values: they may be shapes (a runtime reshape).
        v.push_back(is_int(t->dtype()) && t->num_elements() <= 16 ? *t : view_of(*t));
      }
    }
    specs[m] = n->op == OpId::Const ? n->outputs : infer_specs(n->def(), v, n->attrs);
  }
  pr->step_specs.assign(p.steps.size(), {});
  pr->library_out.assign(p.num_buffers, 0);
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kind == Step::kLibrary) {
      pr->step_specs[k] = specs[index.at(p.steps[k].node)];
      pr->library_out[p.steps[k].root->buffer] = 1;
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
  for (const Tensor& t : inputs) pr->input_shapes.push_back(t.shape());
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
  for (size_t i = 0; same && i < inputs.size(); ++i) same = pr->input_shapes[i] == inputs[i].shape();
  if (!same) {
    auto fresh = std::make_unique<Prepared>();
    if (!prepare(inputs, fresh.get())) return run_eagerly(inputs);  // broadcast pattern changed
    st.prepared = std::move(fresh);
    pr = st.prepared.get();
  }
  stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
  int nin = static_cast<int>(inputs.size());
  std::vector<Tensor>& bufs = st.bufs;
  std::vector<char*>& ptrs = st.ptrs;
  bufs.resize(p.num_buffers);
  ptrs.assign(p.num_buffers, nullptr);
  for (int i = 0; i < nin; ++i) bufs[i] = inputs[i];
  for (size_t c = 0; c < p.constants.size(); ++c) bufs[nin + c] = p.constants[c];
  for (int b = 0; b < p.num_buffers; ++b) {
    if (!bufs[b].defined() && p.buffer_expr[b] && !pr->library_out[b])
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
      st.lib_out.clear();
      ptrs[s.root->buffer] = static_cast<char*>(bufs[s.root->buffer].raw());
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
  std::vector<Tensor> out;
  for (const KExpr* e : p.output_exprs) out.push_back(bufs[e->buffer]);
  return out;
}

}  // namespace jf
