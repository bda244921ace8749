// Codegen: a cluster lowered to kernel IR, compiled by the CPU JIT and run; PTX emission.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "codegen/kernel_ir.h"
#include "codegen/nvptx/nvptx_compiler.h"
#include "runtime/cluster_runner.h"

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
