// Pearce-Kelly dynamic topological ordering with edge contraction, after TF's GraphCycles.
#include "cluster/graph_cycles.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "support/errors.h"

namespace jf {

int GraphCycles::new_node() {
  int id = num_nodes();
  NodeInfo n;
  // Appending at the end of the order is valid because a new node has no edges yet.
  n.rank = id;
  nodes_.push_back(std::move(n));
  visited_.push_back(false);
  return id;
}

bool GraphCycles::has_edge(int x, int y) const { return nodes_[x].out.count(y) != 0; }

void GraphCycles::remove_edge(int x, int y) {
  nodes_[x].out.erase(y);
  nodes_[y].in.erase(x);
}

bool GraphCycles::insert_edge(int x, int y) {
  JF_CHECK(x >= 0 && x < num_nodes() && y >= 0 && y < num_nodes());
  JF_CHECK(nodes_[x].live && nodes_[y].live, "edge to a contracted node");
  if (x == y) return false;
  if (!nodes_[x].out.insert(y).second) return true;
  nodes_[y].in.insert(x);
  int rx = nodes_[x].rank, ry = nodes_[y].rank;
  if (rx < ry) return true;  // the order already agrees with the new edge

  // Only nodes ranked between y and x can be affected: the ones reachable from y that must
  // move after x, and the ones reaching x that must move before y.
  std::vector<int> forward, backward;
  if (!forward_dfs(y, rx, x, &forward)) {
    for (int n : forward) visited_[n] = false;
    remove_edge(x, y);
    return false;
  }
  backward_dfs(x, ry, &backward);
  reorder(&forward, &backward);
  return true;
}

bool GraphCycles::forward_dfs(int n, int upper_bound, int target, std::vector<int>* seen) {
  std::vector<int> stack{n};
  visited_[n] = true;
  seen->push_back(n);
  while (!stack.empty()) {
    int cur = stack.back();
    stack.pop_back();
    for (int s : nodes_[cur].out) {
      if (s == target) return false;
      if (!visited_[s] && nodes_[s].rank < upper_bound) {
        visited_[s] = true;
        seen->push_back(s);
        stack.push_back(s);
      }
    }
  }
  return true;
}

void GraphCycles::backward_dfs(int n, int lower_bound, std::vector<int>* seen) {
  std::vector<int> stack{n};
  visited_[n] = true;
  seen->push_back(n);
  while (!stack.empty()) {
    int cur = stack.back();
    stack.pop_back();
    for (int p : nodes_[cur].in) {
      if (!visited_[p] && nodes_[p].rank > lower_bound) {
        visited_[p] = true;
        seen->push_back(p);
        stack.push_back(p);
      }
    }
  }
}

void GraphCycles::reorder(std::vector<int>* forward, std::vector<int>* backward) {
  auto by_rank = [this](int a, int b) { return nodes_[a].rank < nodes_[b].rank; };
  std::sort(forward->begin(), forward->end(), by_rank);
  std::sort(backward->begin(), backward->end(), by_rank);
  // The affected nodes reuse the ranks they already held, so nothing outside them moves:
  // everything that reaches x goes first, then everything y reaches, each keeping its order.
  std::vector<int> order(*backward);
  order.insert(order.end(), forward->begin(), forward->end());
  std::vector<int> ranks;
  ranks.reserve(order.size());
  for (int n : order) {
    ranks.push_back(nodes_[n].rank);
    visited_[n] = false;
  }
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < order.size(); ++i) nodes_[order[i]].rank = ranks[i];
}

bool GraphCycles::is_reachable(int x, int y) const {
  if (x == y) return true;
  int bound = nodes_[y].rank;
  if (nodes_[x].rank > bound) return false;  // the order says y comes first
  std::vector<int> stack{x}, seen{x};
  visited_[x] = true;
  bool found = false;
  while (!stack.empty() && !found) {
    int cur = stack.back();
    stack.pop_back();
    for (int s : nodes_[cur].out) {
      if (s == y) {
        found = true;
        break;
      }
      if (!visited_[s] && nodes_[s].rank < bound) {
        visited_[s] = true;
        seen.push_back(s);
        stack.push_back(s);
      }
    }
  }
  for (int n : seen) visited_[n] = false;
  return found;
}

std::optional<int> GraphCycles::contract_edge(int a, int b) {
  JF_CHECK(has_edge(a, b), "contract_edge needs an existing edge");
  remove_edge(a, b);
  if (is_reachable(a, b)) {
    // Ranks were not touched, so putting the edge back cannot fail.
    JF_CHECK(insert_edge(a, b));
    return std::nullopt;
  }
  // Re-homing the edges of the node with fewer of them does the least reordering work.
  int keep = a, gone = b;
  if (nodes_[a].in.size() + nodes_[a].out.size() < nodes_[b].in.size() + nodes_[b].out.size())
    std::swap(keep, gone);
  std::set<int> ins = std::move(nodes_[gone].in), outs = std::move(nodes_[gone].out);
  nodes_[gone].in.clear();
  nodes_[gone].out.clear();
  for (int p : ins) nodes_[p].out.erase(gone);
  for (int s : outs) nodes_[s].in.erase(gone);
  nodes_[gone].live = false;
  // The merged graph is acyclic (no a -> b path remained), and each intermediate state is a
  // subgraph of it, so none of these insertions can fail.
  for (int p : ins) JF_CHECK(insert_edge(p, keep));
  for (int s : outs) JF_CHECK(insert_edge(keep, s));
  return keep;
}

std::vector<int> GraphCycles::find_indirect_path(int x, int y) const {
  int bound = nodes_[y].rank;
  std::unordered_map<int, int> parent;
  std::vector<int> stack;
  for (int s : nodes_[x].out) {
    if (s == y || nodes_[s].rank > bound) continue;
    parent.emplace(s, x);
    stack.push_back(s);
  }
  while (!stack.empty()) {
    int cur = stack.back();
    stack.pop_back();
    for (int s : nodes_[cur].out) {
      if (parent.count(s) || nodes_[s].rank > bound) continue;
      parent.emplace(s, cur);
      if (s == y) {
        std::vector<int> path{y};
        for (int n = y; n != x;) path.push_back(n = parent.at(n));
        std::reverse(path.begin(), path.end());
        return path;
      }
      stack.push_back(s);
    }
  }
  return {};
}

bool GraphCycles::check_invariants() const {
  std::unordered_set<int> ranks;
  for (int x = 0; x < num_nodes(); ++x) {
    const NodeInfo& n = nodes_[x];
    if (!ranks.insert(n.rank).second) return false;
    if (!n.live) {
      if (!n.in.empty() || !n.out.empty()) return false;
      continue;
    }
    for (int s : n.out) {
      if (!nodes_[s].live || nodes_[s].rank <= n.rank || !nodes_[s].in.count(x)) return false;
    }
    for (int p : n.in)
      if (!nodes_[p].out.count(x)) return false;
  }
  return true;
}

}  // namespace jf
