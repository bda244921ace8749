// Plan construction and execution.
#include "runtime/executor.h"

#include "runtime/cluster_runner.h"
#include "runtime/placement.h"
#include "support/stats.h"

namespace jf {

namespace {
// True when v[k]'s slot is read again later in v (only the last read may move the value).
bool read_again_later(const std::vector<int>& v, size_t k) {
  for (size_t q = k + 1; q < v.size(); ++q)
    if (v[q] == v[k]) return true;
  return false;
}
}  // namespace

std::shared_ptr<Plan> build_plan(std::shared_ptr<Graph> g, Device device) {
  auto p = std::make_shared<Plan>();
  p->graph = g;
  p->device = device;
  const auto& nodes = g->nodes();
  p->first_slot.resize(nodes.size());
  for (const auto& n : nodes) {
    p->first_slot[n->id] = p->num_slots;
    p->num_slots += static_cast<int>(n->outputs.size());
    for (const TensorSpec& s : n->outputs)
      if (!s.shape.fully_defined()) p->static_shapes = false;
  }
  auto slot = [&](const Output& o) { return p->first_slot[o.node->id] + o.index; };
  std::vector<int> last_use(p->num_slots, -1);
  std::vector<bool> pinned(p->num_slots, false);  // outputs and constants are never released
  for (Node* in : g->inputs) p->input_slots.push_back(p->first_slot[in->id]);
  for (const Output& o : g->outputs) {
    p->output_slots.push_back(slot(o));
    pinned[slot(o)] = true;
  }
  for (const auto& n : nodes) {
    if (n->op == OpId::Const) {
      p->consts.push_back({p->first_slot[n->id], *n->const_value()});
      pinned[p->first_slot[n->id]] = true;
      continue;
    }
    if (n->op == OpId::Placeholder) continue;
    int step = static_cast<int>(p->order.size());
    p->order.push_back(n.get());
    std::vector<int> ins;
    for (const Output& o : n->inputs) {
      ins.push_back(slot(o));
      last_use[slot(o)] = step;
    }
    p->in_slots.push_back(ins);
    std::vector<std::shared_ptr<Plan>> subs;
    for (const auto& sg : n->subgraphs) subs.push_back(build_plan(sg, device));
    p->sub_plans.push_back(subs);
  }
  for (size_t i = 0; i < p->output_slots.size(); ++i)
    p->output_move.push_back(!read_again_later(p->output_slots, i));
  p->release.resize(p->order.size());
  for (int s = 0; s < p->num_slots; ++s)
    if (last_use[s] >= 0 && !pinned[s]) p->release[last_use[s]].push_back(s);
  // An input at its last use is moved into the step (no refcount traffic); when a step reads
  // one slot twice, only the final read moves.
  p->move_in.resize(p->order.size());
  for (size_t step = 0; step < p->order.size(); ++step) {
    const auto& ins = p->in_slots[step];
    auto& mv = p->move_in[step];
    mv.assign(ins.size(), 0);
    for (size_t k = 0; k < ins.size(); ++k) {
      int s = ins[k];
      mv[k] = last_use[s] == static_cast<int>(step) && !pinned[s] && !read_again_later(ins, k);
    }
  }
  return p;
}

namespace {

std::vector<Tensor> run_if(const Plan& p, size_t step, std::vector<Tensor>& ins) {
  Node* n = p.order[step];
  int64_t nt = n->attrs.get<int64_t>("num_then_inputs", 0);
  const Tensor& pred = ins[0];
  if (pred.num_elements() != 1)
    throw_invalid(n->name, ": the condition of jf.cond must be a scalar, got ", pred.desc());
  bool take = pred.get_double(0) != 0;
  std::vector<Tensor> sub;
  if (take)
    sub.assign(ins.begin() + 1, ins.begin() + 1 + nt);
  else
    sub.assign(ins.begin() + 1 + nt, ins.end());
  return run_plan(*p.sub_plans[step][take ? 0 : 1], std::move(sub));
}

std::vector<Tensor> run_while(const Plan& p, size_t step, std::vector<Tensor>& ins) {
  Node* n = p.order[step];
  int64_t nv = n->attrs.get<int64_t>("num_loop_vars", 0), nc = n->attrs.get<int64_t>("num_cond_captures", 0);
  int64_t max_iter = n->attrs.get<int64_t>("maximum_iterations", -1);
  std::vector<Tensor> vars(ins.begin(), ins.begin() + nv);
  std::vector<Tensor> cond_caps(ins.begin() + nv, ins.begin() + nv + nc),
      body_caps(ins.begin() + nv + nc, ins.end());
  const Plan& cond = *p.sub_plans[step][0];
  const Plan& body = *p.sub_plans[step][1];
  auto check = [&](const Tensor& c) {
    if (c.num_elements() != 1)
      throw_invalid(n->name, ": the loop condition must be a scalar, got ", c.desc());
    return c.get_double(0) != 0;
  };
  if (n->attrs.get<bool>("_step_graph", false)) {
    // The cond runs once; then each iteration runs the step graph (jit_pass.cc), which
    // returns the next loop variables and the cond's value for them.
    std::vector<Tensor> cin = vars;
    cin.insert(cin.end(), cond_caps.begin(), cond_caps.end());
    bool more = check(run_plan(cond, std::move(cin))[0]);
    if (more && max_iter != 0 && n->cluster) {
      // The step is one compiled cluster: the whole loop runs in it (jit_pass.cc).
      const auto* in_of = std::get_if<std::vector<int64_t>>(n->attrs.find("_loop_in"));
      const auto* out_of = std::get_if<std::vector<int64_t>>(n->attrs.find("_loop_out"));
      std::vector<Tensor> sin = vars, out;
      sin.insert(sin.end(), body_caps.begin(), body_caps.end());
      sin.insert(sin.end(), cond_caps.begin(), cond_caps.end());
      if (in_of && out_of && n->cluster->run_loop(sin, nv, *in_of, *out_of, max_iter, &out)) return out;
    }
    for (int64_t it = 0; more && (max_iter < 0 || it < max_iter); ++it) {
      std::vector<Tensor> sin = std::move(vars);
      sin.insert(sin.end(), body_caps.begin(), body_caps.end());
      sin.insert(sin.end(), cond_caps.begin(), cond_caps.end());
      vars = run_plan(body, std::move(sin));
      more = check(vars.back());
      vars.pop_back();
    }
    return vars;
  }
  for (int64_t it = 0; max_iter < 0 || it < max_iter; ++it) {
    std::vector<Tensor> cin = vars;
    cin.insert(cin.end(), cond_caps.begin(), cond_caps.end());
    Tensor c = run_plan(cond, std::move(cin))[0];
    if (c.num_elements() != 1)
      throw_invalid(n->name, ": the loop condition must be a scalar, got ", c.desc());
    if (c.get_double(0) == 0) break;
    std::vector<Tensor> bin = std::move(vars);
    bin.insert(bin.end(), body_caps.begin(), body_caps.end());
    vars = run_plan(body, std::move(bin));
  }
  return vars;
}

}  // namespace

std::vector<Tensor> run_plan(const Plan& p, std::vector<Tensor> inputs) {
  auto arena = p.arena.take([&] { return new Arena(p.num_slots); });
  Arena& a = *arena;
  std::vector<Tensor>& slots = a.slots;
  for (const auto& c : p.consts) slots[c.first] = c.second;
  JF_CHECK(inputs.size() == p.input_slots.size(), "plan expects ", p.input_slots.size(), " inputs");
  const bool on_gpu = p.device.type == DeviceType::kGPU;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A CPU plan's kernels read host memory: device inputs come back to the host first.
    if (!on_gpu && !inputs[i].on_host()) inputs[i] = inputs[i].to_device(Device{});
    slots[p.input_slots[i]] = std::move(inputs[i]);
  }
  std::vector<Tensor>&ins = a.ins, &outs = a.outs, &spare = a.spare;
  for (size_t step = 0; step < p.order.size(); ++step) {
    Node* n = p.order[step];
    ins.clear();
    const auto& in_slots = p.in_slots[step];
    const auto& mv = p.move_in[step];
    for (size_t k = 0; k < in_slots.size(); ++k)
      ins.push_back(mv[k] ? std::move(slots[in_slots[k]]) : slots[in_slots[k]]);
    outs.clear();
    try {
      if (n->op == OpId::If) {
        outs = run_if(p, step, ins);
      } else if (n->op == OpId::While) {
        outs = run_while(p, step, ins);
      } else if (n->op == OpId::XlaLaunch) {
        outs = n->cluster->run(ins);
      } else if (on_gpu) {
        outs = run_placed(n->def(), ins, n->attrs, p.device);
      } else if (p.static_shapes) {
        // Reuse one results vector across steps: no allocation per op on the hot path.
        OpCall call(&n->def(), ins, n->attrs);
        call.fixed_out = &n->outputs;
        call.recycle = a.recycle.data() + p.first_slot[n->id];
        spare.resize(n->outputs.size());
        call.results.swap(spare);
        n->def().kernel(call);
        call.results.swap(spare);
        outs.swap(spare);
        spare.clear();
      } else {
        outs = run_kernel(n->def(), ins, n->attrs);
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInternal || n->source.empty()) throw;
      throw Error(e.kind(),
                  str_cat(e.what(), "\n  in node '", n->name, "' (", n->type(), ") created at ", n->source));
    }
    int base = p.first_slot[n->id];
    for (size_t i = 0; i < outs.size(); ++i) slots[base + i] = std::move(outs[i]);
    if (spare.capacity() < outs.capacity()) spare.swap(outs);
    for (int s : p.release[step]) slots[s].reset();
  }
  std::vector<Tensor> result;
  result.reserve(p.output_slots.size());
  for (size_t i = 0; i < p.output_slots.size(); ++i) {
    Tensor& t = slots[p.output_slots[i]];
    result.push_back(p.output_move[i] ? std::move(t) : t);
  }
  stats().graph_runs.fetch_add(1, std::memory_order_relaxed);
  return result;
}

}  // namespace jf
