// Codegen: a cluster lowered to kernel IR, compiled by the CPU JIT and run; PTX emission.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "codegen/kernel_ir.h"
#include "codegen/nvptx/nvptx_compiler.h"
#include "runtime/cluster_runner.h"
#include "static_params.h"

namespace jf {
namespace {

struct Fixture {
  Graph g;
  Node *x, *y, *out;
  Fixture() {
    x = g.add_node(OpId::Placeholder, "x", {}, Attrs(), {{DType::kFloat32, Shape{4, 3}}});
    y = g.add_node(OpId::Placeholder, "y", {}, Attrs(), {{DType::kFloat32, Shape{3}}});
    g.inputs = {x, y};
    Node* m = g.add_node(OpId::Mul, "Mul", {{x, 0}, {y, 0}}, Attrs(), {{DType::kFloat32, Shape{4, 3}}});
    out = g.add_node(OpId::Tanh, "Tanh", {{m, 0}}, Attrs(), {{DType::kFloat32, Shape{4, 3}}});
    g.outputs = {{out, 0}};
  }
};

TEST(Codegen, LowerCompileRunBroadcastChain) {
  setenv("JITFLOW_CACHE_DIR", "off", 1);
  Fixture f;
  std::string why;
  auto p = lower_cluster(f.g, {f.g.find("Mul"), f.out}, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->inputs.size(), 2u);
  EXPECT_EQ(p->steps.size(), 1u);  // Mul and Tanh fuse into one loop
  CompiledCluster cc;
  cc.program = std::move(p);
  cc.kernels = compile_cpu(*cc.program, "test_chain");
  Tensor a = Tensor::empty(DType::kFloat32, Shape{4, 3}), b = Tensor::empty(DType::kFloat32, Shape{3});
  for (int i = 0; i < 12; ++i) a.data<float>()[i] = 0.1f * i - 0.5f;
  for (int i = 0; i < 3; ++i) b.data<float>()[i] = 1.0f + i;
  auto r = cc.run({a, b});
  ASSERT_EQ(r.size(), 1u);
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR(r[0].data<float>()[i], std::tanh((0.1 * i - 0.5) * (1.0 + i % 3)), 1e-6);
  // The same kernel serves another batch size: only params change.
  Tensor a2 = Tensor::empty(DType::kFloat32, Shape{7, 3});
  for (int i = 0; i < 21; ++i) a2.data<float>()[i] = 0.05f * i;
  auto r2 = cc.run({a2, b});
  EXPECT_EQ(r2[0].shape(), (Shape{7, 3}));
  EXPECT_NEAR(r2[0].data<float>()[20], std::tanh(0.05 * 20 * 3.0), 1e-6);
}

// Named nodes on [rows, cols] float32 values for the loop-structure tests below.
struct Builder {
  Graph g;
  Shape shape;
  explicit Builder(Shape s) : shape(std::move(s)) {}
  TensorSpec spec(Shape s = {}) { return {DType::kFloat32, s.rank() ? s : shape}; }
  Node* input(const std::string& name) {
    Node* n = g.add_node(OpId::Placeholder, name, {}, Attrs(), {spec()});
    g.inputs.push_back(n);
    return n;
  }
  Node* scalar(const std::string& name, float v) {
    Attrs a;
    Tensor t = Tensor::scalar(DType::kFloat32, v);
    a.set("value", t);
    return g.add_node(OpId::Const, name, {}, a, {TensorSpec{DType::kFloat32, Shape{}}});
  }
  Node* op(OpId id, const std::string& name, std::vector<Node*> ins, TensorSpec out) {
    std::vector<Output> o;
    for (Node* n : ins) o.push_back({n, 0});
    return g.add_node(id, name, o, Attrs(), {out});
  }
  Node* op(OpId id, const std::string& name, std::vector<Node*> ins) { return op(id, name, ins, spec()); }
  std::vector<Node*> members() {
    std::vector<Node*> m;
    for (const auto& n : g.nodes())
      if (n->op != OpId::Placeholder) m.push_back(n.get());
    return m;
  }
};

Tensor filled(Shape s, float (*f)(int)) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = f(static_cast<int>(i));
  return t;
}

// An optimizer-style update: m2 and v2 read g; p2 reads m2 and v2 at its own index. One
// loop computes all three, the later ones taking the earlier from registers.
TEST(Codegen, SiblingLoopsFuseAnOptimizerUpdate) {
  setenv("JITFLOW_CACHE_DIR", "off", 1);
  Builder b(Shape{5, 7});
  Node *g = b.input("g"), *m = b.input("m"), *v = b.input("v"), *p = b.input("p");
  Node* c = b.scalar("c", 0.25f);
  Node* m2 = b.op(OpId::AddV2, "m2", {m, b.op(OpId::Mul, "dm", {b.op(OpId::Sub, "gm", {g, m}), c})});
  Node* v2 = b.op(OpId::AddV2, "v2", {v, b.op(OpId::Mul, "gg", {g, g})});
  Node* step = b.op(OpId::RealDiv, "step", {m2, b.op(OpId::Sqrt, "sq", {v2})});
  Node* p2 = b.op(OpId::Sub, "p2", {p, step});
  b.g.outputs = {{m2, 0}, {v2, 0}, {p2, 0}};
  std::string why;
  auto prog = lower_cluster(b.g, b.members(), &why);
  ASSERT_TRUE(prog) << why;
  ASSERT_EQ(prog->steps.size(), 1u);
  EXPECT_EQ(prog->steps[0].siblings.size(), 2u);
  CompiledCluster cc;
  cc.program = std::move(prog);
  cc.kernels = compile_cpu(*cc.program, "test_siblings");
  Tensor tg = filled({5, 7}, [](int i) { return 0.1f * i - 1.0f; });
  Tensor tm = filled({5, 7}, [](int i) { return 0.02f * i; });
  Tensor tv = filled({5, 7}, [](int i) { return 1.0f + 0.01f * i; });
  Tensor tp = filled({5, 7}, [](int i) { return 3.0f - 0.05f * i; });
  auto r = cc.run({tg, tm, tv, tp});
  ASSERT_EQ(r.size(), 3u);
  for (int i = 0; i < 35; ++i) {
    double gi = 0.1 * i - 1.0, mi = 0.02 * i, vi = 1.0 + 0.01 * i, pi = 3.0 - 0.05 * i;
    double em = mi + (gi - mi) * 0.25, ev = vi + gi * gi;
    EXPECT_NEAR(r[0].data<float>()[i], em, 1e-5);
    EXPECT_NEAR(r[1].data<float>()[i], ev, 1e-5);
    EXPECT_NEAR(r[2].data<float>()[i], pi - em / std::sqrt(ev), 1e-5);
  }
}

// b reads a through a transpose: element (i, j) of b needs a(j, i), which one loop over
// b's elements would not have computed yet. They stay two loops.
TEST(Codegen, SiblingLoopsDoNotFuseAcrossATranspose) {
  Builder b(Shape{4, 4});
  Node* x = b.input("x");
  Node* a = b.op(OpId::Exp, "a", {x});
  Attrs perm;
  Tensor pv = Tensor::from_int64s({1, 0}, DType::kInt32);
  perm.set("value", pv);
  Node* pn = b.g.add_node(OpId::Const, "perm", {}, perm, {TensorSpec{DType::kInt32, Shape{2}}});
  Node* at = b.op(OpId::Transpose, "at", {a, pn});
  Node* s = b.op(OpId::AddV2, "s", {a, at});
  b.g.outputs = {{a, 0}, {s, 0}};
  std::string why;
  auto prog = lower_cluster(b.g, b.members(), &why);
  ASSERT_TRUE(prog) << why;
  int loops = 0;
  for (const Step& st : prog->steps) {
    loops += st.kind == Step::kLoop;
    EXPECT_TRUE(st.siblings.empty());
  }
  EXPECT_EQ(loops, 2);
}

// Values of different shapes never share a loop.
TEST(Codegen, SiblingLoopsNeedTheSameShape) {
  Builder b(Shape{3, 8});
  Node* x = b.input("x");
  Node* y = b.g.add_node(OpId::Placeholder, "y", {}, Attrs(), {b.spec(Shape{8})});
  b.g.inputs.push_back(y);
  Node* ex = b.op(OpId::Exp, "ex", {x});
  Node* ey = b.op(OpId::Exp, "ey", {y}, b.spec(Shape{8}));
  b.g.outputs = {{ex, 0}, {ey, 0}};
  std::string why;
  auto prog = lower_cluster(b.g, b.members(), &why);
  ASSERT_TRUE(prog) << why;
  EXPECT_EQ(prog->steps.size(), 2u);
}

// A reduction over the outer dim (a bias gradient) runs as rows of accumulators; ranges
// that start and end mid-row (as a thread's part does) give the same sums.
TEST(Codegen, ColumnReductionOverPartialRows) {
  setenv("JITFLOW_CACHE_DIR", "off", 1);
  Builder b(Shape{6, 5});
  Node* x = b.input("x");
  Attrs axes;
  axes.set("value", Tensor::from_int64s({0}, DType::kInt32));
  Node* ax = b.g.add_node(OpId::Const, "axes", {}, axes, {TensorSpec{DType::kInt32, Shape{1}}});
  Node* sq = b.op(OpId::Square, "sq", {x});
  Node* sum = b.op(OpId::Sum, "sum", {sq, ax}, b.spec(Shape{5}));
  b.g.outputs = {{sum, 0}};
  std::string why;
  auto prog = lower_cluster(b.g, b.members(), &why);
  ASSERT_TRUE(prog) << why;
  ASSERT_EQ(prog->steps.size(), 1u);
  CompiledCluster cc;
  cc.program = std::move(prog);
  cc.kernels = compile_cpu(*cc.program, "test_colsum");
  Tensor tx = filled({6, 5}, [](int i) { return 0.5f * i - 4.0f; });
  auto want = [](int j) {
    double s = 0;
    for (int r = 0; r < 6; ++r) s += (0.5 * (r * 5 + j) - 4.0) * (0.5 * (r * 5 + j) - 4.0);
    return s;
  };
  auto r = cc.run({tx});
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(r[0].data<float>()[j], want(j), 1e-4);
  // The step function itself on [1, 3) then [3, 5): parts that split the output row.
  const ClusterProgram& p = *cc.program;
  Tensor out = Tensor::empty(DType::kFloat32, Shape{5});
  std::vector<char*> bufs(p.num_buffers, nullptr);
  bufs[0] = static_cast<char*>(tx.raw());
  bufs[p.steps[0].root->buffer] = static_cast<char*>(out.raw());
  std::vector<int64_t> params = static_params(p);
  for (int j = 0; j < 5; ++j) out.data<float>()[j] = -1;
  cc.kernels.fns[0](bufs.data(), params.data(), 1, 3);
  cc.kernels.fns[0](bufs.data(), params.data(), 3, 5);
  EXPECT_EQ(out.data<float>()[0], -1);  // outside both ranges: untouched
  for (int j = 1; j < 5; ++j) EXPECT_NEAR(out.data<float>()[j], want(j), 1e-4);
}

TEST(Codegen, NoEmitterIsReported) {
  Graph g;
  Node* x = g.add_node(OpId::Placeholder, "x", {}, Attrs(), {{DType::kFloat32, Shape{3}}});
  Node* am = g.add_node(OpId::ArgMax, "ArgMax", {{x, 0}, {x, 0}}, Attrs(), {{DType::kInt64, Shape{}}});
  std::string why;
  EXPECT_FALSE(can_emit(*am, &why));
  EXPECT_NE(why.find("ArgMax"), std::string::npos);
}

TEST(Codegen, PtxHasGridStrideKernels) {
  Fixture f;
  std::string why;
  auto p = lower_cluster(f.g, {f.g.find("Mul"), f.out}, &why);
  ASSERT_TRUE(p) << why;
  PtxModule m = emit_ptx(*p, "test_chain", "sm_80");
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_NE(m.ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(m.ptx.find(".entry " + m.kernels[0]), std::string::npos);
  EXPECT_NE(m.ptx.find("%nctaid.x"), std::string::npos);
}

}  // namespace
}  // namespace jf
