// Clustering -> lowering -> compilation (through the runtime's ClusterCompiler) -> graph
// rewrite, with reasons for every eager op.
#include "codegen/jit_pass.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <set>

#include "cluster/if_to_select.h"
#include "cluster/mark_for_compilation.h"
#include "passes/passes.h"

namespace jf {

namespace {
std::atomic<bool> g_auto_jit{false};

bool wants_jit(const Graph& g, const JitOptions& o) {
  if (o.auto_jit || o.whole_function) return true;
  for (const auto& n : g.nodes()) {
    if (n->attrs.get<bool>("_XlaCompile", false)) return true;
    for (const auto& sg : n->subgraphs)
      if (wants_jit(*sg, o)) return true;
  }
  return false;
}

// The subgraph names used in op paths: If: then/else; While: cond/body.
const char* part_name(const Node& n, size_t i) {
  static const char* kIf[] = {"then", "else"};
  static const char* kWhile[] = {"cond", "body"};
  if (i < 2) return n.op == OpId::If ? kIf[i] : kWhile[i];
  return "sub";
}

// Half types compile for the CPU only so far: the NVPTX kernels' half loads and stores have not
// run on a GPU yet, so such a cluster stays on eager kernels there (explained, counted).
bool has_half_values(const ClusterProgram& p) {
  for (const auto& e : p.exprs)
    if (is_half(e->dtype)) return true;
  return false;
}

std::string file_label(std::string s) {
  for (char& c : s)
    if (c == '/') c = '.';
  return s;
}

void dump_clusters(const JitReport& r, const std::string& label) {
  const char* dir = std::getenv("JITFLOW_DUMP");
  if (!dir || !*dir) return;
  std::ofstream f(std::string(dir) + "/" + file_label(label) + ".clusters.txt");
  for (const auto& c : r.clusters) {
    f << c.name << " scope=" << c.scope << " backend=" << c.backend << ":";
    for (const auto& op : c.ops) f << " " << op;
    f << "\n";
  }
  for (const auto& kv : r.op_reason) f << "eager " << kv.first << ": " << kv.second << "\n";
}
}  // namespace

void set_auto_jit(bool on) { g_auto_jit = on; }
bool auto_jit() { return g_auto_jit; }

namespace {

// `prefix` is the path of the graph inside the function ("" at the top level, "while/body/"
// for a loop body): report entries carry it, so body ops and clusters have unique names.
// Every op of the step is in its one cluster (Consts may stay outside).
bool one_cluster(const ClusteringResult& cr) {
  for (const auto& kv : cr.eager_reason)
    if (kv.first->op != OpId::Const) return false;
  return cr.clusters.size() == 1;
}

std::shared_ptr<Graph> jit_graph(const std::shared_ptr<Graph>& optimized, const JitOptions& opts,
                                 const std::string& label, const std::string& prefix,
                                 const ClusterCompiler& compile, JitReport* report, bool loop_step = false);

// Branches and loop bodies are graphs of their own: each is optimized and clustered like the
// top level, under the same options, and its node (run by the executor) runs the result.
// `skip`: Ifs left out (inlined into a cluster, their branches are not run on their own).
std::map<std::string, std::vector<std::shared_ptr<Graph>>> jit_subgraphs(
    const Graph& a, const JitOptions& opts, const std::string& label, const std::string& prefix,
    const ClusterCompiler& compile, JitReport* report, const std::set<std::string>& skip = {}) {
  std::map<std::string, std::vector<std::shared_ptr<Graph>>> out;
  for (const auto& n : a.nodes()) {
    if (n->subgraphs.empty() || skip.count(n->name)) continue;
    std::vector<std::shared_ptr<Graph>>& subs = out[n->name];
    for (size_t i = 0; i < n->subgraphs.size(); ++i) {
      std::string path = str_cat(prefix, n->name, "/", part_name(*n, i), "/");
      // A While runs its cond once, then a step graph per iteration: the body and the cond
      // on its results (executor.cc: run_while).
      std::shared_ptr<Graph> sub = n->subgraphs[i];
      if (n->op == OpId::While && i == 1) {
        const size_t nv = n->attrs.get<int64_t>("num_loop_vars", 0);
        sub = loop_step_graph(*n->subgraphs[0], *n->subgraphs[1], nv);
        // A variable taking another's value or a capture's (a, b = b, a + b) gets it through
        // an Identity, which the step's cluster computes into a buffer of its own: every
        // variable the step changes is then a cluster output, so the loop can run whole.
        for (size_t v = 0; v < nv; ++v) {
          const Output o = sub->outputs[v];
          if (o.node->op != OpId::Placeholder || o.node == sub->inputs[v]) continue;
          sub->outputs[v] = {sub->add_node(OpId::Identity, sub->unique_name("loop_var"), {o}, Attrs(),
                                           {o.node->outputs[o.index]}),
                             0};
        }
      }
      std::shared_ptr<Graph> opt = optimize(*sub, file_label(label + "." + path));
      if (opts.whole_function)
        for (std::string& d : drop_asserts(*opt)) report->dropped_asserts.push_back(path + d);
      report->body_graphs.push_back(opt);  // compiled clusters refer to its nodes
      subs.push_back(jit_graph(opt, opts, label, path, compile, report, n->op == OpId::While && i == 1));
    }
  }
  return out;
}

// A While whose jitted step graph is one XlaLaunch between its placeholders runs whole in
// that cluster (CompiledCluster::run_loop): the node keeps the cluster, and per cluster
// input the step input feeding it (_loop_in), per step output (the variables, then the
// condition) the cluster output computing it, or -1 - v for variable v passed through
// (_loop_out). Returns why not, or "".
const char* const kNoCompiledStep = "no op of its body and condition compiles";
std::string attach_compiled_loop(Node* w, const Graph& step, const JitOptions& opts) {
  if (opts.gpu_device >= 0)
    return "the whole-loop form is CPU-only: on a GPU each iteration runs the step's clusters";
  const size_t nv = static_cast<size_t>(w->attrs.get<int64_t>("num_loop_vars", 0));
  std::map<const Node*, int64_t> input_index;
  for (size_t i = 0; i < step.inputs.size(); ++i) input_index[step.inputs[i]] = static_cast<int64_t>(i);
  const Node* launch = nullptr;
  std::vector<std::string> outside;
  for (const auto& n : step.nodes()) {
    if (n->op == OpId::Placeholder || n->op == OpId::Const) continue;
    if (n->op == OpId::XlaLaunch && !launch) {
      launch = n.get();
      continue;
    }
    if (outside.size() < 3) outside.push_back(n->name);
  }
  if (!launch || !outside.empty()) {
    std::string ops;
    for (const std::string& o : outside) ops += (ops.empty() ? "" : ", ") + o;
    return !launch ? kNoCompiledStep
                   : str_cat("its body and condition are not one compiled cluster (", ops,
                             " run outside it; see their rows)");
  }
  std::vector<int64_t> in_of, out_of;
  for (const Output& o : launch->inputs) {
    auto it = input_index.find(o.node);
    if (it == input_index.end()) return "a value its compiled step reads comes from outside the step";
    in_of.push_back(it->second);
  }
  if (step.outputs.size() != nv + 1) return "its step graph does not have one output per loop variable";
  std::set<int64_t> used;
  for (size_t v = 0; v <= nv; ++v) {
    const Output& o = step.outputs[v];
    if (o.node == launch) {
      if (!used.insert(o.index).second) return str_cat("loop variable ", v, " is the same value as another");
      out_of.push_back(o.index);
    } else if (v < nv && input_index.count(o.node) && input_index[o.node] == static_cast<int64_t>(v)) {
      out_of.push_back(-1 - static_cast<int64_t>(v));
    } else {
      return v == nv ? "its condition is not computed by the compiled step"
                     : str_cat("loop variable ", v, " is set to a value the compiled step does not compute");
    }
  }
  w->cluster = launch->cluster;
  w->attrs.set("_loop_in", in_of);
  w->attrs.set("_loop_out", out_of);
  return "";
}

// The loop plan of a loop step's one cluster (kernel_ir.h: LoopPlan), found as
// attach_compiled_loop will find the While's maps; nullopt when the step does not map onto
// the cluster (the loop then does not run whole, or only through the runner's own loop).
std::optional<LoopPlan> loop_plan_of(const Graph& step, const ClusterProgram& p) {
  auto output = [&](const Output& o) {
    for (size_t k = 0; k < p.outputs.size(); ++k)
      if (p.outputs[k].node == o.node && p.outputs[k].index == o.index) return p.output_exprs[k]->buffer;
    return -1;
  };
  if (step.outputs.empty()) return std::nullopt;
  const size_t nv = step.outputs.size() - 1;
  if (step.inputs.size() < nv) return std::nullopt;
  LoopPlan plan;
  plan.cond = output(step.outputs[nv]);
  if (plan.cond < 0) return std::nullopt;
  for (size_t v = 0; v < nv; ++v) {
    const int out = output(step.outputs[v]);
    if (out < 0) {
      if (step.outputs[v].node == step.inputs[v]) continue;  // passed through
      return std::nullopt;
    }
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (p.inputs[i].node == step.inputs[v] && !writes_array_in_place(p, static_cast<int>(i), out))
        plan.swaps.emplace_back(static_cast<int>(i), out);
  }
  return plan;
}

// The executed copy's If/While nodes run the jitted subgraphs (a While: its cond and step).
void set_subgraphs(Graph& b, const std::map<std::string, std::vector<std::shared_ptr<Graph>>>& subs,
                   const JitOptions& opts, const std::string& prefix, JitReport* report) {
  for (const auto& [name, gs] : subs) {
    Node* n = b.find(name);
    n->subgraphs = gs;
    if (n->op != OpId::While) continue;
    n->attrs.set("_step_graph", true);
    std::string why = attach_compiled_loop(n, *gs[1], opts);
    const std::string path = prefix + name;
    if (why == kNoCompiledStep) continue;  // nothing is jitted here: the While's reason stands
    if (why.empty()) {
      for (size_t i = 0; i < report->compiled.size(); ++i)
        if (report->compiled[i] == n->cluster) report->op_cluster[path] = report->clusters[i].name;
      report->op_reason.erase(path);
      report->compiled_loops.push_back(path);
    } else {
      report->op_reason[path] = str_cat(
          "control flow (While) runs on the executor, one run of its compiled step per iteration: ", why);
    }
  }
}

// A loop step whose every op is clustered, in clusters of one scope, becomes one cluster:
// clustering merges along edges only, so the loop counter and the math it does not feed
// (a jit_scope around a loop) would otherwise be two clusters and the loop could not run
// whole (attach_compiled_loop).
void merge_loop_step_clusters(ClusteringResult* cr) {
  if (cr->clusters.size() < 2) return;
  for (const auto& kv : cr->eager_reason)
    if (kv.first->op != OpId::Const) return;
  for (const Cluster& c : cr->clusters)
    if (c.scope != cr->clusters[0].scope) return;
  Cluster all = cr->clusters[0];
  for (size_t i = 1; i < cr->clusters.size(); ++i)
    all.nodes.insert(all.nodes.end(), cr->clusters[i].nodes.begin(), cr->clusters[i].nodes.end());
  std::sort(all.nodes.begin(), all.nodes.end(), [](const Node* x, const Node* y) { return x->id < y->id; });
  cr->clusters = {std::move(all)};
}

// Ifs that compile as selects (if_to_select.h) are inlined before anything is clustered;
// the others keep their executor branch, and jf.explain says why they did not convert.
std::shared_ptr<Graph> inline_small_ifs(const std::shared_ptr<Graph>& optimized, const JitOptions& opts,
                                        const std::string& label, const std::string& prefix,
                                        JitReport* report, std::map<std::string, std::string>* select_of) {
  // Inlined branches would be GPU kernels no GPU has run yet: on a GPU an If keeps its branch.
  if (opts.gpu_device >= 0) return optimized;
  ClusterOptions co;
  co.auto_jit = opts.auto_jit;
  co.whole_function = opts.whole_function;
  std::vector<IfConversion> done;
  std::shared_ptr<Graph> g = convert_ifs_to_selects(*optimized, co, can_emit, &done);
  if (!g) return optimized;
  g = optimize(*g, file_label(label + "." + prefix + "if_to_select"));
  report->body_graphs.push_back(g);
  for (const IfConversion& c : done) {
    report->selected_ifs.push_back(prefix + c.if_name);
    std::string& member = (*select_of)[c.if_name];  // any op left of it finds its cluster
    for (const std::string& m : c.new_nodes)
      if (g->find(m)) member = m;
  }
  return g;
}

std::shared_ptr<Graph> jit_graph(const std::shared_ptr<Graph>& traced, const JitOptions& opts,
                                 const std::string& label, const std::string& prefix,
                                 const ClusterCompiler& compile, JitReport* report, bool loop_step) {
  std::map<std::string, std::string> select_of;  // converted If -> one of its ops
  const std::shared_ptr<Graph> optimized =
      wants_jit(*traced, opts) ? inline_small_ifs(traced, opts, label, prefix, report, &select_of) : traced;
  const Graph& a = *optimized;
  ClusterOptions co;
  co.auto_jit = opts.auto_jit;
  co.whole_function = opts.whole_function;
  // TensorArray reads and writes compile only where the loop then runs whole: there the
  // carried array is written in place. In a cluster run once per iteration (or anywhere
  // else) a compiled write would copy the array every time, where the executor writes in
  // place, so when the step does not become one cluster it is clustered again without them.
  // JITFLOW_LOOP_ARRAYS=0 keeps them on the executor (to measure what compiling them gains).
  const char* env = std::getenv("JITFLOW_LOOP_ARRAYS");
  const bool arrays_may_compile = loop_step && opts.gpu_device < 0 && !(env && std::string(env) == "0");
  auto without_arrays = [](const Node& n, std::string* why) {
    if (n.op == OpId::TensorArrayRead || n.op == OpId::TensorArrayWrite) {
      if (!can_emit(n, why)) return false;  // a form that never compiles says so
      *why = str_cat(n.type(),
                     ": compiles only in the step of a loop that runs whole in one compiled cluster "
                     "(on the CPU); here the executor writes the array in place");
      return false;
    }
    return can_emit(n, why);
  };
  const CanEmitFn first_emit = arrays_may_compile ? CanEmitFn(can_emit) : CanEmitFn(without_arrays);
  // Ifs that may be inlined with guarded branches (if_to_select.h): clustered as one node,
  // inlined once clustered. Their branches are jitted on their own only if they stay out.
  // JITFLOW_GUARDED_IFS=0 keeps them executor branches (to measure what inlining gains).
  std::set<std::string> guardable;
  const char* genv = std::getenv("JITFLOW_GUARDED_IFS");
  if (opts.gpu_device < 0 && wants_jit(a, opts) && !(genv && std::string(genv) == "0"))
    for (const auto& n : a.nodes())
      if (n->op == OpId::If && guarded_if_refusal(*n, co, first_emit).empty()) guardable.insert(n->name);
  auto subs = jit_subgraphs(a, opts, label, prefix, compile, report, guardable);
  if (!wants_jit(a, opts)) {
    for (const auto& n : a.nodes())
      if (n->op != OpId::Placeholder)
        report->op_reason[prefix + n->name] = "not in a jit_scope (auto-clustering is off)";
    if (subs.empty()) return optimized;
    std::shared_ptr<Graph> b = a.clone();
    set_subgraphs(*b, subs, opts, prefix, report);
    return b;
  }
  // An error about a body's op also names the body ("(in while/body)").
  const std::string where = prefix.empty() ? "" : str_cat(" (in ", prefix.substr(0, prefix.size() - 1), ")");
  bool has_arrays = false;
  for (const auto& n : a.nodes())
    has_arrays = has_arrays || n->op == OpId::TensorArrayRead || n->op == OpId::TensorArrayWrite;
  for (const auto& n : a.nodes())  // an array op in a guardable If's branch
    if (guardable.count(n->name))
      for (const auto& sub : n->subgraphs)
        for (const auto& m : sub->nodes()) has_arrays = has_arrays || m->op == OpId::TensorArrayRead;
  auto with_ifs = [&](CanEmitFn base) -> CanEmitFn {
    return [&guardable, &co, base](const Node& n, std::string* why) {
      if (n.op != OpId::If) return base(n, why);
      *why = guarded_if_refusal(n, co, base);
      return guardable.count(n.name) > 0 && why->empty();
    };
  };
  ClusteringResult cr;
  try {
    cr = mark_for_compilation(a, co, with_ifs(first_emit));
    if (loop_step && opts.gpu_device < 0) merge_loop_step_clusters(&cr);
    if (arrays_may_compile && has_arrays && !one_cluster(cr)) {
      cr = mark_for_compilation(a, co, with_ifs(without_arrays));
      merge_loop_step_clusters(&cr);
    }
  } catch (const Error& e) {
    if (where.empty() || e.kind() == ErrorKind::kInternal) throw;
    throw Error(e.kind(), e.what() + where);
  }
  for (auto& kv : cr.eager_reason) {
    std::string& why = report->op_reason[prefix + kv.first->name];
    why = kv.second;
    if (kv.first->op != OpId::If) continue;
    const std::string inline_why = guarded_if_refusal(*kv.first, co, first_emit);
    why += opts.gpu_device >= 0 ? "; on a GPU an If is not computed inline (CPU only for now)"
           : inline_why.empty() ? "; it could be computed inline, but no cluster took it"
                                : str_cat("; it is not computed inline because ", inline_why);
  }

  GuardedIfs guarded;
  std::shared_ptr<Graph> inl = inline_clustered_ifs(optimized, &cr, &guarded);
  if (inl != optimized) report->body_graphs.push_back(inl);  // the clusters' members are its nodes
  // A guardable If no cluster took runs on the executor: its branches are jitted now.
  auto jit_branches_of = [&](const std::set<std::string>& ifs) {
    std::set<std::string> skip;
    for (const auto& n : a.nodes())
      if (!n->subgraphs.empty() && !ifs.count(n->name)) skip.insert(n->name);
    for (auto& kv : jit_subgraphs(a, opts, label, prefix, compile, report, skip)) subs.insert(std::move(kv));
  };
  std::set<std::string> left, failed_ifs;  // failed: inlined into a cluster that did not compile
  for (const std::string& name : guardable)
    if (!guarded.names.count(name)) left.insert(name);
  if (!left.empty()) jit_branches_of(left);

  std::vector<std::pair<const Cluster*, CompiledClusterRef>> compiled;
  for (size_t ci = 0; ci < cr.clusters.size(); ++ci) {
    const Cluster& c = cr.clusters[ci];
    std::string why;
    std::vector<std::string> op_names;
    for (const std::string& name : guarded.of_cluster[ci]) op_names.push_back(prefix + name);
    for (Node* n : c.nodes) op_names.push_back(prefix + n->name);
    ClusterToCompile todo{prefix + c.name,
                          c.scope,
                          file_label(label + "." + prefix + c.name),
                          op_names,
                          lower_cluster(*inl, c.nodes, &why),
                          opts.gpu_device,
                          opts.whole_function};
    CompiledClusterRef cc;
    if (todo.program && loop_step && opts.gpu_device < 0 && cr.clusters.size() == 1)
      if (std::optional<LoopPlan> plan = loop_plan_of(*inl, *todo.program))
        set_loop_plan(todo.program.get(), std::move(*plan));
    if (todo.program && opts.gpu_device >= 0 && has_half_values(*todo.program)) {
      why = "float16 and bfloat16 values compile for the CPU only (no GPU kernels for them yet)";
      todo.program.reset();
    }
    if (todo.program) {
      try {
        cc = compile(std::move(todo));
      } catch (const Error& e) {
        why = e.what();
      }
    }
    if (!cc.cluster) {
      if (opts.whole_function)
        throw_invalid("jit_compile=True: ", label, where, " cannot be compiled: ", why);
      report->warnings.push_back(str_cat("jitflow: ", prefix, c.name, " of ", label,
                                         " could not be compiled and runs on "
                                         "eager kernels: ",
                                         why));
      for (const std::string& name : op_names)
        report->op_reason[name] = "its cluster could not be compiled: " + why;
      failed_ifs.insert(guarded.of_cluster[ci].begin(), guarded.of_cluster[ci].end());
      continue;
    }
    const char* backend = opts.gpu_device >= 0 ? "gpu" : "cpu";
    for (const std::string& name : op_names) report->op_cluster[name] = prefix + c.name;
    report->clusters.push_back(ClusterSummary{prefix + c.name, c.scope, backend, std::move(op_names),
                                              cc.from_cache, cc.compile_seconds});
    for (const std::string& name : guarded.of_cluster[ci]) report->guarded_ifs.push_back(prefix + name);
    report->compiled.push_back(cc.cluster);
    compiled.emplace_back(&c, std::move(cc));
  }
  for (const auto& [if_name, member] : select_of) {
    auto it = member.empty() ? report->op_cluster.end() : report->op_cluster.find(prefix + member);
    if (it != report->op_cluster.end())
      report->op_cluster[prefix + if_name] = it->second;
    else
      report->op_reason[prefix + if_name] =
          "computed inline (both branches, a select per output), but none of its ops is in a compiled "
          "cluster: constant folding removed them, or see their rows";
  }
  if (prefix.empty()) dump_clusters(*report, label);
  if (!failed_ifs.empty()) {
    inl = restore_failed_ifs(a, guarded, failed_ifs);
    jit_branches_of(failed_ifs);
  }
  if (compiled.empty() && subs.empty() && guarded.names.empty()) return optimized;

  // The executed graph: a copy where each cluster's outputs come from one XlaLaunch node.
  std::shared_ptr<Graph> b = inl->clone();
  set_subgraphs(*b, subs, opts, prefix, report);
  for (const auto& [c, cc] : compiled) {
    const ClusterProgram& p = *cc.program;
    std::vector<Output> ins;
    for (const Output& o : p.inputs) ins.push_back({b->find(o.node->name), o.index});
    std::vector<TensorSpec> specs;
    for (const Output& o : p.outputs) specs.push_back(o.node->outputs[o.index]);
    Attrs at;
    at.set("_XlaScope", c->scope);
    Node* launch = b->add_node(OpId::XlaLaunch, b->unique_name(c->name), ins, at, specs);
    launch->cluster = cc.cluster;
    launch->order_key = b->find(p.members.front()->name)->id;
    for (size_t k = 0; k < p.outputs.size(); ++k)
      replace_uses(*b, {b->find(p.outputs[k].node->name), p.outputs[k].index}, {launch, static_cast<int>(k)});
    // A run-time check compiled into the cluster (CheckNumerics) runs in the launch: keep it
    // alive unconsumed, and drop the member that would run the check again eagerly.
    for (const Node* m : p.members)
      if (m->def().flags & kCheck) {
        b->find(m->name)->attrs.set("_compiled", true);
        launch->attrs.set("_keep", true);
      }
  }
  for (const auto& n : b->nodes())
    if (n->order_key < 0) n->order_key = n->id;
  b->topo_sort();
  dead_code_elimination(*b);
  return b;
}

}  // namespace

std::shared_ptr<Graph> apply_jit(const std::shared_ptr<Graph>& optimized, const JitOptions& opts,
                                 const std::string& label, const ClusterCompiler& compile,
                                 JitReport* report) {
  return jit_graph(optimized, opts, label, "", compile, report);
}

}  // namespace jf
