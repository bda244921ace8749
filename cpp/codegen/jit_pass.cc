// Clustering -> lowering -> compilation (through the runtime's ClusterCompiler) -> graph
// rewrite, with reasons for every eager op.
#include "codegen/jit_pass.h"

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "cluster/mark_for_compilation.h"
#include "passes/passes.h"

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
                                 const std::string& label, const ClusterCompiler& compile,
                                 JitReport* report) {
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

  std::vector<std::pair<const Cluster*, CompiledClusterRef>> compiled;
  for (const Cluster& c : cr.clusters) {
    std::string why;
    std::vector<std::string> op_names;
    for (Node* n : c.nodes) op_names.push_back(n->name);
    ClusterToCompile todo{c.name,
                          c.scope,
                          label + "." + c.name,
                          op_names,
                          lower_cluster(a, c.nodes, &why),
                          opts.gpu_device,
                          opts.whole_function};
    CompiledClusterRef cc;
    if (todo.program) {
      try {
        cc = compile(std::move(todo));
      } catch (const Error& e) {
        why = e.what();
      }
    }
    if (!cc.cluster) {
      if (opts.whole_function) throw_invalid("jit_compile=True: ", label, " cannot be compiled: ", why);
      report->warnings.push_back(str_cat("jitflow: ", c.name, " of ", label,
                                         " could not be compiled and runs on "
                                         "eager kernels: ",
                                         why));
      for (Node* n : c.nodes) report->op_reason[n->name] = "its cluster could not be compiled: " + why;
      continue;
    }
    const char* backend = opts.gpu_device >= 0 ? "gpu" : "cpu";
    report->clusters.push_back(
        ClusterSummary{c.name, c.scope, backend, std::move(op_names), cc.from_cache, cc.compile_seconds});
    for (Node* n : c.nodes) report->op_cluster[n->name] = c.name;
    report->compiled.push_back(cc.cluster);
    compiled.emplace_back(&c, std::move(cc));
  }
  dump_clusters(*report, label);
  if (compiled.empty()) return optimized;

  // The executed graph: a copy where each cluster's outputs come from one XlaLaunch node.
  std::shared_ptr<Graph> b = a.clone();
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

}  // namespace jf
