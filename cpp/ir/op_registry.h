// The op registry: one record per op type (from ops.def) naming everything the stages need
// of it: shape inference, the eager kernel and the dtypes it claims, how a compiled cluster
// computes it (or why it never is), its shape inputs, cost class, math-library name,
// gradient status and public Python names. Every stage dispatches from this record.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/attrs.h"

namespace jf {

enum class OpId : int {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, JIT, COST, MATH, GRAD, PY, FLAGS) NAME,
#include "ir/ops.def"
#undef JF_OP
  kNumOps
};

enum OpFlags : unsigned {
  kNone = 0,
  kStateful = 1,  // random, variables, print: never folded, deduplicated or compiled
  kNoKernel = 2,  // graph-only ops (Placeholder, control flow) executed by the runtime itself
  kCheck = 4,     // a run-time check (CheckNumerics): compiles, but never folded and kept unconsumed
  // Reads or writes a resource (a variable, a Generator's state, a TensorArray buffer). It
  // runs on the executor around compiled clusters, as XLA passes resources in and out of a
  // computation, so jit_compile=True compiles the function without it.
  kResourceAccess = 8,
  // Draws from a random stream of its own: tracing gives each such node a _stream_id, so
  // two functions with the same seeds draw the same numbers (TF's per-kernel state).
  kRandomStream = 16,
  // Runs subgraphs (If's branches, While's cond and body) on the executor; clustering leaves
  // the node itself eager and clusters its subgraphs on their own.
  kControlFlow = 32,
};

// Sets of dtypes, one bit per DType.
using TypeSet = unsigned;
constexpr TypeSet type_bit(DType d) { return 1u << static_cast<unsigned>(d); }
constexpr TypeSet kNoTypes = 0;
constexpr TypeSet kFloatTypes = type_bit(DType::kFloat32) | type_bit(DType::kFloat64);
constexpr TypeSet kIntTypes = type_bit(DType::kInt32) | type_bit(DType::kInt64);
constexpr TypeSet kNumericTypes = kFloatTypes | kIntTypes;
constexpr TypeSet kBoolTypes = type_bit(DType::kBool);
constexpr TypeSet kAllTypes = kNumericTypes | kBoolTypes;
// Strings are claimed only by graph plumbing, comparisons and the string ops; kAllTypes
// leaves them out, so every other op refuses them (check_strings in op_registry.cc).
constexpr TypeSet kStringTypes = type_bit(DType::kString);
#define NO_STRINGS_IN_XLA "XLA has no string type: string values stay on the executor"
// The dtypes added after the original five: claimed by the ops whose eager kernels take them.
// Compiled code covers the half types (computed in float32, rounded on store: half_float.cc)
// and none of the others yet, so a record claiming one says why with NEW_DTYPES_EAGER.
constexpr TypeSet kHalfTypes = type_bit(DType::kFloat16) | type_bit(DType::kBFloat16);
constexpr TypeSet kSmallSignedTypes = type_bit(DType::kInt8) | type_bit(DType::kInt16);
constexpr TypeSet kUnsignedTypes =
    type_bit(DType::kUInt8) | type_bit(DType::kUInt16) | type_bit(DType::kUInt32) | type_bit(DType::kUInt64);
constexpr TypeSet kComplexTypes = type_bit(DType::kComplex64) | type_bit(DType::kComplex128);
// TF's real number types (TF_CALL_REAL_NUMBER_TYPES) and every numeric dtype.
constexpr TypeSet kRealTypes = kNumericTypes | kHalfTypes | kSmallSignedTypes | kUnsignedTypes;
constexpr TypeSet kEveryNumericType = kRealTypes | kComplexTypes;
constexpr TypeSet kEveryType = kEveryNumericType | kBoolTypes;
#define NEW_DTYPES_EAGER "8/16-bit, unsigned and complex values run eagerly: no emitter for them yet"
inline bool has_type(TypeSet s, DType d) { return d != DType::kInvalid && (s & type_bit(d)) != 0; }
// The types column at compile time, for kernels that instantiate one loop per dtype their
// record claims (kernels/dispatch.h): op_types(OpId::Exp) is kFloatTypes.
inline constexpr TypeSet kOpTypes[] = {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, JIT, COST, MATH, GRAD, PY, FLAGS) TYPES,
#include "ir/ops.def"
#undef JF_OP
};
constexpr TypeSet op_types(OpId id) { return kOpTypes[static_cast<int>(id)]; }
// A set in the words of the shape functions' errors: "numeric", "float32 or float64",
// "int32 or int64", "bool", else the dtype names ("int32, int64 or bool").
std::string type_set_text(TypeSet s);

