// If-conversion (cluster/if_to_select.h) on small hand-built graphs: which Ifs become selects,
// why the others stay executor branches, and how uses and control edges move.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cluster/if_to_select.h"

namespace jf {
namespace {

TensorSpec f32(Shape s = Shape{3}) { return TensorSpec{DType::kFloat32, s}; }

Attrs scoped(const std::string& scope) {
  Attrs a;
  if (!scope.empty()) {
    a.set("_XlaScope", scope);
    a.set("_XlaCompile", true);
  }
  return a;
}

// A branch graph of one input computing `op` on it (or passing it through when op is
// Placeholder), in `scope`.
std::shared_ptr<Graph> branch(OpId op, const std::string& scope = "s", TensorSpec in = f32()) {
  auto g = std::make_shared<Graph>();
  Node* x = g->add_node(OpId::Placeholder, "x", {}, Attrs(), {in});
  g->inputs.push_back(x);
  if (op == OpId::Placeholder) {
    g->outputs.push_back({x, 0});
    return g;
  }
  std::vector<Output> ins{{x, 0}};
  if (op == OpId::FloorDiv || op == OpId::AddV2) ins.push_back({x, 0});
  Node* y = g->add_node(op, "y", ins, scoped(scope), {in});
  g->outputs.push_back({y, 0});
  return g;
}

// Sin plays the op without an emitter.
bool emits(const Node& n, std::string* why) {
  if (n.op != OpId::Sin) return true;
  *why = "no emitter for Sin";
  return false;
}

class IfToSelectTest : public ::testing::Test {
 protected:
  // out = Neg(If(pred, x, x)) with the given branches, the If in scope "s".
  void build(std::shared_ptr<Graph> then_g, std::shared_ptr<Graph> else_g, TensorSpec x_spec = f32(),
             const std::string& if_scope = "s") {
    pred_ = g_.add_node(OpId::Placeholder, "pred", {}, Attrs(), {TensorSpec{DType::kBool, Shape{}}});
    x_ = g_.add_node(OpId::Placeholder, "x", {}, Attrs(), {x_spec});
    g_.inputs = {pred_, x_};
    Attrs a = scoped(if_scope);
    a.set("num_then_inputs", int64_t{1});
    if_ =
        g_.add_node(OpId::If, "If", {{pred_, 0}, {x_, 0}, {x_, 0}}, a, {then_g->outputs[0].node->outputs[0]});
    if_->subgraphs = {then_g, else_g};
    Node* neg = g_.add_node(OpId::Neg, "out", {{if_, 0}}, scoped("s"), {x_spec});
    g_.outputs.push_back({neg, 0});
  }
  std::shared_ptr<Graph> convert(ClusterOptions o = {}) {
    done_.clear();
    return convert_ifs_to_selects(g_, o, emits, &done_);
  }
  std::string refusal(ClusterOptions o = {}) { return if_conversion_refusal(*if_, o, emits); }

