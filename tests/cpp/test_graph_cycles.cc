// The clustering pass's helpers: the cycle-checking topological order and the union-find.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "cluster/graph_cycles.h"
#include "cluster/union_find.h"

namespace jf {
namespace {

TEST(GraphCycles, RejectsCyclesAndSelfLoops) {
  GraphCycles gc;
  for (int i = 0; i < 3; ++i) gc.new_node();
  EXPECT_TRUE(gc.insert_edge(0, 1));
  EXPECT_TRUE(gc.insert_edge(1, 2));
  EXPECT_TRUE(gc.insert_edge(1, 2));  // duplicates are harmless
  EXPECT_FALSE(gc.insert_edge(2, 0));
  EXPECT_FALSE(gc.insert_edge(1, 1));
  EXPECT_FALSE(gc.has_edge(2, 0));
  EXPECT_TRUE(gc.is_reachable(0, 2));
  EXPECT_FALSE(gc.is_reachable(2, 0));
  EXPECT_TRUE(gc.check_invariants());
}

TEST(GraphCycles, ReordersForBackwardEdges) {
  GraphCycles gc;
  for (int i = 0; i < 4; ++i) gc.new_node();
  // Each edge points against the creation order, forcing a reorder every time.
  EXPECT_TRUE(gc.insert_edge(3, 2));
  EXPECT_TRUE(gc.insert_edge(2, 1));
  EXPECT_TRUE(gc.insert_edge(1, 0));
  EXPECT_TRUE(gc.check_invariants());
  EXPECT_TRUE(gc.is_reachable(3, 0));
  EXPECT_FALSE(gc.insert_edge(0, 3));
  EXPECT_FALSE(gc.insert_edge(0, 2));
  EXPECT_TRUE(gc.check_invariants());
}

TEST(GraphCycles, ContractRefusesWhenAnotherPathExists) {
  GraphCycles gc;
  for (int i = 0; i < 3; ++i) gc.new_node();
  gc.insert_edge(0, 1);
  gc.insert_edge(1, 2);
  gc.insert_edge(0, 2);
  EXPECT_FALSE(gc.contract_edge(0, 2).has_value());
  EXPECT_TRUE(gc.has_edge(0, 2));  // a refused contraction changes nothing
  EXPECT_EQ(gc.find_indirect_path(0, 2), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(gc.find_indirect_path(0, 1).empty());

  std::optional<int> m = gc.contract_edge(0, 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(*m == 0 || *m == 1);
  int gone = *m == 0 ? 1 : 0;
  EXPECT_FALSE(gc.is_live(gone));
  // The merged node inherits both edges to 2, which collapse into one.
  EXPECT_EQ(gc.successors(*m), (std::set<int>{2}));
  std::optional<int> all = gc.contract_edge(*m, 2);
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(gc.successors(*all).empty());
  EXPECT_TRUE(gc.predecessors(*all).empty());
  EXPECT_TRUE(gc.check_invariants());
}

TEST(GraphCycles, ContractMovesEdgesAndKeepsOrder) {
  GraphCycles gc;
  for (int i = 0; i < 6; ++i) gc.new_node();
  // 5 -> 0 -> 1 -> 4 and 2 -> 1, 0 -> 3: contracting 0 -> 1 gives one node with
  // predecessors {5, 2} and successors {4, 3}.
  gc.insert_edge(5, 0);
  gc.insert_edge(0, 1);
  gc.insert_edge(1, 4);
  gc.insert_edge(2, 1);
  gc.insert_edge(0, 3);
  std::optional<int> m = gc.contract_edge(0, 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(gc.predecessors(*m), (std::set<int>{2, 5}));
  EXPECT_EQ(gc.successors(*m), (std::set<int>{3, 4}));
  EXPECT_TRUE(gc.check_invariants());
  EXPECT_FALSE(gc.insert_edge(4, 2));  // 2 -> merged -> 4 already
  EXPECT_FALSE(gc.insert_edge(3, 2));
  EXPECT_TRUE(gc.insert_edge(2, 3));
}

// Checks every answer against a brute-force reachability on a mirrored adjacency list.
TEST(GraphCycles, RandomizedAgainstBruteForce) {
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    const int n = 25;
    GraphCycles gc;
    std::vector<std::set<int>> out(n);
    std::vector<bool> live(n, true);
    for (int i = 0; i < n; ++i) gc.new_node();
    auto reach = [&](int x, int y) {
      std::vector<bool> seen(n, false);
      std::vector<int> st{x};
      seen[x] = true;
      while (!st.empty()) {
        int c = st.back();
        st.pop_back();
        if (c == y) return true;
        for (int s : out[c])
          if (!seen[s]) seen[s] = true, st.push_back(s);
      }
      return false;
    };
    auto pick_live = [&]() {
      int x;
      do x = rng() % n;
      while (!live[x]);
      return x;
    };
    for (int step = 0; step < 400; ++step) {
      if (rng() % 4 != 0) {
        int x = pick_live(), y = pick_live();
        bool expect = x != y && !reach(y, x);
        ASSERT_EQ(gc.insert_edge(x, y), expect) << "seed " << seed << " step " << step;
        if (expect) out[x].insert(y);
      } else {
        std::vector<std::pair<int, int>> edges;
        for (int x = 0; x < n; ++x)
          for (int y : out[x]) edges.push_back({x, y});
        if (edges.empty()) continue;
        auto [a, b] = edges[rng() % edges.size()];
        out[a].erase(b);
        bool expect = !reach(a, b);
        std::optional<int> keep = gc.contract_edge(a, b);
        ASSERT_EQ(keep.has_value(), expect) << "seed " << seed << " step " << step;
        if (!expect) {
          out[a].insert(b);
          continue;
        }
        int gone = *keep == a ? b : a;
        for (int s : out[gone]) out[*keep].insert(s);
        out[gone].clear();
        for (int x = 0; x < n; ++x)
          if (out[x].erase(gone)) out[x].insert(*keep);
        live[gone] = false;
      }
      ASSERT_TRUE(gc.check_invariants()) << "seed " << seed << " step " << step;
    }
    for (int x = 0; x < n; ++x)
      for (int y = 0; y < n; ++y)
        if (live[x] && live[y]) {
          ASSERT_EQ(gc.is_reachable(x, y), reach(x, y)) << x << " -> " << y;
          ASSERT_EQ(gc.successors(x), out[x]);
        }
  }
}

TEST(GraphCycles, UnionFindTracksSets) {
  UnionFind uf(5);
  EXPECT_EQ(uf.find(3), 3);
  int r = uf.unite(0, 1);
  EXPECT_TRUE(r == 0 || r == 1);
  EXPECT_EQ(uf.find(0), uf.find(1));
  EXPECT_EQ(uf.size(1), 2);
  uf.unite_into(4, 0);  // the caller decides which root survives
  EXPECT_EQ(uf.find(1), 4);
  EXPECT_EQ(uf.size(0), 3);
  EXPECT_NE(uf.find(2), uf.find(4));
  EXPECT_EQ(uf.unite(2, 2), 2);
}

}  // namespace
}  // namespace jf
