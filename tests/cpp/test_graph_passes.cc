// IR, passes and executor on small graphs: TF naming, DCE/CSE/constant folding, plan runs.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "passes/passes.h"
#include "runtime/executor.h"

namespace jf {
namespace {

Tensor scalar(float v) { return Tensor::scalar(DType::kFloat32, v); }

Node* constant(Graph& g, float v) {
  Attrs a;
  a.set("value", scalar(v));
  return g.add_node(OpId::Const, g.unique_name("Const"), {}, a, {{DType::kFloat32, Shape{}}});
}
Node* placeholder(Graph& g, const std::string& name) {
  Node* n = g.add_node(OpId::Placeholder, g.unique_name(name), {}, Attrs(), {{DType::kFloat32, Shape{}}});
  g.inputs.push_back(n);
  return n;
}
Node* binary(Graph& g, OpId op, Node* a, Node* b) {
  return g.add_node(op, g.unique_name(op_def(op).name), {{a, 0}, {b, 0}}, Attrs(),
                    {{DType::kFloat32, Shape{}}});
}

TEST(Graph, TensorFlowNaming) {
  Graph g;
  EXPECT_EQ(g.unique_name("MatMul"), "MatMul");
  EXPECT_EQ(g.unique_name("MatMul"), "MatMul_1");
  EXPECT_EQ(g.unique_name("scope/MatMul"), "scope/MatMul");
  EXPECT_EQ(g.unique_name("MatMul"), "MatMul_2");
  EXPECT_EQ(g.unique_name("MatMul_3"), "MatMul_3");
  EXPECT_EQ(g.unique_name("MatMul"), "MatMul_4");  // skips the name taken explicitly
}

TEST(Passes, FoldCseDce) {
  Graph g;
  Node* x = placeholder(g, "x");
  Node* k = binary(g, OpId::Mul, constant(g, 2), constant(g, 3));  // folds to 6
  Node* a = binary(g, OpId::Mul, x, k);
  Node* b = binary(g, OpId::Mul, x, k);  // same as a: CSE
  binary(g, OpId::Sub, x, x);            // unused: DCE
  Node* out = binary(g, OpId::AddV2, a, b);
  g.outputs.push_back({out, 0});
  auto opt = optimize(g, "test");
  int muls = 0, subs = 0;
  for (const auto& n : opt->nodes()) muls += n->op == OpId::Mul, subs += n->op == OpId::Sub;
  EXPECT_EQ(muls, 1);
  EXPECT_EQ(subs, 0);
  auto plan = build_plan(opt);
  auto r = run_plan(*plan, {scalar(5)});
  EXPECT_FLOAT_EQ(*r[0].data<float>(), 60.f);
  EXPECT_EQ(g.num_nodes(), 8);  // the traced graph is untouched
}

TEST(Executor, ReleasesDeadValuesAndKeepsOutputs) {
  Graph g;
  Node* x = placeholder(g, "x");
  Node* a = binary(g, OpId::AddV2, x, x);
  Node* b = binary(g, OpId::Mul, a, a);
  Node* c = binary(g, OpId::Sub, b, a);
  g.outputs.push_back({c, 0});
  g.outputs.push_back({a, 0});
  auto plan = build_plan(g.clone());
  ASSERT_EQ(plan->order.size(), 3u);
  EXPECT_TRUE(plan->release[1].empty());   // a is an output: pinned
  EXPECT_EQ(plan->release[2].size(), 1u);  // b dies at c
  auto r = run_plan(*plan, {scalar(3)});
  EXPECT_FLOAT_EQ(*r[0].data<float>(), 30.f);
  EXPECT_FLOAT_EQ(*r[1].data<float>(), 6.f);
}

TEST(Graph, TopoSortKeepsOrderKeys) {
  Graph g;
  Node* x = placeholder(g, "x");
  Node* a = binary(g, OpId::AddV2, x, x);
  Node* late = binary(g, OpId::Mul, x, x);
  late->order_key = -1;
  Node* use = binary(g, OpId::Sub, a, late);
  (void)use;
  g.topo_sort();
  for (const auto& n : g.nodes())
    for (const Output& o : n->inputs) EXPECT_LT(o.node->id, n->id);
}

// A While's step graph: body (v -> v * 3) then cond (v < limit, limit captured by the cond
// only), run by the plan: inputs [v, body captures, cond captures], outputs [next v, go on].
TEST(Passes, LoopStepGraphRunsTheBodyThenTheCond) {
  Graph cond, body;
  Node* cv = placeholder(cond, "v");
  Node* limit = placeholder(cond, "limit");
  cond.outputs.push_back(
      {cond.add_node(OpId::Less, "Less", {{cv, 0}, {limit, 0}}, Attrs(), {{DType::kBool, Shape{}}}), 0});
  Node* bv = placeholder(body, "v");
  Node* three = placeholder(body, "three");
  body.outputs.push_back({binary(body, OpId::Mul, bv, three), 0});
  auto step = loop_step_graph(cond, body, 1);
  ASSERT_EQ(step->inputs.size(), 3u);
  ASSERT_EQ(step->outputs.size(), 2u);
  EXPECT_EQ(step->inputs[2]->name, "cond/limit");
  auto plan = build_plan(optimize(*step, "step"));
  auto r = run_plan(*plan, {scalar(2), scalar(3), scalar(10)});
  EXPECT_FLOAT_EQ(*r[0].data<float>(), 6.f);
  EXPECT_TRUE(*r[1].data<bool>());
  r = run_plan(*plan, {scalar(4), scalar(3), scalar(10)});
  EXPECT_FLOAT_EQ(*r[0].data<float>(), 12.f);
  EXPECT_FALSE(*r[1].data<bool>());
  EXPECT_EQ(cond.num_nodes(), 3);  // the subgraphs are untouched
  EXPECT_EQ(body.num_nodes(), 3);
}

}  // namespace
}  // namespace jf