  Graph g_;
  Node *pred_ = nullptr, *x_ = nullptr, *if_ = nullptr;
  std::vector<IfConversion> done_;
};

TEST_F(IfToSelectTest, SmallPureBranchesBecomeASelect) {
  build(branch(OpId::Tanh), branch(OpId::Exp));
  std::shared_ptr<Graph> h = convert();
  ASSERT_TRUE(h);
  EXPECT_EQ(h->find("If"), nullptr);
  Node* out = h->find("out");
  ASSERT_EQ(out->inputs[0].node->op, OpId::SelectV2);
  const Node* sel = out->inputs[0].node;
  EXPECT_EQ(sel->inputs[0].node->name, "pred");
  EXPECT_EQ(sel->inputs[1].node->name, "If/then/y");
  EXPECT_EQ(sel->inputs[1].node->op, OpId::Tanh);
  EXPECT_EQ(sel->inputs[2].node->name, "If/else/y");
  EXPECT_EQ(sel->inputs[2].node->inputs[0].node->name, "x");
  EXPECT_EQ(sel->attrs.get<std::string>("_XlaScope", ""), "s");
  // Node ids stay a topological order.
  for (const auto& n : h->nodes())
    for (const Output& o : n->inputs) EXPECT_LT(o.node->id, n->id) << n->name;
  ASSERT_EQ(done_.size(), 1u);
  EXPECT_EQ(done_[0].if_name, "If");
  EXPECT_EQ(g_.find("If"), if_);  // the input graph is untouched
}

TEST_F(IfToSelectTest, BranchesReturningTheSameValueNeedNoSelect) {
  build(branch(OpId::Placeholder), branch(OpId::Placeholder));
  std::shared_ptr<Graph> h = convert();
  ASSERT_TRUE(h);
  EXPECT_EQ(h->find("out")->inputs[0].node->name, "x");
}

TEST_F(IfToSelectTest, IntegerDivisionCouldFailInTheUntakenBranch) {
  const TensorSpec i32{DType::kInt32, Shape{3}};
  build(branch(OpId::FloorDiv, "s", i32), branch(OpId::Placeholder, "s", i32), i32);
  EXPECT_NE(refusal().find("checks its integer operand"), std::string::npos) << refusal();
  EXPECT_FALSE(convert());
}

TEST_F(IfToSelectTest, FloatDivisionIsFine) {
  build(branch(OpId::FloorDiv), branch(OpId::Placeholder));
  EXPECT_EQ(refusal(), "");
}

TEST_F(IfToSelectTest, RunTimeShapesOfOneInputConvert) {
  const TensorSpec any = f32(Shape{-1});
  build(branch(OpId::Tanh, "s", any), branch(OpId::Placeholder, "s", any), any);
  EXPECT_EQ(refusal(), "");
}

TEST_F(IfToSelectTest, AStaticOperandBesideARunTimeShapeMayNotBroadcast) {
  const TensorSpec any = f32(Shape{-1});
  auto then_g = std::make_shared<Graph>();
  Node* x = then_g->add_node(OpId::Placeholder, "x", {}, Attrs(), {any});
  then_g->inputs.push_back(x);
  Attrs c;
  c.set("value", Tensor::empty(DType::kFloat32, Shape{3}));
  Node* k = then_g->add_node(OpId::Const, "k", {}, c, {f32()});
  Node* y = then_g->add_node(OpId::AddV2, "y", {{x, 0}, {k, 0}}, scoped("s"), {any});
  then_g->outputs.push_back({y, 0});
  build(then_g, branch(OpId::Placeholder, "s", any), any);
  EXPECT_NE(refusal().find("known only at run time: op 'y' (AddV2)"), std::string::npos) << refusal();
}

TEST_F(IfToSelectTest, RunTimeShapesOfTwoInputsAreNotProvablyEqual) {
  const TensorSpec any = f32(Shape{-1});
  pred_ = g_.add_node(OpId::Placeholder, "pred", {}, Attrs(), {TensorSpec{DType::kBool, Shape{}}});
  x_ = g_.add_node(OpId::Placeholder, "x", {}, Attrs(), {any});
  Node* y = g_.add_node(OpId::Placeholder, "y", {}, Attrs(), {any});
  Attrs a = scoped("s");
  a.set("num_then_inputs", int64_t{1});
  if_ = g_.add_node(OpId::If, "If", {{pred_, 0}, {x_, 0}, {y, 0}}, a, {any});
  if_->subgraphs = {branch(OpId::Tanh, "s", any), branch(OpId::Exp, "s", any)};
  EXPECT_NE(refusal().find("not provably the same shape"), std::string::npos) << refusal();
}

TEST_F(IfToSelectTest, AnUncompilableBranchOpIsNamed) {
  build(branch(OpId::Sin), branch(OpId::Tanh));
  EXPECT_NE(refusal().find("'y' (Sin) does not compile: no emitter for Sin"), std::string::npos) << refusal();
}

TEST_F(IfToSelectTest, AStatefulBranchOpIsASideEffect) {
  auto then_g = branch(OpId::Placeholder);
  Node* p = then_g->add_node(OpId::PrintV2, "print", {{then_g->inputs[0], 0}}, scoped("s"), {});
  (void)p;
  build(then_g, branch(OpId::Tanh));
  EXPECT_NE(refusal().find("side effect"), std::string::npos) << refusal();
}

TEST_F(IfToSelectTest, OnlyInsideTheIfsScopeUnlessAutoJitOrJitCompile) {
  build(branch(OpId::Tanh, "other"), branch(OpId::Tanh));
  EXPECT_NE(refusal().find("outside the If's jit scope"), std::string::npos) << refusal();
  ClusterOptions whole;
  whole.whole_function = true;
  EXPECT_EQ(refusal(whole), "");
}

TEST_F(IfToSelectTest, AnIfOutsideEveryScopeIsNotCompiled) {
  build(branch(OpId::Tanh, ""), branch(OpId::Tanh, ""), f32(), "");
  EXPECT_EQ(refusal(), "it is not in compiled code");
  ClusterOptions autojit;
  autojit.auto_jit = true;
  EXPECT_EQ(refusal(autojit), "");
}

TEST_F(IfToSelectTest, ControlEdgesThroughTheIfAreKept) {
  build(branch(OpId::Tanh), branch(OpId::Exp));
  Node* before = g_.add_node(OpId::PrintV2, "before", {{x_, 0}}, Attrs(), {});
  Node* after = g_.add_node(OpId::PrintV2, "after", {{x_, 0}}, Attrs(), {});
  if_->control_inputs.push_back(before);
  after->control_inputs.push_back(if_);
  g_.topo_sort();
  std::shared_ptr<Graph> h = convert();
  ASSERT_TRUE(h);
  const std::vector<Node*>& ci = h->find("after")->control_inputs;
  ASSERT_EQ(ci.size(), 1u);
  EXPECT_EQ(ci[0]->name, "before");
}

TEST_F(IfToSelectTest, ANestedIfConvertsFirstSoItsParentCan) {
  // then: If(pred', x, x) with Tanh / Exp branches, pred' a constant of the branch.
  auto then_g = std::make_shared<Graph>();
  Node* tx = then_g->add_node(OpId::Placeholder, "x", {}, Attrs(), {f32()});
  then_g->inputs.push_back(tx);
  Attrs c = scoped("s");
  c.set("value", Tensor::scalar(DType::kBool, 1.0));
  Node* p = then_g->add_node(OpId::Const, "p", {}, c, {TensorSpec{DType::kBool, Shape{}}});
  Attrs a = scoped("s");
  a.set("num_then_inputs", int64_t{1});
  Node* inner = then_g->add_node(OpId::If, "inner", {{p, 0}, {tx, 0}, {tx, 0}}, a, {f32()});
  inner->subgraphs = {branch(OpId::Tanh), branch(OpId::Exp)};
  then_g->outputs.push_back({inner, 0});
  build(then_g, branch(OpId::Neg));
  EXPECT_NE(refusal().find("control flow"), std::string::npos);
  std::shared_ptr<Graph> h = convert();
  ASSERT_TRUE(h);
  for (const auto& n : h->nodes()) EXPECT_NE(n->op, OpId::If) << n->name;
  EXPECT_NE(h->find("If/then/inner/select"), nullptr);
}

}  // namespace
}  // namespace jf