// Which inputs carry shapes or axes rather than data: bit i for input i; kLastInput for the
// last input of a variadic op (ConcatV2's axis).
constexpr unsigned kLastInput = 1u << 31;
constexpr unsigned shape_inputs() { return 0; }
template <class... I>
constexpr unsigned shape_inputs(int i, I... rest) {
  return (1u << i) | shape_inputs(rest...);
}

// How a compiled cluster computes the op. Unary and Binary ops have an elemental formula
// (codegen/formulas_*.cc); Math ops call the record's math function (an LLVM intrinsic where
// LLVM has one, else libm / libmvec on the CPU and libdevice on NVPTX); Library ops run as a
// library step between fused loops; Eager ops never compile (the JIT column says why), and
// Graph ops are run by the executor itself.
enum class LowerKind {
  kConst,      // a constant buffer or immediate
  kView,       // same elements, new dims (Identity, Reshape, Squeeze, ExpandDims)
  kUnary,      // elementwise, one operand, a formula
  kBinary,     // elementwise, two broadcast operands, a formula
  kMath,       // elementwise, a call to the math function named by the record
  kCast,       // elementwise dtype conversion
  kSelect,     // cond ? a : b
  kAddN,       // a chain of AddV2
  kBroadcast,  // the one data input broadcast to the output shape (BroadcastTo, Fill)
  kFillLike,   // 0 or 1 in the shape of the input (ZerosLike, OnesLike)
  kTranspose,  // index permutation by a constant perm
  kReduce,     // a reduction root; its identity and combine come from a ReduceFormula
  kSlice,      // StridedSlice with constant bounds
  kSplit,      // Split / SplitV: one slice per output along a constant axis
  kConcat,     // ConcatV2 along a constant axis
  kStack,      // Pack: concat of values given a new unit axis
  kShape,      // the operand's dims (from the run-time parameters)
  kGather,     // params at an index read from the indices (GatherV2); out of range: an error
  kGatherNd,   // params at an index vector read from the indices' last dim (GatherNd); checked
  kOneHot,     // on/off by comparing the index with the output position
  kIndexMap,   // each dim reads its input dim at a mapped index (reverse, tile, pads, roll)
  kArgReduce,  // the index of the first largest (smallest) element along a constant axis
  kRandom,     // a counter-based sample: a function of a Philox state and the element's index
  kLibrary,    // a library step (GEMM, row softmax) on the eager kernel or cuBLAS
  kEager,      // never compiled
  kGraph,      // control flow and graph plumbing, run by the executor
};

// The input dtypes the compiled form covers; ops whose eager kernel claims more say why
// the rest stays eager. Eager and Graph ops cover none and always say why.
struct JitRule {
  TypeSet types;
  const char* reason;
};
constexpr JitRule jit(TypeSet t, const char* why_not_others = nullptr) { return {t, why_not_others}; }
constexpr JitRule eager_only(const char* why) { return {kNoTypes, why}; }

// Cost class, for codegen's recompute-or-materialize decision and the explain output.
enum class Cost { kCheap, kTranscendental, kExpensive };

// Gradient status: a gradient function is registered for the op type (autodiff/grads_*.py;
// the op-coverage test checks it), or the op is not differentiable, with TF's reason.
struct GradRule {
  bool registered;
  const char* reason;
};
constexpr GradRule kGrad{true, nullptr};
constexpr GradRule no_grad(const char* why) { return {false, why}; }

