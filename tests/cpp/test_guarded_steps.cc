// Guarded steps (kernel_ir.h: Step::guard) on a hand-built inlined If: lowering gives each
// branch's steps the condition's buffer, keeps a check computed every run out of them, and
// the compiled cluster runs only the taken branch.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cluster/if_to_select.h"
#include "codegen/cpu/cpu_compiler.h"
#include "codegen/kernel_ir.h"
#include "runtime/cluster_runner.h"
#include "support/errors.h"
#include "support/stats.h"

namespace jf {
namespace {

const TensorSpec kI32{DType::kInt32, Shape{3}};

Attrs guard(bool then) {
  Attrs a;
  a.set("_guard", std::string("If"));
  a.set("_guard_then", then);
  return a;
}

// out = select(p, q * q, -a) with q = a // b computed every run, as the JIT pass inlines
// If(p, ...) whose then branch squares q and whose else branch negates a.
struct InlinedIf {
  Graph g;
  Node *p, *a, *b, *q, *t, *e, *merge;
  InlinedIf() {
    p = g.add_node(OpId::Placeholder, "p", {}, Attrs(), {{DType::kBool, Shape{}}});
    a = g.add_node(OpId::Placeholder, "a", {}, Attrs(), {kI32});
    b = g.add_node(OpId::Placeholder, "b", {}, Attrs(), {kI32});
    g.inputs = {p, a, b};
    q = g.add_node(OpId::FloorDiv, "q", {{a, 0}, {b, 0}}, Attrs(), {kI32});
    t = g.add_node(OpId::Mul, "If/then/t", {{q, 0}, {q, 0}}, guard(true), {kI32});
    e = g.add_node(OpId::Neg, "If/else/e", {{a, 0}}, guard(false), {kI32});
    Attrs m;
    m.set("_merge", std::string("If"));
    merge = g.add_node(OpId::SelectV2, "If/select", {{p, 0}, {t, 0}, {e, 0}}, m, {kI32});
    g.outputs = {{merge, 0}};
  }
};

Tensor ints(std::vector<int32_t> v) {
  Tensor t = Tensor::empty(DType::kInt32, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = v[i];
  return t;
}

Tensor flag(bool v) {
  Tensor t = Tensor::empty(DType::kBool, Shape{});
  *t.data<bool>() = v;
  return t;
}

TEST(GuardedSteps, EachBranchIsAStepOfItsOwnGuardedByTheCondition) {
  InlinedIf f;
  std::string why;
  auto prog = lower_cluster(f.g, {f.q, f.t, f.e, f.merge}, &why);
  ASSERT_TRUE(prog) << why;
  int then_steps = 0, else_steps = 0, every_run = 0, p_buffer = -1;
  for (size_t i = 0; i < prog->inputs.size(); ++i)
    if (prog->inputs[i].node == f.p) p_buffer = static_cast<int>(i);
  ASSERT_GE(p_buffer, 0);
  for (const Step& s : prog->steps) {
    if (s.guard < 0) {
      ++every_run;
      continue;
    }
    EXPECT_EQ(s.guard, p_buffer) << "the condition's buffer";
    (s.guard_when ? then_steps : else_steps)++;
  }
  EXPECT_EQ(then_steps, 1);
  EXPECT_EQ(else_steps, 1);
  // q's division: it is not fused into the then branch's step, where a zero divisor would go
  // unseen whenever the else branch runs. No select runs: both branches' steps write the If's
  // output buffer (share_branch_buffers).
  EXPECT_EQ(every_run, 1);
  int out_writers = 0;
  for (const Step& s : prog->steps) out_writers += s.root->buffer == prog->output_exprs.at(0)->buffer;
  EXPECT_EQ(out_writers, 2);
  EXPECT_NE(prog->fingerprint.find("G" + std::to_string(p_buffer) + "t"), std::string::npos);
}

TEST(GuardedSteps, TheCompiledClusterRunsOnlyTheTakenBranch) {
  setenv("JITFLOW_CACHE_DIR", "off", 1);
  InlinedIf f;
  std::string why;
  CompiledCluster cc;
  cc.program = lower_cluster(f.g, {f.q, f.t, f.e, f.merge}, &why);
  ASSERT_TRUE(cc.program) << why;
  cc.kernels = compile_cpu(*cc.program, "test_guarded");
  // The cluster's inputs in its order (as first read: a, b, then p).
  auto run = [&](bool p, Tensor a, Tensor b) {
    std::vector<Tensor> in;
    for (const Output& o : cc.program->inputs) in.push_back(o.node == f.p ? flag(p) : o.node == f.a ? a : b);
    return cc.run(in);
  };
  const int64_t skipped = stats().skipped_branch_steps.load();
  auto r = run(true, ints({7, 9, -8}), ints({2, 3, 4}));
  EXPECT_EQ(r[0].data<int32_t>()[0], 9);
  EXPECT_EQ(r[0].data<int32_t>()[1], 9);
  EXPECT_EQ(r[0].data<int32_t>()[2], 4);
  EXPECT_EQ(stats().skipped_branch_steps.load(), skipped + 1);
  r = run(false, ints({7, 9, -8}), ints({2, 3, 4}));
  EXPECT_EQ(r[0].data<int32_t>()[0], -7);
  EXPECT_EQ(r[0].data<int32_t>()[2], 8);
  EXPECT_EQ(stats().skipped_branch_steps.load(), skipped + 2);
  // q runs every time: its division by zero raises whichever branch is taken.
  EXPECT_THROW(run(false, ints({7, 9, -8}), ints({2, 0, 4})), Error);
}

TEST(GuardedSteps, InliningMarksTheBranchesAndTheSelects) {
  Graph g;
  Node* p = g.add_node(OpId::Placeholder, "p", {}, Attrs(), {{DType::kBool, Shape{}}});
  Node* x = g.add_node(OpId::Placeholder, "x", {}, Attrs(), {kI32});
  g.inputs = {p, x};
  auto branch = [](OpId op) {
    auto s = std::make_shared<Graph>();
    Node* in = s->add_node(OpId::Placeholder, "x", {}, Attrs(), {kI32});
    s->inputs = {in};
    if (op == OpId::Placeholder) {  // x passed through
      s->outputs = {{in, 0}};
      return s;
    }
    std::vector<Output> ins{{in, 0}};
    if (op == OpId::FloorDiv) ins.push_back({in, 0});
    s->outputs = {{s->add_node(op, "y", ins, Attrs(), {kI32}), 0}};
    return s;
  };
  Attrs a;
  a.set("num_then_inputs", int64_t{1});
  a.set("_XlaCompile", true);
  Node* n = g.add_node(OpId::If, "If", {{p, 0}, {x, 0}, {x, 0}}, a, {kI32});
  n->subgraphs = {branch(OpId::FloorDiv), branch(OpId::Neg)};
  Node* out = g.add_node(OpId::Abs, "out", {{n, 0}}, Attrs(), {kI32});
  g.outputs = {{out, 0}};
  ClusterOptions o;
  o.whole_function = true;
  auto emits = [](const Node&, std::string*) { return true; };
  EXPECT_NE(if_conversion_refusal(*n, o, emits), "");  // an integer division: no select
  EXPECT_EQ(guarded_if_refusal(*n, o, emits), "");
  std::vector<IfConversion> done;
  std::shared_ptr<Graph> h = inline_guarded_ifs(g, {"If"}, &done);
  EXPECT_EQ(h->find("If"), nullptr);
  const Node* merge = h->find("out")->inputs[0].node;
  EXPECT_EQ(merge->attrs.get<std::string>("_merge", ""), "If");
  EXPECT_EQ(merge->inputs[1].node->name, "If/then/y");
  EXPECT_EQ(merge->inputs[1].node->attrs.get<std::string>("_guard", ""), "If");
  EXPECT_TRUE(merge->inputs[1].node->attrs.get<bool>("_guard_then", false));
  EXPECT_FALSE(merge->inputs[2].node->attrs.get<bool>("_guard_then", true));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].selects, std::vector<std::string>{merge->name});
  for (const auto& m : h->nodes())
    for (const Output& i : m->inputs) EXPECT_LT(i.node->id, m->id) << m->name;
  // Both branches passing x through compute nothing to select between.
  n->subgraphs = {branch(OpId::Placeholder), branch(OpId::Placeholder)};
  const std::string why = guarded_if_refusal(*n, o, emits);
  EXPECT_NE(why.find("no output that differs"), std::string::npos) << why;
}

}  // namespace
}  // namespace jf
