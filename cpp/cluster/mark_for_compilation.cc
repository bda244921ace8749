// Mark-for-compilation: picks candidates, grows clusters by edge contraction under the
// jit_scope rules, then keeps the clusters worth compiling.
#include "cluster/mark_for_compilation.h"

#include <algorithm>
#include <optional>

#include "cluster/graph_cycles.h"
#include "cluster/union_find.h"
#include "support/errors.h"

namespace jf {
namespace {

const char kXlaCompile[] = "_XlaCompile";
const char kXlaScope[] = "_XlaScope";
const char kTrivialOnly[] = "cluster has only trivial ops (Const, Identity, Reshape, Squeeze, ExpandDims)";

std::string scope_of(const Node& n) { return n.attrs.get<std::string>(kXlaScope, ""); }

// The attr is tri-state: absent (outside every scope) differs from an explicit False.
std::optional<bool> compile_attr(const Node& n) {
  if (!n.attrs.has(kXlaCompile)) return std::nullopt;
  return n.attrs.get<bool>(kXlaCompile, false);
}

bool is_control_flow(const Node& n) { return (n.def().flags & kControlFlow) != 0; }

// "" for a candidate, otherwise why the node has to stay eager.
std::string rejection(const Node& n, const CanEmitFn& can_emit) {
  std::optional<bool> compile = compile_attr(n);
  if (compile && !*compile) return "_XlaCompile=False";
  std::string why;
  // An If the JIT pass inlines with guarded branches (can_emit says so) is one node here.
  if (is_control_flow(n) && !(n.op == OpId::If && can_emit(n, &why)))
    return str_cat("control flow (", n.type(), ") runs on the executor; its ",
                   n.op == OpId::If ? "branches are" : "cond and body are", " clustered on their own");
  if (is_control_flow(n)) return "";
  if (n.stateful()) return "stateful op";
  if (!can_emit(n, &why)) return why.empty() ? "no JIT emitter" : why;
  return "";
}

std::string describe(const Node& n) {
  std::string s = str_cat("op '", n.name, "' (", n.type(), ")");
  if (!n.source.empty()) s += str_cat(" defined at ", n.source);
  return s;
}

// Producers and consumers per node id over data and control edges, without duplicates.
struct Adjacency {
  std::vector<std::vector<int>> producers, consumers;

