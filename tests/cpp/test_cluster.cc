// The mark-for-compilation pass on small hand-built graphs (docs/jit_scope.md, 'Clusters').
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cluster/mark_for_compilation.h"
#include "support/errors.h"

namespace jf {
namespace {

using Names = std::vector<std::string>;

// Builds graphs of float32[2] nodes with jit_scope attrs set by hand, as the tracer would.
class ClusterTest : public ::testing::Test {
 protected:
  Node* input(const std::string& name) {
    Node* n = g_->add_node(OpId::Placeholder, name, {}, Attrs(), {spec()});
    g_->inputs.push_back(n);
    return n;
  }
  // scope "" leaves both attrs absent, like an op created outside every jit_scope.
  Node* op(OpId id, const std::string& name, std::vector<Node*> ins, const std::string& scope = "",
           std::optional<bool> compile = std::nullopt) {
    Attrs a;
    if (!scope.empty()) {
      a.set("_XlaScope", scope);
      a.set("_XlaCompile", compile.value_or(true));
    } else if (compile) {
      a.set("_XlaCompile", *compile);
    }
    std::vector<Output> outs;
    for (Node* i : ins) outs.push_back({i, 0});
    Node* n = g_->add_node(id, name, outs, a, {spec()});
    n->source = "model.py:" + std::to_string(n->id + 10);
    return n;
  }
  Node* constant(const std::string& name, const std::string& scope = "") {
    Attrs a;
    a.set("value", Tensor::empty(DType::kFloat32, Shape{2}));
    if (!scope.empty()) {
      a.set("_XlaScope", scope);
      a.set("_XlaCompile", true);
    }
    return g_->add_node(OpId::Const, name, {}, a, {spec()});
  }
  static TensorSpec spec() { return TensorSpec{DType::kFloat32, Shape{2}}; }

  // Sin plays the op without an emitter.
  ClusteringResult run(ClusterOptions opts = {}) {
    result_ = mark_for_compilation(*g_, opts, [](const Node& n, std::string* why) {
      if (n.op != OpId::Sin) return true;
      *why = "no emitter for Sin";
      return false;
    });
    check_invariants();
    return result_;
  }
  // Members of each compiled cluster, in cluster order.
  std::vector<Names> clusters() const {
    std::vector<Names> out;
    for (const Cluster& c : result_.clusters) {
      out.emplace_back();
      for (const Node* n : c.nodes) out.back().push_back(n->name);
    }
    return out;
  }
  std::string reason(const std::string& name) const {
    auto it = result_.eager_reason.find(g_->find(name));
    return it == result_.eager_reason.end() ? "<none>" : it->second;
  }
  int cluster_of(const std::string& name) const {
    for (size_t i = 0; i < result_.clusters.size(); ++i)
      for (const Node* n : result_.clusters[i].nodes)
        if (n->name == name) return static_cast<int>(i);
    return -1;
  }

  // What every result must satisfy: names in order, members sorted and disjoint, an eager
  // reason exactly for the rest (Placeholders aside), and an acyclic graph once each cluster
  // is collapsed to one node.
  void check_invariants() const {
    std::map<const Node*, int> group;
    for (size_t i = 0; i < result_.clusters.size(); ++i) {
      const Cluster& c = result_.clusters[i];
      EXPECT_EQ(c.name, "cluster_" + std::to_string(i));
      ASSERT_FALSE(c.nodes.empty());
      if (i > 0) EXPECT_LT(result_.clusters[i - 1].nodes[0]->id, c.nodes[0]->id);
      for (size_t k = 0; k < c.nodes.size(); ++k) {
        if (k > 0) EXPECT_LT(c.nodes[k - 1]->id, c.nodes[k]->id);
        EXPECT_TRUE(group.emplace(c.nodes[k], static_cast<int>(i)).second);
      }
    }
    int next = static_cast<int>(result_.clusters.size());
    for (const auto& up : g_->nodes()) {
      const Node* n = up.get();
      bool eager = result_.eager_reason.count(n) != 0;
      if (n->op == OpId::Placeholder)
        EXPECT_FALSE(eager);
      else
        EXPECT_NE(eager, group.count(n) != 0) << n->name;
      if (!group.count(n)) group[n] = next++;
    }
    // Collapsed graph: edges between groups; a cycle shows up as a back edge in a DFS.
    std::vector<std::set<int>> succ(next);
    for (const auto& up : g_->nodes()) {
      int to = group[up.get()];
      for (const Output& o : up->inputs)
        if (group[o.node] != to) succ[group[o.node]].insert(to);
      for (const Node* c : up->control_inputs)
        if (group[c] != to) succ[group[c]].insert(to);
    }
    std::vector<int> state(next, 0);
    std::function<bool(int)> acyclic = [&](int v) {
      state[v] = 1;
      for (int s : succ[v])
        if (state[s] == 1 || (state[s] == 0 && !acyclic(s))) return false;
      state[v] = 2;
      return true;
    };
    for (int v = 0; v < next; ++v)
      if (state[v] == 0) EXPECT_TRUE(acyclic(v)) << "collapsed graph has a cycle";
  }

