// An incrementally maintained topological order (Pearce-Kelly) that refuses edges and
// contractions that would create a cycle, so clustering can test merges in near-constant time.
#pragma once
#include <optional>
#include <set>
#include <vector>

namespace jf {

// Nodes are dense ids handed out by new_node(). Contracting an edge merges its two endpoints
// into one node (the survivor's id stays valid, the other is retired), which is how a cluster
// of graph nodes is represented while it grows.
class GraphCycles {
 public:
  int new_node();
  int num_nodes() const { return static_cast<int>(nodes_.size()); }

  // Adds x -> y. Returns false (and leaves the graph unchanged) if the edge would close a
  // cycle, including the self-loop x == y.
  bool insert_edge(int x, int y);
  void remove_edge(int x, int y);
  bool has_edge(int x, int y) const;
  // Whether a (possibly empty) path leads from x to y.
  bool is_reachable(int x, int y) const;

  // Merges the endpoints of the existing edge a -> b into one node when no other path leads
  // from a to b (such a path would become a cycle through the nodes on it). Returns the
  // surviving id, or nullopt when the merge would create a cycle; the graph is then unchanged.
  std::optional<int> contract_edge(int a, int b);

  // A path from x to y (both ends included) that does not use the direct edge x -> y, or an
  // empty vector. Explains why contract_edge(x, y) refused.
  std::vector<int> find_indirect_path(int x, int y) const;

  const std::set<int>& successors(int x) const { return nodes_[x].out; }
  const std::set<int>& predecessors(int x) const { return nodes_[x].in; }
  bool is_live(int x) const { return nodes_[x].live; }

  // Checks that every edge goes from a lower to a higher rank (for tests).
  bool check_invariants() const;

 private:
  struct NodeInfo {
    int rank = 0;  // position in the maintained topological order
    bool live = true;
    std::set<int> in, out;  // ordered so that results never depend on hash iteration order
  };

  // Forward search from n over nodes ranked at most upper_bound; false when it meets
  // `target`, which means the new edge closes a cycle.
  bool forward_dfs(int n, int upper_bound, int target, std::vector<int>* seen);
  void backward_dfs(int n, int lower_bound, std::vector<int>* seen);
  void reorder(std::vector<int>* forward, std::vector<int>* backward);

  std::vector<NodeInfo> nodes_;
  // Scratch for the searches, cleared after each one; mutable so that const queries can share
  // it instead of allocating per call.
  mutable std::vector<bool> visited_;
};

}  // namespace jf
