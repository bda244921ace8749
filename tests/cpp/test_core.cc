// Core pieces: shapes and broadcasting, the caching allocator, the op registry, kernels.
#include <gtest/gtest.h>

#include "core/broadcast.h"
#include "core/tensor.h"
#include "ir/op_registry.h"

namespace jf {
namespace {

TEST(Shape, BroadcastRules) {
  Shape out;
  ASSERT_TRUE(broadcast_shapes(Shape{2, 1, 3}, Shape{4, 1}, &out));
  EXPECT_EQ(out, (Shape{2, 4, 3}));
  EXPECT_FALSE(broadcast_shapes(Shape{2, 3}, Shape{4}, &out));
  ASSERT_TRUE(broadcast_shapes(Shape{}, Shape{5}, &out));
  EXPECT_EQ(out, (Shape{5}));
  ASSERT_TRUE(broadcast_shapes(Shape{0, 1}, Shape{1, 7}, &out));
  EXPECT_EQ(out, (Shape{0, 7}));
  ASSERT_TRUE(broadcast_shapes(Shape{-1, 3}, Shape{1, 3}, &out));
  EXPECT_EQ(out.str(), "[?,3]");
}

TEST(Shape, RankLimitIsAnError) {
  Shape s;
  for (int i = 0; i < kMaxRank; ++i) s.push_back(1);
  EXPECT_THROW(s.push_back(1), Error);
}

TEST(Broadcast, CollapsesContiguousDims) {
  BroadcastPlan p = make_broadcast(Shape{2, 3, 4}, {Shape{2, 3, 4}, Shape{2, 3, 4}});
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.dims[0], 24);
  BroadcastPlan q = make_broadcast(Shape{2, 3, 4}, {Shape{2, 3, 4}, Shape{4}});
  EXPECT_EQ(q.rank, 2);
  EXPECT_EQ(q.strides[1][0], 0);
  EXPECT_EQ(q.strides[1][1], 1);
}

TEST(Allocator, ReusesFreedBlocks) {
  void* first;
  {
    BufferPtr b = allocate_buffer(1000);
    first = b->data;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  AllocatorStats before = allocator_stats();
  BufferPtr c = allocate_buffer(900);  // same size class
  EXPECT_EQ(c->data, first);
  EXPECT_EQ(allocator_stats().cache_hits, before.cache_hits + 1);
}

TEST(Registry, NamesAreTensorFlows) {
  ASSERT_NE(find_op("AddV2"), nullptr);
  EXPECT_EQ(find_op("AddV2")->id, OpId::AddV2);
  EXPECT_STREQ(op_def(OpId::MatMul).name, "MatMul");
  EXPECT_EQ(find_op("NoSuchOp"), nullptr);
  EXPECT_TRUE(op_def(OpId::RandomUniform).flags & kStateful);
}

// The record's types column is the one dtype table: shape inference refuses the others with
// the TypeError texts the shape functions have always raised (the Python tests compare them).
std::string refusal(OpId op, std::vector<Tensor> in) {
  try {
    infer_specs(op_def(op), in, Attrs());
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
    return e.what();
  }
  return "<accepted>";
}

TEST(Registry, ShapeInferenceRefusesTheDtypesTheRecordDoesNotClaim) {
  auto t = [](DType d) { return Tensor::empty(d, Shape{2}); };
  const Tensor f = t(DType::kFloat32), i = t(DType::kInt32), b = t(DType::kBool);
  auto starts = [](const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; };
  EXPECT_PRED2(
      starts, refusal(OpId::Exp, {i}),
      "Exp: expected a float32, float64, float16, bfloat16, complex64 or complex128 input, got int32");
  EXPECT_PRED2(starts, refusal(OpId::Neg, {b}),
               "Neg: expected a float32, float64, int32, int64, float16, bfloat16, int8, int16, complex64 or "
               "complex128 input, got bool");
  EXPECT_PRED2(
      starts, refusal(OpId::Invert, {f}),
      "Invert: expected an int32, int64, int8, uint8, int16, uint16, uint32 or uint64 input, got float32");
  EXPECT_PRED2(starts, refusal(OpId::LogicalNot, {f}), "LogicalNot: expected a bool input, got float32");
  EXPECT_PRED2(starts, refusal(OpId::IsNan, {i}),
               "IsNan: expected a float32, float64, float16 or bfloat16 input, got int32");
  EXPECT_PRED2(
      starts, refusal(OpId::BitwiseAnd, {f, f}),
      "BitwiseAnd: expected int32, int64, int8, uint8, int16, uint16, uint32 or uint64 inputs, got float32");
  EXPECT_PRED2(
      starts, refusal(OpId::RealDiv, {i, i}),
      "RealDiv: expected float32, float64, float16, bfloat16, complex64 or complex128 inputs, got int32");
  EXPECT_PRED2(starts, refusal(OpId::Less, {b, b}),
               "Less: expected float32, float64, int32, int64, float16, bfloat16, int8, uint8, int16, "
               "uint16, uint32 or "
               "uint64 inputs, got bool");
  EXPECT_PRED2(starts, refusal(OpId::Sum, {b, Tensor::from_int64s({0})}),
               "Sum: expected a float32, float64, int32, int64, float16, bfloat16, int8, uint8, int16, "
               "uint16, uint32, uint64, complex64 or complex128 input, got bool");
  EXPECT_EQ(refusal(OpId::Equal, {b, b}), "<accepted>");
  EXPECT_EQ(type_set_text(kNumericTypes), "numeric");
  EXPECT_EQ(type_set_text(kIntTypes | kBoolTypes), "int32, int64 or bool");
}

// Op facts are record flags, each consistent with the rest of its record (op_registry.cc
// checks that at build time); the stages read them instead of lists of op ids.
TEST(Registry, FlagsSayWhichOpsTouchResourcesRandomStreamsAndSubgraphs) {
  for (OpId op :
       {OpId::ReadVariableOp, OpId::AssignAddVariableOp, OpId::RngReadAndSkip, OpId::TensorArrayWrite})
    EXPECT_TRUE(op_def(op).flags & kResourceAccess) << op_def(op).name;
  for (OpId op : {OpId::RandomUniform, OpId::RandomStandardNormal, OpId::RandomPhiloxState})
    EXPECT_TRUE(op_def(op).flags & kRandomStream) << op_def(op).name;
  EXPECT_FALSE(op_def(OpId::StatelessRandomUniformV2).flags & kRandomStream);  // its state is an input
  EXPECT_TRUE(op_def(OpId::While).flags & kControlFlow);
  EXPECT_FALSE(op_def(OpId::XlaLaunch).flags & kControlFlow);
  EXPECT_EQ(op_types(OpId::Exp), kFloatTypes | kHalfTypes | kComplexTypes);
}

Tensor vec(std::vector<float> v, Shape s) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

TEST(Kernels, BroadcastAdd) {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3}), b = vec({10, 20, 30}, Shape{3});
  auto out = run_kernel(op_def(OpId::AddV2), {a, b}, Attrs());
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_FLOAT_EQ(out[0].data<float>()[4], 25.f);
}

TEST(Kernels, ShapeErrorsNameTheOp) {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3}), b = vec({1, 2}, Shape{2});
  try {
    run_kernel(op_def(OpId::AddV2), {a, b}, Attrs());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("AddV2: Incompatible shapes: [2,3] vs. [2]"), std::string::npos);
  }
}

TEST(Kernels, ReduceColumns) {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto out = run_kernel(op_def(OpId::Sum), {a, Tensor::from_int64s({0})}, Attrs());
  ASSERT_EQ(out[0].shape(), (Shape{3}));
  EXPECT_FLOAT_EQ(out[0].data<float>()[2], 9.f);
}

}  // namespace
}  // namespace jf