  std::unique_ptr<Graph> g_ = std::make_unique<Graph>();
  ClusteringResult result_;
};

TEST_F(ClusterTest, ChainSplitByUncompilableOp) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* b = op(OpId::Tanh, "b", {a}, "jit_scope_0");
  Node* s = op(OpId::Sin, "s", {b}, "jit_scope_0");
  Node* c = op(OpId::Neg, "c", {s}, "jit_scope_0");
  op(OpId::Abs, "d", {c}, "jit_scope_0");
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(result_.clusters[0].scope, "jit_scope_0");
  EXPECT_EQ(result_.clusters[1].scope, "jit_scope_0");
  EXPECT_EQ(reason("s"), "no emitter for Sin");
}

// a -> b (no emitter) -> c and a -> c: fusing a with c would force b to run inside the fused
// kernel, between its own producer and consumer.
TEST_F(ClusterTest, UncompilableOpInDiamondPreventsCycle) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* b = op(OpId::Sin, "b", {a}, "jit_scope_0");
  op(OpId::AddV2, "c", {a, b}, "jit_scope_0");
  run();
  // Both halves are still in a scope with _XlaCompile=True, so each is compiled on its own.
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a"}, {"c"}}));
  EXPECT_NE(cluster_of("a"), cluster_of("c"));
  EXPECT_EQ(reason("b"), "no emitter for Sin");
}

TEST_F(ClusterTest, UncompilableOpInDiamondExplainsTheCycleUnderAutoJit) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x});
  Node* b = op(OpId::Sin, "b", {a});
  op(OpId::AddV2, "c", {a, b});
  run({/*auto_jit=*/true});
  EXPECT_TRUE(clusters().empty());
  EXPECT_EQ(reason("a"), "auto-clustering: cluster too small (joining 'c' would create a cycle through 'b')");
  EXPECT_EQ(reason("c"), "auto-clustering: cluster too small (joining 'a' would create a cycle through 'b')");
}

TEST_F(ClusterTest, ControlEdgeThroughUncompilableOpPreventsCycle) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* b = op(OpId::Sin, "b", {x}, "jit_scope_0");
  b->control_inputs.push_back(a);
  Node* c = op(OpId::Neg, "c", {a}, "jit_scope_0");
  c->control_inputs.push_back(b);
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a"}, {"c"}}));
}

TEST_F(ClusterTest, CompilableDiamondIsOneCluster) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* b = op(OpId::Tanh, "b", {a}, "jit_scope_0");
  Node* c = op(OpId::Sigmoid, "c", {a}, "jit_scope_0");
  op(OpId::AddV2, "d", {b, c}, "jit_scope_0");
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a", "b", "c", "d"}}));
}

// Each op in its own root scope (jit_scope_0/1/2), all _XlaCompile=True: nothing merges, but
// each single-op cluster is still compiled because it asked to be.
TEST_F(ClusterTest, EachOpInItsOwnScopeNeverMerges) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* b = op(OpId::Tanh, "b", {a}, "jit_scope_1");
  op(OpId::Neg, "c", {a, b}, "jit_scope_2");
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a"}, {"b"}, {"c"}}));
  EXPECT_EQ(result_.clusters[0].scope, "jit_scope_0");
  EXPECT_EQ(result_.clusters[1].scope, "jit_scope_1");
  EXPECT_EQ(result_.clusters[2].scope, "jit_scope_2");
}

