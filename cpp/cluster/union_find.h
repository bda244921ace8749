// Disjoint sets over dense integer ids, tracking which cluster each graph node has joined.
#pragma once
#include <numeric>
#include <utility>
#include <vector>

namespace jf {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n), size_(n, 1) { std::iota(parent_.begin(), parent_.end(), 0); }

  int find(int x) {
    int root = x;
    while (parent_[root] != root) root = parent_[root];
    // Path compression keeps repeated lookups from degrading into a walk along long chains.
    while (parent_[x] != root) x = std::exchange(parent_[x], root);
    return root;
  }

  // Joins the sets of a and b and returns the surviving root. The larger set's root survives
  // so that the trees stay shallow even without compression.
  int unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return a;
    if (size_[a] < size_[b]) std::swap(a, b);
    parent_[b] = a;
    size_[a] += size_[b];
    return a;
  }

  // Like unite, but `keep` is the root that survives, so callers can keep per-set data keyed
  // by a root of their choosing.
  void unite_into(int keep, int other) {
    keep = find(keep);
    other = find(other);
    if (keep == other) return;
    parent_[other] = keep;
    size_[keep] += size_[other];
  }

  int size(int x) { return size_[find(x)]; }

 private:
  std::vector<int> parent_;
  std::vector<int> size_;
};

}  // namespace jf