// The public Python names that reach the op (space-separated, relative to `jitflow`:
// "exp math.exp"), or why none does.
struct PyNames {
  const char* names;
  const char* reason;
};
constexpr PyNames py(const char* names) { return {names, nullptr}; }
constexpr PyNames internal(const char* why) { return {"", why}; }

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
  // When tracing: per input, the partly known value of a symbolic shape input (unknown
  // elements -1; ir/partial_shape.h), so zeros([batch, 2]) knows its 2 columns.
  const std::vector<std::optional<std::vector<int64_t>>>* partial = nullptr;

  OpCall(const OpDef* d, const std::vector<Tensor>& i, const Attrs& a) : def(d), in(i), attrs(a) {}
  // The value of input i if it is known at this point (always in eager mode).
  bool has_value(size_t i) const { return i < in.size() && in[i].buffer() != nullptr; }
  // The partly known value of shape input i (see `partial`), or nullptr.
  const std::vector<int64_t>* partial_value(size_t i) const {
    return partial && i < partial->size() && (*partial)[i] ? &*(*partial)[i] : nullptr;
  }
  const char* name() const;
  // Throws InvalidArgumentError "<Op>: <msg> (inputs: float32[2,3], int32[])".
  template <class... A>
  [[noreturn]] void fail(const A&... a) const;
  template <class... A>
  [[noreturn]] void fail_type(const A&... a) const;
  std::string input_desc() const;
  // The record's types column is the one table of the dtypes an op takes for its main operand
  // (ops.def): shape functions ask it here instead of listing dtypes of their own.
  bool claims(DType d) const;
  // TypeError unless input i's dtype is one the record claims, in the words shape inference
  // has always used: "expected a float32 or float64 input, got int32"; with `shared`, for
  // operands that must all have that dtype, "expected numeric inputs, got bool".
  void check_claimed(size_t i, bool shared = false) const;
  // Every shape function reports its outputs here: a shape whose known dims multiply past
  // 2**63 - 1 elements is rejected once, for all ops (TF's TensorShape check).
  void add_output(DType d, const Shape& s) {
    check_num_elements(s);
    out.push_back({d, s});
  }
  void check_num_elements(const Shape& s) const;
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
  KernelFn kernel;        // k_<Name> (kernels/); graph ops' kernel raises
  TypeSet types;          // dtypes of the main operand the eager kernel takes (see ops.def)
  unsigned shape_inputs;  // see shape_inputs()
  LowerKind lower;
  JitRule jit;
  Cost cost;
  const char* math;  // libm base name ("erf": erff / erf, libdevice __nv_erff / __nv_erf), or ""
  GradRule grad;
  PyNames py;
  unsigned flags;

  bool is_shape_input(size_t i, size_t n) const {
    return ((shape_inputs & kLastInput) && i + 1 == n) || (i < 31 && (shape_inputs >> i) & 1u);
  }
  // The input whose dtype decides the kernel and emitter: the first that is not a shape
  // input (-1: none, the output's dtype decides).
  int main_input(size_t n) const {
    for (size_t i = 0; i < n; ++i)
      if (!is_shape_input(i, n)) return static_cast<int>(i);
    return -1;
  }
};

inline bool OpCall::claims(DType d) const { return has_type(def->types, d); }

const OpDef& op_def(OpId id);

// Integer division, modulo and power check their divisor or exponent when compiled code runs
// them (formulas_elementwise.cc): code that computes a value it may discard must not hold them.
inline bool integer_form_checks(OpId op, DType operand) {
  const bool checked = op == OpId::FloorDiv || op == OpId::FloorMod || op == OpId::TruncateDiv ||
                       op == OpId::TruncateMod || op == OpId::Pow;
  return checked && is_integer_type(operand);
}
const OpDef* find_op(const std::string& name);  // nullptr when unknown
int num_ops();
const char* lower_kind_name(LowerKind k);
const char* cost_name(Cost c);

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
std::vector<TensorSpec> infer_specs(
    const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs,
    const std::vector<std::optional<std::vector<int64_t>>>* partial = nullptr);

}  // namespace jf