TEST_F(ClusterTest, AutoJitIgnoresScopes) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* b = op(OpId::Tanh, "b", {a}, "jit_scope_1");
  op(OpId::Neg, "c", {a, b}, "jit_scope_2");
  run({/*auto_jit=*/true});
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a", "b", "c"}}));
  EXPECT_EQ(result_.clusters[0].scope, "jit_scope_0");
}

// y = x * 2 and w = y + z in one scope, z = y * y in the same scope with _XlaCompile=False:
// y and w cannot share a kernel because z must run between them.
TEST_F(ClusterTest, ScopeSplitByCompileFalseOp) {
  Node* x = input("x");
  Node* two = constant("two", "jit_scope_0");
  Node* y = op(OpId::Mul, "y", {x, two}, "jit_scope_0");
  Node* z = op(OpId::Mul, "z", {y, y}, "jit_scope_0", false);
  op(OpId::AddV2, "w", {y, z}, "jit_scope_0");
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"two", "y"}, {"w"}}));
  EXPECT_EQ(reason("z"), "_XlaCompile=False");
}

// a (jit_scope_0) -> u (unscoped) -> b (jit_scope_1): u may join a neighbour, but then its
// cluster has a scope and the two scopes stay apart.
TEST_F(ClusterTest, UnscopedBridgeJoinsOneScopeOnly) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* u = op(OpId::Tanh, "u", {a});
  op(OpId::Neg, "b", {u}, "jit_scope_1");
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a", "u"}, {"b"}}));
  EXPECT_EQ(result_.clusters[0].scope, "jit_scope_0");
  EXPECT_EQ(result_.clusters[1].scope, "jit_scope_1");
  EXPECT_NE(cluster_of("a"), cluster_of("b"));
}

TEST_F(ClusterTest, UnscopedProducerJoinsScopedConsumer) {
  Node* x = input("x");
  Node* u = op(OpId::Exp, "u", {x});
  op(OpId::Neg, "b", {u}, "jit_scope_0");
  run();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"u", "b"}}));
  EXPECT_EQ(result_.clusters[0].scope, "jit_scope_0");
}

TEST_F(ClusterTest, StatefulOpNeverClustered) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* r = op(OpId::RandomUniform, "r", {a}, "jit_scope_0");
  Node* b = op(OpId::AddV2, "b", {a, r}, "jit_scope_0");
  op(OpId::Neg, "c", {b}, "jit_scope_0");
  for (bool auto_jit : {false, true}) {
    run({auto_jit});
    EXPECT_EQ(cluster_of("r"), -1);
    EXPECT_EQ(reason("r"), "stateful op");
    // r sits between a and b, so they cannot fuse either.
    EXPECT_NE(cluster_of("a"), cluster_of("b"));
    EXPECT_EQ(cluster_of("b"), cluster_of("c"));
  }
}

TEST_F(ClusterTest, WholeFunctionNamesTheUncompilableOp) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x});
  Node* s = op(OpId::Sin, "my_sin", {a});
  op(OpId::Neg, "c", {s});
  try {
    run({false, /*whole_function=*/true});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    std::string msg = e.what();
    EXPECT_NE(msg.find("'my_sin' (Sin)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(s->source), std::string::npos) << msg;
    EXPECT_NE(msg.find("no emitter for Sin"), std::string::npos) << msg;
  }
}

TEST_F(ClusterTest, WholeFunctionRejectsCompileFalseAndStatefulOps) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0", false);
  op(OpId::RandomUniform, "r", {a});
  try {
    run({false, true});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'a' (Exp)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("_XlaCompile=False"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'r' (RandomUniform)"), std::string::npos) << msg;
  }
}

// Variable reads and writes run beside the compiled unit (the record's kResourceAccess), so
// jit_compile=True compiles the rest instead of refusing the function.
TEST_F(ClusterTest, WholeFunctionLeavesResourceAccessesOutside) {
  Node* read = op(OpId::ReadVariableOp, "read", {});
  Node* a = op(OpId::Exp, "a", {read});
  Node* b = op(OpId::Neg, "b", {a});
  op(OpId::AssignVariableOp, "write", {b});
  run({false, /*whole_function=*/true});
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a", "b"}}));
  EXPECT_EQ(reason("read"), "stateful op");
  EXPECT_EQ(reason("write"), "stateful op");
}

// A read after a write of what compiled code computed has to run between two units: the
// function compiles as those two (TF's XLA orders the resource accesses inside its one
// computation), every op compiled.
TEST_F(ClusterTest, WholeFunctionSplitsAroundAResourceAccessInTheMiddle) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x});
  Node* write = op(OpId::AssignVariableOp, "write", {a});
  Node* read = op(OpId::ReadVariableOp, "read", {});
  read->control_inputs.push_back(write);
  Node* b = op(OpId::Neg, "b", {read});
  op(OpId::Mul, "c", {b, a});
  run({false, /*whole_function=*/true});
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a"}, {"b", "c"}}));
  EXPECT_EQ(reason("write"), "stateful op");
  EXPECT_EQ(reason("read"), "stateful op");
}

