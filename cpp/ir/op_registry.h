// The op registry: one entry per op type (from ops.def) naming its shape inference, eager
// kernel and properties. Later stages (gradients, JIT emitters) hang their tables off the
// same op ids.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/attrs.h"

namespace jf {

enum class OpId : int {
#define JF_OP(NAME, NIN, INFER, KERNEL, FLAGS) NAME,
#include "ir/ops.def"
#undef JF_OP
  kNumOps
};

enum OpFlags : unsigned {
  kNone = 0,
  kStateful = 1,  // random, variables, print: never folded, deduplicated or compiled
  kNoKernel = 2,  // graph-only ops (Placeholder) executed by the runtime itself
};

struct TensorSpec {
  DType dtype = DType::kInvalid;
  Shape shape;
};

struct OpDef;

// What shape inference and kernels see: the op, its inputs (eager values, or symbolic
// tensors that carry only dtype and shape), its attrs and the inferred output specs.
struct OpCall {
  const OpDef* def;
  const std::vector<Tensor>& in;
  const Attrs& attrs;
  std::vector<TensorSpec> out;                         // filled by shape inference
  const std::vector<TensorSpec>* fixed_out = nullptr;  // precomputed specs (static plans)
  // Per output, a buffer kept from an earlier run of this node (Tensor::empty_reusing).
  BufferPtr* recycle = nullptr;
  std::vector<Tensor> results;  // filled by the kernel

  OpCall(const OpDef* d, const std::vector<Tensor>& i, const Attrs& a) : def(d), in(i), attrs(a) {}
  // The value of input i if it is known at this point (always in eager mode).
  bool has_value(size_t i) const { return i < in.size() && in[i].buffer() != nullptr; }
  const char* name() const;
  // Throws InvalidArgumentError "<Op>: <msg> (inputs: float32[2,3], int32[])".
  template <class... A>
  [[noreturn]] void fail(const A&... a) const;
  template <class... A>
  [[noreturn]] void fail_type(const A&... a) const;
  std::string input_desc() const;
  void add_output(DType d, const Shape& s) { out.push_back({d, s}); }
  const TensorSpec& spec(size_t i) const { return fixed_out ? (*fixed_out)[i] : out[i]; }
  size_t num_outputs() const { return fixed_out ? fixed_out->size() : out.size(); }
  // Allocates output i per its inferred spec.
  Tensor& alloc(size_t i);
};

using InferFn = void (*)(OpCall&);
using KernelFn = void (*)(OpCall&);

struct OpDef {
  OpId id;
  const char* name;  // TensorFlow op type name
  int num_inputs;    // -1: variadic
  InferFn infer;
  KernelFn kernel;
  unsigned flags;
};

const OpDef& op_def(OpId id);
const OpDef* find_op(const std::string& name);  // nullptr when unknown
int num_ops();

template <class... A>
void OpCall::fail(const A&... a) const {
  throw_invalid(name(), ": ", str_cat(a...), " (inputs: ", input_desc(), ")");
}
template <class... A>
void OpCall::fail_type(const A&... a) const {
  throw_type(name(), ": ", str_cat(a...), " (inputs: ", input_desc(), ")");
}

// Shape inference then kernel, for eager execution and constant folding.
std::vector<Tensor> run_kernel(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs);
// Shape inference only (tracing).
std::vector<TensorSpec> infer_specs(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs);

}  // namespace jf