  explicit Adjacency(const Graph& g) : producers(g.num_nodes()), consumers(g.num_nodes()) {
    for (const auto& up : g.nodes()) {
      const Node& n = *up;
      std::vector<int>& in = producers[n.id];
      for (const Output& o : n.inputs) in.push_back(o.node->id);
      for (const Node* c : n.control_inputs) in.push_back(c->id);
      std::sort(in.begin(), in.end());
      in.erase(std::unique(in.begin(), in.end()), in.end());
      for (int p : in) {
        // Everything below walks nodes in id order as a topological order.
        JF_CHECK(p < n.id, "node ", n.name, " is created before its input");
        consumers[p].push_back(n.id);
      }
    }
  }
};

struct Members {
  std::vector<int> ids;   // ascending
  std::string why_eager;  // empty when the cluster is compiled
};

ClusteringResult assemble(const Graph& g, const std::vector<Members>& groups,
                          const std::vector<std::string>& rejected, const std::vector<std::string>& notes) {
  ClusteringResult r;
  for (const auto& up : g.nodes())
    if (up->op != OpId::Placeholder && !rejected[up->id].empty()) r.eager_reason[up.get()] = rejected[up->id];
  for (const Members& m : groups) {
    if (!m.why_eager.empty()) {
      for (int id : m.ids) {
        std::string why = m.why_eager;
        if (!notes[id].empty()) why += str_cat(" (", notes[id], ")");
        r.eager_reason[g.nodes()[id].get()] = why;
      }
      continue;
    }
    Cluster c;
    c.name = str_cat("cluster_", r.clusters.size());
    for (int id : m.ids) {
      Node* n = g.nodes()[id].get();
      c.nodes.push_back(n);
      if (c.scope.empty()) c.scope = scope_of(*n);
    }
    r.clusters.push_back(std::move(c));
  }
  return r;
}

std::string worth_compiling(int real_ops, bool has_compile_true, const ClusterOptions& opts) {
  if (!opts.auto_jit && !opts.whole_function && !has_compile_true)
    return "not in a jit_scope (no op in its cluster has _XlaCompile=True)";
  // jit_compile=True promises compiled code, whatever the ops (XLA compiles a lone reshape).
  if (real_ops == 0 && !opts.whole_function) return kTrivialOnly;
  if (opts.auto_jit && !opts.whole_function && real_ops < 2) return "auto-clustering: cluster too small";
  return "";
}

// Resource reads and writes (the record's kResourceAccess: variables, a Generator's state,
// TensorArray buffers) run around the compiled unit, as XLA passes resource variables in and
// out of a computation; one that has to run in the middle of it (a read after a write that
// compiled code computed, a TensorArrayRead of a gradient loop) splits the function into
// units, as control flow does.
bool is_resource_access(const Node& n) { return (n.def().flags & kResourceAccess) != 0; }

// jit_compile=True: no partial answer is acceptable, so every problem is an error. Only
// resource accesses and control flow (whose bodies are compiled on their own) stay outside.
void check_whole_function(const Graph& g, const std::vector<std::string>& rejected) {
  std::vector<const Node*> bad;
  for (const auto& up : g.nodes())
    if (up->op != OpId::Placeholder && up->op != OpId::Const && !is_resource_access(*up) &&
        !is_control_flow(*up) && !rejected[up->id].empty())
      bad.push_back(up.get());
  if (!bad.empty()) {
    std::string msg = str_cat("jf.function(jit_compile=True) must compile the whole function, but ",
                              describe(*bad[0]), " cannot be compiled: ", rejected[bad[0]->id]);
    const size_t kMaxListed = 10;
    for (size_t i = 1; i < bad.size() && i < kMaxListed; ++i)
      msg += str_cat("; also ", describe(*bad[i]), ": ", rejected[bad[i]->id]);
    if (bad.size() > kMaxListed) msg += str_cat("; and ", bad.size() - kMaxListed, " more");
    throw_invalid(msg);
  }
}

// A function without control flow compiles as one unit; nullopt when an op that stays on the
// executor would have to run in the middle of it.
std::optional<ClusteringResult> cluster_whole_function(const Graph& g, const Adjacency& adj,
                                                       const std::vector<std::string>& rejected) {
  int n = g.num_nodes();
  Members all;
  int real_ops = 0;
  std::vector<bool> member(n, false);
  for (int i = 0; i < n; ++i) {
    if (!rejected[i].empty() || g.nodes()[i]->op == OpId::Placeholder) continue;
    member[i] = true;
    all.ids.push_back(i);
    if (!is_trivial_for_clustering(*g.nodes()[i])) ++real_ops;
  }
  // The non-members left are Placeholders, resource accesses and uncompilable Consts; one that
  // depends on a member and feeds another would have to run in the middle of the single kernel.
  std::vector<bool> after_member(n, false), before_member(n, false);
  for (int i = 0; i < n; ++i)
    for (int p : adj.producers[i]) after_member[i] = after_member[i] || member[p] || after_member[p];
  for (int i = n - 1; i >= 0; --i)
    for (int c : adj.consumers[i]) before_member[i] = before_member[i] || member[c] || before_member[c];
  for (int i = 0; i < n; ++i)
    if (!member[i] && after_member[i] && before_member[i]) return std::nullopt;
  std::vector<Members> groups;
  if (!all.ids.empty()) {
    all.why_eager = worth_compiling(real_ops, true, ClusterOptions{false, true});
    groups.push_back(std::move(all));
  }
  return assemble(g, groups, rejected, std::vector<std::string>(n));
}

}  // namespace

bool is_trivial_for_clustering(const Node& n) {
  return n.def().lower == LowerKind::kConst || n.def().lower == LowerKind::kView;
}

ClusteringResult mark_for_compilation(const Graph& g, const ClusterOptions& opts, const CanEmitFn& can_emit) {
  const int n = g.num_nodes();
  Adjacency adj(g);
  std::vector<std::string> rejected(n);
  for (const auto& up : g.nodes()) {
    if (up->op == OpId::Placeholder)
      rejected[up->id] = "Placeholder";  // fed by the caller; never reported
    else
      rejected[up->id] = rejection(*up, can_emit);
  }
  auto candidate = [&](int id) { return rejected[id].empty(); };
  if (opts.whole_function) {
    check_whole_function(g, rejected);
    bool control_flow = false;
    for (const auto& up : g.nodes())
      control_flow = control_flow || (is_control_flow(*up) && !rejected[up->id].empty());
    // With an If/While or a resource access in the middle, the ops before and after it are
    // compiled as the fewest units the executor can run around it (every candidate, every
    // group compiled).
    if (!control_flow) {
      std::optional<ClusteringResult> one = cluster_whole_function(g, adj, rejected);
      if (one) return *one;
    }
  }

  // One cycle-graph node per graph node; a cluster is represented by one surviving node,
  // whose id is also its union-find root so that per-cluster facts can be indexed by it.
  GraphCycles cycles;
  for (int i = 0; i < n; ++i) cycles.new_node();
  for (int i = 0; i < n; ++i)
    for (int p : adj.producers[i]) JF_CHECK(cycles.insert_edge(p, i), "the graph has a cycle");
  UnionFind sets(n);

  struct Facts {
    std::string scope;
    bool compile_true = false;
    int real_ops = 0;
  };
  std::vector<Facts> facts(n);
  for (int i = 0; i < n; ++i) {
    const Node& node = *g.nodes()[i];
    facts[i].scope = opts.auto_jit || opts.whole_function ? "" : scope_of(node);
    // A constant made inside a scope must not drag an unscoped consumer into compilation.
    facts[i].compile_true = node.op != OpId::Const && compile_attr(node).value_or(false);
    facts[i].real_ops = is_trivial_for_clustering(node) ? 0 : 1;
  }
  // Why a node could not join a neighbour; appended to its eager reason if it ends up eager.
  std::vector<std::string> notes(n);

  auto try_merge = [&](int producer, int consumer) -> bool {
    int a = sets.find(producer), b = sets.find(consumer);
    if (a == b) return true;
    const std::string &sa = facts[a].scope, &sb = facts[b].scope;
    if (!sa.empty() && !sb.empty() && sa != sb) return false;
    std::optional<int> keep = cycles.contract_edge(a, b);
    if (!keep) {
      if (!notes[consumer].empty() && !notes[producer].empty()) return false;
      std::vector<int> path = cycles.find_indirect_path(a, b);
      std::string via = "another path";
      if (path.size() > 2) {
        const std::string& name = g.nodes()[path[1]]->name;
        via = sets.size(path[1]) == 1 ? str_cat("'", name, "'")
                                      : str_cat("the cluster containing '", name, "'");
      }
      const std::string &pn = g.nodes()[producer]->name, &cn = g.nodes()[consumer]->name;
      if (notes[consumer].empty())
        notes[consumer] = str_cat("joining '", pn, "' would create a cycle through ", via);
      if (notes[producer].empty())
        notes[producer] = str_cat("joining '", cn, "' would create a cycle through ", via);
      return false;
    }
    int gone = *keep == a ? b : a;
    Facts& k = facts[*keep];
    const Facts& o = facts[gone];
    if (k.scope.empty()) k.scope = o.scope;  // an unscoped op adopts its neighbour's scope
    k.compile_true = k.compile_true || o.compile_true;
    k.real_ops += o.real_ops;
    sets.unite_into(*keep, gone);
    return true;
  };

  // Constants join last: a constant shared by two clusters, absorbed early, would tie them
  // with an edge and could block a merge that matters; absorbed last, the cycle check simply
  // leaves it outside when it would.
  auto is_const = [&](int id) { return g.nodes()[id]->op == OpId::Const; };
  for (int i = 0; i < n; ++i) {
    if (!candidate(i) || is_const(i)) continue;
    for (int p : adj.producers[i])
      if (candidate(p) && !is_const(p)) try_merge(p, i);
  }
  for (int i = 0; i < n; ++i) {
    if (!candidate(i) || !is_const(i)) continue;
    bool joined = false;
    for (int c : adj.consumers[i]) {
      if (!candidate(c) || is_const(c)) continue;
      if (!joined) {
        joined = try_merge(i, c);
        continue;
      }
      // Joined: it also ties in its other consumers of the same jit_scope (TF clusters a
      // shared constant with all of them: the two MatMuls of one separated gradient scope,
      // fed by its grad_ys constant, are one cluster), never a cluster of another or no scope.
      const std::string& s = facts[sets.find(i)].scope;
      if (!s.empty() && facts[sets.find(c)].scope == s) try_merge(i, c);
    }
  }

  // jit_compile=True compiles each stretch between control-flow nodes and resource accesses
  // as one unit, as XLA compiles a whole body: independent groups (a loop counter beside the
  // loop's math) merge when no path joins them.
  if (opts.whole_function) {
    std::vector<int> roots;
    for (int i = 0; i < n; ++i)
      if (candidate(i) && !is_const(i) && sets.find(i) == i) roots.push_back(i);
    for (size_t k = 1; k < roots.size(); ++k) {
      int a = sets.find(roots[0]), b = sets.find(roots[k]);
      if (a == b || cycles.is_reachable(a, b) || cycles.is_reachable(b, a)) continue;
      JF_CHECK(cycles.insert_edge(a, b), "merging independent clusters");
      if (!try_merge(a, b)) cycles.remove_edge(a, b);
    }
  }

  std::vector<Members> groups;
  std::vector<int> group_of_root(n, -1);
  for (int i = 0; i < n; ++i) {
    if (!candidate(i)) continue;
    int root = sets.find(i);
    if (group_of_root[root] < 0) {
      group_of_root[root] = static_cast<int>(groups.size());
      groups.emplace_back();
      groups.back().why_eager = worth_compiling(facts[root].real_ops, facts[root].compile_true, opts);
    }
    groups[group_of_root[root]].ids.push_back(i);
  }
  // jit_compile=True around control flow: a constant that joined nothing (a loop's initial
  // value) needs no kernel; the plan holds it.
  for (Members& m : groups)
    if (opts.whole_function && m.ids.size() == 1 && is_const(m.ids[0]))
      m.why_eager = "a constant needs no kernel";
  return assemble(g, groups, rejected, notes);
}

}  // namespace jf
