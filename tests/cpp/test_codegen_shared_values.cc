// Codegen: a value with several consumers in one fused loop is generated once per element,
// so a cluster's IR (and its compile time) grows linearly with its depth.
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdlib>

#include "codegen/cpu/cpu_compiler.h"
#include "codegen/cpu/cpu_loops.h"
#include "codegen/kernel_ir.h"
#include "runtime/cluster_runner.h"

namespace jf {
namespace {

// x = x * x + x, `depth` times: each step reads the previous value three times, so a tree
// walk over the expression generates 3^depth instructions per element. The program points
// into the graph: both are kept.
struct Squares {
  Graph g;
  std::unique_ptr<ClusterProgram> p;
};

std::unique_ptr<Squares> squares(int depth) {
  auto s = std::make_unique<Squares>();
  Graph& g = s->g;
  const TensorSpec spec{DType::kFloat32, Shape{64}};
  Node* x = g.add_node(OpId::Placeholder, "x", {}, Attrs(), {spec});
  g.inputs = {x};
  std::vector<Node*> members;
  for (int i = 0; i < depth; ++i) {
    std::string k = std::to_string(i);
    Node* m = g.add_node(OpId::Mul, "mul" + k, {{x, 0}, {x, 0}}, Attrs(), {spec});
    x = g.add_node(OpId::AddV2, "add" + k, {{m, 0}, {x, 0}}, Attrs(), {spec});
    members.push_back(m);
    members.push_back(x);
  }
  g.outputs = {{x, 0}};
  std::string why;
  s->p = lower_cluster(g, members, &why);
  EXPECT_TRUE(s->p) << why;
  return s;
}

size_t instructions(const ClusterProgram& p) {
  llvm::LLVMContext ctx;
  llvm::Module m("shared_values", ctx);
  for (size_t i = 0; i < p.steps.size(); ++i)
    emit_loop_step(m, p.steps[i], "step" + std::to_string(i), -1, false);
  size_t n = 0;
  for (const llvm::Function& f : m)
    for (const llvm::BasicBlock& bb : f) n += bb.size();
  return n;
}

TEST(CodegenSharedValues, IrGrowsLinearlyWithDepth) {
  // Small depths, so a tree walk fails here quickly (3^12 instructions) instead of hanging.
  auto s6 = squares(6), s9 = squares(9), s12 = squares(12), s40 = squares(40);
  ASSERT_TRUE(s6->p && s9->p && s12->p && s40->p);
  ASSERT_EQ(s40->p->steps.size(), 1u);  // one fused loop: nothing was materialized to cut the tree
  const size_t n6 = instructions(*s6->p), n9 = instructions(*s9->p), n12 = instructions(*s12->p);
  // Two instructions per step (the mul and the add) plus the same loop around them.
  ASSERT_EQ(n9 - n6, 6u) << n6 << " " << n9;
  ASSERT_EQ(n12 - n9, 6u) << n9 << " " << n12;
  EXPECT_EQ(instructions(*s40->p) - n12, 56u);
}

TEST(CodegenSharedValues, DeepSharedClusterComputesTheRightValues) {
  setenv("JITFLOW_CACHE_DIR", "off", 1);
  auto s = squares(1000);  // 2,000 ops in one loop
  ASSERT_TRUE(s->p);
  CompiledCluster cc;
  cc.program = std::move(s->p);
  cc.kernels = compile_cpu(*cc.program, "test_shared_values");
  Tensor t = Tensor::empty(DType::kFloat32, Shape{64});
  for (int i = 0; i < 64; ++i) t.data<float>()[i] = 1e-6f * i;
  auto r = cc.run({t});
  ASSERT_EQ(r.size(), 1u);
  for (int i = 0; i < 64; ++i) {
    double v = static_cast<double>(1e-6f * i);
    for (int k = 0; k < 1000; ++k) v = v * v + v;
    EXPECT_NEAR(r[0].data<float>()[i], v, 1e-4 * v + 1e-12) << i;
  }
}

}  // namespace
}  // namespace jf