TEST_F(ClusterTest, ControlFlowStaysOnTheExecutor) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0");
  Node* w = op(OpId::While, "loop", {a}, "jit_scope_0");
  op(OpId::Neg, "c", {w}, "jit_scope_0");
  run();
  EXPECT_EQ(cluster_of("loop"), -1);
  EXPECT_NE(reason("loop").find("control flow (While) runs on the executor"), std::string::npos)
      << reason("loop");
}

TEST_F(ClusterTest, WholeFunctionIsOneClusterAcrossScopes) {
  Node* x = input("x");
  Node* k = constant("k");
  Node* a = op(OpId::Mul, "a", {x, k}, "jit_scope_0");
  Node* b = op(OpId::Tanh, "b", {a}, "jit_scope_1");
  Node* u = op(OpId::Exp, "u", {x});
  op(OpId::AddV2, "c", {b, u});
  run({false, true});
  EXPECT_EQ(clusters(), (std::vector<Names>{{"k", "a", "b", "u", "c"}}));
}

TEST_F(ClusterTest, UnscopedClusterNotCompiledWithoutAutoJit) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x});
  op(OpId::Tanh, "b", {a});
  run();
  EXPECT_TRUE(clusters().empty());
  EXPECT_EQ(reason("a"), "not in a jit_scope (no op in its cluster has _XlaCompile=True)");
  EXPECT_EQ(reason("b"), reason("a"));
  run({/*auto_jit=*/true});
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a", "b"}}));
}

TEST_F(ClusterTest, CompileFalseIsNeverCompiledEvenUnderAutoJit) {
  Node* x = input("x");
  Node* a = op(OpId::Exp, "a", {x}, "jit_scope_0", false);
  Node* b = op(OpId::Tanh, "b", {a}, "jit_scope_0", false);
  op(OpId::Neg, "c", {b});
  run({/*auto_jit=*/true});
  EXPECT_TRUE(clusters().empty());
  EXPECT_EQ(reason("a"), "_XlaCompile=False");
  EXPECT_EQ(reason("c"), "auto-clustering: cluster too small");
}

TEST_F(ClusterTest, AutoJitKeepsOnlyClustersWithTwoRealOps) {
  Node* x = input("x");
  Node* k = constant("k");
  Node* a = op(OpId::Mul, "a", {x, k});
  Node* i = op(OpId::Identity, "i", {a});
  Node* s = op(OpId::Sin, "s", {i});
  Node* b = op(OpId::Exp, "b", {s});
  op(OpId::Tanh, "c", {b});
  run({/*auto_jit=*/true});
  // {k, a, i} has one real op (a); {b, c} has two.
  EXPECT_EQ(clusters(), (std::vector<Names>{{"b", "c"}}));
  EXPECT_EQ(reason("a"), "auto-clustering: cluster too small");
  EXPECT_EQ(reason("k"), "auto-clustering: cluster too small");
}

