// Decides which graph nodes are compiled together and why the others stay eager
// (docs/jit_scope.md, 'Clusters').
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace jf {

struct ClusterOptions {
  // jf.config.optimizer.set_jit(True): every candidate eligible, scopes ignored.
  bool auto_jit = false;
  // jf.function(jit_compile=True): everything must compile as one unit.
  bool whole_function = false;
};

struct Cluster {
  std::string name;          // "cluster_0", "cluster_1", ... in order of first member's node id
  std::string scope;         // the members' _XlaScope ("" if none; the first member's under auto_jit)
  std::vector<Node*> nodes;  // members, sorted by node id (creation order = topological order)
};

struct ClusteringResult {
  std::vector<Cluster> clusters;  // only clusters that will be compiled
  // For every non-clustered node except Placeholder: why it stays eager.
  std::unordered_map<const Node*, std::string> eager_reason;
};

// can_emit(node, &why): true when codegen has an emitter for this node (op type, dtypes);
// false sets why.
using CanEmitFn = std::function<bool(const Node&, std::string* why)>;

// Groups candidate nodes into clusters by contracting edges between them, refusing any merge
// that would put a non-member on a path between two members (the fused kernel could then not
// run before or after it). Deterministic: nodes are visited in id order. Only the top-level
// graph is clustered; If/While subgraphs need their own call. Throws InvalidArgumentError
// under whole_function when some op cannot be compiled.
ClusteringResult mark_for_compilation(const Graph& g, const ClusterOptions& opts, const CanEmitFn& can_emit);

// Ops that move or restate data without computing; a cluster needs real work to pay for a
// kernel launch.
bool is_trivial_for_clustering(const Node& n);

}  // namespace jf
