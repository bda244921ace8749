// Clustering -> lowering -> compilation -> graph rewrite, with reasons for every eager op.
#include "runtime/jit_pass.h"

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "cluster/mark_for_compilation.h"
#include "codegen/kernel_ir.h"
#include "passes/passes.h"
#include "runtime/cluster_runner.h"
#include "runtime/gpu/gpu_cluster.h"
#include "runtime/stats.h"

namespace jf {

namespace {
std::atomic<bool> g_auto_jit{false};

bool wants_jit(const Graph& g, const JitOptions& o) {
  if (o.auto_jit || o.whole_function) return true;
  for (const auto& n : g.nodes())
    if (n->attrs.get<bool>("_XlaCompile", false)) return true;
  return false;
}

void dump_clusters(const JitReport& r, const std::string& label) {
  const char* dir = std::getenv("JITFLOW_DUMP");
  if (!dir || !*dir) return;
  std::ofstream f(std::string(dir) + "/" + label + ".clusters.txt");
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

std::shared_ptr<Graph> apply_jit(const std::shared_ptr<Graph>& optimized, const JitOptions& opts,
                                 const std::string& label, JitReport* report) {
  const Graph& a = *optimized;
  if (!wants_jit(a, opts)) {
    for (const auto& n : a.nodes())
      if (n->op != OpId::Placeholder)
        report->op_reason[n->name] = "not in a jit_scope (auto-clustering is off)";
    return optimized;
  }
  ClusterOptions co;
  co.auto_jit = opts.auto_jit;
  co.whole_function = opts.whole_function;
  ClusteringResult cr = mark_for_compilation(a, co, can_emit);
  for (auto& kv : cr.eager_reason) report->op_reason[kv.first->name] = kv.second;

  std::vector<std::shared_ptr<CompiledCluster>> compiled;
  for (const Cluster& c : cr.clusters) {
    std::string why;
    std::string clabel = label + "." + c.name;
    auto cc = std::make_shared<CompiledCluster>();
    cc->program = lower_cluster(a, c.nodes, &why);
    if (cc->program) {
      try {
        if (opts.gpu_device >= 0)
          compile_for_gpu(*cc, opts.gpu_device, clabel);
        else
          cc->kernels = compile_cpu(*cc->program, clabel);
        (cc->kernels.from_cache ? stats().cache_hits : stats().compilations).fetch_add(1);
      } catch (const Error& e) {
        why = e.what();
        cc->program.reset();
      }
    }
    if (!cc->program) {
      if (opts.whole_function) throw_invalid("jit_compile=True: ", label, " cannot be compiled: ", why);
      report->warnings.push_back(str_cat("jitflow: ", c.name, " of ", label,
                                         " could not be compiled and runs on "
                                         "eager kernels: ",
                                         why));
      for (Node* n : c.nodes) report->op_reason[n->name] = "its cluster could not be compiled: " + why;
      continue;
    }
    cc->name = c.name;
    cc->scope = c.scope;
    for (Node* n : c.nodes) cc->op_names.push_back(n->name);
    ClusterSummary s{c.name,
                     c.scope,
                     opts.gpu_device >= 0 ? "gpu" : "cpu",
                     cc->op_names,
                     cc->kernels.from_cache,
                     cc->kernels.compile_seconds};
    report->clusters.push_back(s);
    for (Node* n : c.nodes) report->op_cluster[n->name] = c.name;
    compiled.push_back(cc);
    report->compiled.push_back(cc);
  }
  dump_clusters(*report, label);
  if (compiled.empty()) return optimized;

  // The executed graph: a copy where each cluster's outputs come from one XlaLaunch node.
  std::shared_ptr<Graph> b = a.clone();
  for (auto& cc : compiled) {
    const ClusterProgram& p = *cc->program;
    std::vector<Output> ins;
    for (const Output& o : p.inputs) ins.push_back({b->find(o.node->name), o.index});
    std::vector<TensorSpec> specs;
    for (const Output& o : p.outputs) specs.push_back(o.node->outputs[o.index]);
    Attrs at;
    at.set("_XlaScope", cc->scope);
    Node* launch = b->add_node(OpId::XlaLaunch, b->unique_name(cc->name), ins, at, specs);
    launch->cluster = cc;
    launch->order_key = b->find(p.members.front()->name)->id;
    for (size_t k = 0; k < p.outputs.size(); ++k)
      replace_uses(*b, {b->find(p.outputs[k].node->name), p.outputs[k].index}, {launch, static_cast<int>(k)});
  }
  for (const auto& n : b->nodes())
    if (n->order_key < 0) n->order_key = n->id;
  b->topo_sort();
  dead_code_elimination(*b);
  return b;
}

}  // namespace jf