TEST_F(ClusterTest, TrivialOnlyClusterIsDropped) {
  Node* x = input("x");
  Node* k = constant("shape", "jit_scope_0");
  Node* r = op(OpId::Reshape, "r", {x, k}, "jit_scope_0");
  op(OpId::Identity, "i", {r}, "jit_scope_0");
  run();
  EXPECT_TRUE(clusters().empty());
  EXPECT_NE(reason("r").find("only trivial ops"), std::string::npos) << reason("r");
  EXPECT_NE(reason("shape").find("only trivial ops"), std::string::npos) << reason("shape");
}

// A constant shared by two scopes joins one of them without tying the scopes together: had it
// been absorbed into a1's cluster first, the edge k -> b1 would have made a1 + a2 a cycle.
TEST_F(ClusterTest, SharedConstantDoesNotBlockAMerge) {
  Node* x = input("x");
  Node* k = constant("k");
  Node* a1 = op(OpId::Mul, "a1", {x, k}, "jit_scope_0");
  Node* b1 = op(OpId::Mul, "b1", {x, k}, "jit_scope_1");
  op(OpId::AddV2, "a2", {a1, b1}, "jit_scope_0");
  run();
  EXPECT_EQ(cluster_of("a1"), cluster_of("a2"));
  EXPECT_EQ(clusters(), (std::vector<Names>{{"k", "b1"}, {"a1", "a2"}}));
}

TEST_F(ClusterTest, ScopedConstantDoesNotCompileUnscopedConsumer) {
  Node* x = input("x");
  Node* k = constant("k", "jit_scope_0");
  op(OpId::Mul, "u", {x, k});
  run();
  EXPECT_TRUE(clusters().empty());
  EXPECT_EQ(reason("u"), "not in a jit_scope (no op in its cluster has _XlaCompile=True)");
}

TEST_F(ClusterTest, UncompilableConstStaysEagerWithItsReason) {
  Node* x = input("x");
  Node* k = constant("k", "jit_scope_0");
  op(OpId::Mul, "a", {x, k}, "jit_scope_0");
  result_ = mark_for_compilation(*g_, {}, [](const Node& n, std::string* why) {
    if (n.op != OpId::Const) return true;
    *why = "constant too large to embed";
    return false;
  });
  check_invariants();
  EXPECT_EQ(clusters(), (std::vector<Names>{{"a"}}));
  EXPECT_EQ(reason("k"), "constant too large to embed");
}

// Random DAGs mixing scopes, uncompilable, stateful and _XlaCompile=False ops: whatever the
// pass decides, collapsing its clusters must leave the graph acyclic (check_invariants).
TEST_F(ClusterTest, RandomGraphsStayAcyclicWhenCollapsed) {
  const OpId kinds[] = {OpId::AddV2, OpId::Mul, OpId::Sin, OpId::RandomUniform, OpId::Identity};
  size_t compiled = 0;
  for (int seed = 0; seed < 30; ++seed) {
    g_ = std::make_unique<Graph>();
    std::mt19937 rng(seed);
    std::vector<Node*> nodes{input("x"), constant("k")};
    for (int i = 0; i < 200; ++i) {
      OpId kind = kinds[rng() % 5];
      int nin = kind == OpId::AddV2 || kind == OpId::Mul ? 2 : 1;
      std::vector<Node*> ins;
      // Mostly recent producers, so that long chains and diamonds both show up.
      for (int k = 0; k < nin; ++k) {
        int back = 1 + static_cast<int>(rng() % std::min<size_t>(nodes.size(), 8));
        ins.push_back(nodes[nodes.size() - back]);
      }
      std::string scope = rng() % 3 == 0 ? "" : "jit_scope_" + std::to_string(rng() % 3);
      std::optional<bool> compile;
      if (!scope.empty()) compile = rng() % 6 != 0;
      Node* n = op(kind, "n" + std::to_string(i), ins, scope, compile);
      if (rng() % 10 == 0) n->control_inputs.push_back(nodes[rng() % nodes.size()]);
      nodes.push_back(n);
    }
    run();
    compiled += result_.clusters.size();
    run({/*auto_jit=*/true});
    compiled += result_.clusters.size();
  }
  EXPECT_GT(compiled, 100u);  // the property is not checked on empty results only
}

}  // namespace
}  // namespace jf
