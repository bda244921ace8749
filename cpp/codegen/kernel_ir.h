// Kernel IR: a cluster lowered to a backend-neutral program. Values are expressions
// (KExpr) whose dims live in a runtime parameter array, so one compiled kernel serves
// every size with the same rank and broadcast pattern. Steps are either loop kernels
// (an elemental expression evaluated over the output index space; a reduction root folds
// its operand's elements) or library calls (matmul on Eigen) between materialized buffers.
#pragma once
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace jf {

enum class KKind {
  kBuffer,     // reads a buffer (cluster input, constant or materialized value)
  kScalar,     // an immediate constant
  kUnary,      // op: Neg, Exp, ...
  kBinary,     // op: AddV2, Maximum, Less, ...
  kSelect,     // cond ? a : b
  kCast,       // to dtype
  kTranspose,  // perm
  kReshape,    // same elements, new dims (row-major)
  kSlice,      // per output dim: input dim, start/stride params; shrink and new-axis dims
  kConcat,     // along axis
  kShapeOf,    // element i is dim i of the operand (its values are never read)
  kGather,     // operands params, indices: params[..., indices[...], ...] along axes[0]
  kGatherNd,   // operands params, indices: params[indices[i..., :], j...] (GatherNd)
  kOneHot,     // operands indices, on, off (scalars): on where indices == the index on axes[0]
  kIndexMap,   // operand x (and a fill scalar for pads): each dim reads x at map_kind(i)
  kArgReduce,  // op ArgMax/ArgMin over axes[0]: the index of the first extreme (TF's NaN rule)
  kReduce,     // op: Sum, Max, Min, Prod over axes (a loop root)
  kRandom,     // op: a Philox sampler of operands (state[, minval, maxval]) at its linear index
};

// How a kIndexMap output dim reads its operand dim (n: the operand's size, p: map_param).
enum class DimMapKind : int {
  kSame,       // i
  kReverse,    // n - 1 - i
  kTile,       // i mod n
  kPad,        // i - p, the fill outside [0, n)
  kReflect,    // i - p mirrored at the edges without repeating them
  kSymmetric,  // i - p mirrored at the edges repeating them
  kRoll,       // (i - p) mod n
};

// The kinds computed element by element from operands at the same (broadcast) index.
inline bool is_elementwise(KKind k) {
  return k == KKind::kUnary || k == KKind::kBinary || k == KKind::kSelect || k == KKind::kCast;
}

struct KExpr {
  int id = 0;
  KKind kind;
  OpId op = OpId::Identity;
  const Node* node = nullptr;  // the graph node an elementwise expr computes (for check errors)
  DType dtype = DType::kFloat32;
  std::vector<int> dims;  // param slot per dim, or -1 for a dim that is statically 1
  std::vector<KExpr*> operands;
  int buffer = -1;         // kBuffer
  double scalar = 0;       // kScalar of a float or bool dtype
  int64_t iscalar = 0;     // kScalar of an integer dtype (exact: int64 does not fit a double)
  std::vector<int> perm;   // kTranspose
  std::vector<int> axes;   // kReduce (sorted operand axes); kConcat axis in axes[0]
  bool keep_dims = false;  // kReduce
  // kSlice: for each operand dim, slots of start and stride; out_of_in[d] = the output dim
  // that indexes operand dim d, or -1 when the operand dim is fixed at its start (shrink).
  std::vector<int> start_slot, stride_slot, out_of_in;
  int batch_dims = 0;              // kGather
  std::vector<int> map_kind;       // kIndexMap: a DimMapKind per dim
  std::vector<int64_t> map_param;  // kIndexMap: pad before / roll shift per dim
  bool materialized = false;       // computed by a step into `buffer`
  // Computed only when `guard`'s bool scalar equals guard_when (a node of an If branch
  // inlined with guards: cluster/if_to_select.h); null for every value computed each run.
  const KExpr* guard = nullptr;
  bool guard_when = true;
  // kUnary/kBinary: the node's float attrs, which a formula reads with float_attr
  // (LeakyRelu's alpha); in the fingerprint, so kernels differing in one never share code.
  std::vector<std::pair<std::string, double>> float_attrs;
  int rank() const { return static_cast<int>(dims.size()); }
};

// The float attr `name` of an elementwise expr's node, `dflt` (the op's TF default) if unset.
inline double float_attr(const KExpr* e, std::string_view name, double dflt) {
  for (const auto& kv : e->float_attrs)
    if (kv.first == name) return kv.second;
  return dflt;
}

// How the runtime fills one parameter slot before running the steps.
struct ParamFill {
  enum Kind { kInputDim, kNodeDim, kSliceStart, kSliceStride, kSplitStart } kind;
  int a = 0, b = 0, c = 0;  // input/node index, output index or dim, dim
};

// How a matrix product's operands are stored: A as [k, m], B as [n, k] (MatMul's attrs).
struct DotForm {
  bool transpose_a = false, transpose_b = false;
};

struct Step {
  enum Kind { kLoop, kLibrary, kRowGroup } kind;
  KExpr* root;               // kLoop: the value computed (written to root->buffer)
  Node* node = nullptr;      // kLibrary: the graph node, run on its Eigen kernel (matmul, softmax)
  std::vector<KExpr*> args;  // kLibrary operands (materialized)
  // kLoop: more roots of the same shape computed in the same loop after `root` (sibling
  // fusion); each reads earlier roots of the step only at its own index. kLibrary: the
  // node's outputs after the first, in order.
  std::vector<KExpr*> siblings;
  // kRowGroup (row-reduction fusion, fuse_rows.cc): loop steps run one after another on each
  // row of a block of rows, so the row stays in cache across its reductions and the
  // elementwise work around them. Every part reads what earlier parts computed only in the
  // same row. row_dims: the slots of the outer dims (-1: a static 1); width: the slot of the
  // row's length. row_local: full-row values no step outside the group reads, kept in a
  // one-row scratch buffer instead of their own. root is the first part's.
  std::vector<Step> parts;
  std::vector<int> row_dims;
  int width = -1;
  std::vector<const KExpr*> row_local;
  // A kLibrary TensorArrayWrite whose array (args[0]) nothing else in the cluster reads and
  // no output is: the runner may write the element into that buffer instead of a copy (an
  // earlier step's buffer in the same run, or a whole loop's carried array).
  bool in_place = false;
  // kLibrary MatMul on the GPU: the product's scale, cuBLAS's alpha (fold_gemm_scales).
  double alpha = 1;
  // kLibrary MatMul: its transposes, read once here rather than from the node's attrs on
  // every run of a small product (is_small_dot_step).
  DotForm dot;
  // A step of an If branch inlined with guards runs only when the bool scalar in buffer
  // `guard` equals guard_when (-1: every run). Skipped, its buffers keep whatever they held:
  // only the If's merge selects read them, and those pick the taken branch's.
  int guard = -1;
  bool guard_when = true;
};

// Whether step `s` runs, given the run's buffer pointers.
inline bool step_runs(const Step& s, char* const* ptrs) {
  return s.guard < 0 || (*reinterpret_cast<const bool*>(ptrs[s.guard]) == s.guard_when);
}

// The rows a kRowGroup step walks: the product of its row dims.
inline int64_t row_group_rows(const Step& s, const int64_t* params) {
  int64_t n = 1;
  for (int d : s.row_dims) n *= d < 0 ? 1 : params[d];
  return n;
}

// How many operand elements each output element of a loop step folds: the product of a
// reduction root's reduced dims (`params` fills the slots), 1 for other steps.
inline int64_t reduced_extent(const Step& s, const int64_t* params) {
  int64_t red = 1;
  if (s.root->kind != KKind::kReduce && s.root->kind != KKind::kArgReduce) return red;
  const KExpr* x = s.root->operands[0];
  for (int a : s.root->axes) red *= x->dims[a] < 0 ? 1 : params[x->dims[a]];
  return red;
}

// Integer tensors of at most this many elements are shape-like: the runner reads their values
// before the kernels run (a reshape target, slice bounds i and i + 1), and lowering lets a
// member computing one feed shape inputs.
constexpr int64_t kMaxShapeValueElements = 16;

// Run-time checks of compiled code (ElementalEmitter::fail_if): an element that fails stores
// status_code() into the status word, whose pointer follows the last buffer's; the runner
// raises the check's error after the steps (compiled code keeps eager's errors).
// CheckNumerics ORs its kinds in (fail_if_merge): NaN | Inf is kInfAndNaN, TF's third message.
enum class CheckKind : int {
  kDivisionByZero = 1,
  kNegativePower = 2,
  kIndexOutOfRange = 3,
  kEmptyRange = 4,  // a random int range with minval >= maxval
  kNaN = 5,
  kInf = 6,
  kInfAndNaN = 7,
};
constexpr int64_t kCheckKinds = 8;
inline int64_t status_code(const KExpr* e, CheckKind k) {
  return (e->id + 1) * kCheckKinds + static_cast<int>(k);
}

// A cluster that runs a While whole (runtime/cluster_runner.cc: run_loop): per loop variable
// the step reads and computes, its input buffer and the buffer its next value is written to,
// which the iterations swap; and the condition's buffer. Set by the JIT pass for a loop
// step's one cluster, before it is compiled.
struct LoopPlan {
  std::vector<std::pair<int, int>> swaps;
  int cond = -1;
};

struct ClusterProgram {
  std::vector<std::unique_ptr<KExpr>> exprs;
  std::vector<Step> steps;
  int num_params = 0;
  std::vector<ParamFill> fills;
  std::vector<std::pair<int, int>> equal_slots;  // runtime checks: dims that must match
  // Buffers: [0, inputs.size()) are cluster inputs; then constants; then materialized values.
  std::vector<Output> inputs;     // graph values consumed from outside the cluster
  std::vector<Tensor> constants;  // constant tensors read as buffers
  int num_buffers = 0;
  std::vector<KExpr*> buffer_expr;   // per buffer: the expr that defines its dims/dtype
  std::vector<Output> outputs;       // member outputs used outside, in order
  std::vector<KExpr*> output_exprs;  // the materialized expr of each output
  std::vector<Node*> members;        // in creation order
  // Per member: its value feeds a shape input (a slice bound i + 1), so the runner computes
  // it on its eager kernel before the kernels run (small integers only; see prepare).
  std::vector<char> value_before_run;
  // Per buffer: a row-local value of a kRowGroup step, never allocated whole (empty: none).
  std::vector<char> scratch_only;
  std::string fingerprint;  // canonical text: the compile-cache key's IR part
  std::optional<LoopPlan> loop;
};

// Whether the CPU backend compiles a loop driver for the program: a function running whole
// iterations of the step (every step a loop kernel, a small product or a TensorArrayWrite in
// place), called by the loop runner in place of its own loop over the steps
// (cpu_loop_driver.cc). Its entry is the one after the steps'.
bool has_loop_driver(const ClusterProgram& p);

// Whether a step writes the array in buffer `in` in place as buffer `out` (a TensorArrayWrite
// with Step::in_place): a carried array the loop keeps in one buffer, never swapped.
bool writes_array_in_place(const ClusterProgram& p, int in, int out);

// Sets the program's loop plan and extends its fingerprint (a program with a driver compiles
// to other code).
void set_loop_plan(ClusterProgram* p, LoopPlan plan);

// Sibling fusion: merges elementwise loop steps of the same shape into one loop when the
// later one needs nothing computed in between and reads the earlier ones only elementwise
// (an optimizer update reading the gradient once for m, v and the parameter).
void fuse_sibling_loops(ClusterProgram* p);

// Row-reduction fusion: consecutive loop steps over the rows of one [rows..., width] shape,
// at least one of them a reduction over the last axis, become one kRowGroup step (CPU only:
// the NVPTX backend still runs them as separate kernels). Marks row-local buffers in
// scratch_only and extends the fingerprint. Returns the number of groups formed.
int fuse_row_groups(ClusterProgram* p);

// GPU only (the CPU's Eigen matmul takes no scale): a loop step that is only a matmul's
// product times a constant float scalar, the product read nowhere else, becomes that GEMM
// step's alpha, writing the multiply's buffer. Extends the fingerprint; returns the count.
int fold_gemm_scales(ClusterProgram* p);

// A library step the CPU backend also compiles as a small product (cpu_dot.cc): a MatMul of
// two float32 or float64 matrices. The runner calls that code for products of at most
// kSmallDotVolume multiply-adds, where packing the operands for Eigen's GEMM costs more than
// the product, and Eigen for larger ones. With B transposed the code first copies it into a
// [k, n] scratch on the stack: only for a B of at most kSmallDotTransposedB elements, and
// only for at least kSmallDotTransposedRows rows of C, over which that copy pays (for one
// row, a 90x90 B, the copy took 2.4 us longer than Eigen's whole product).
// The shared dimension is bounded too: each element of C is one chain of multiply-adds over
// k, and a long chain in a few rows waits on the FMA's latency, where Eigen's matrix-vector
// and panel kernels split k (k of 256 or more: 1x512x4 took 1.24 µs against Eigen's 0.97).
// At most kSmallDotMaxDepth, half that for a single row of C.
bool is_small_dot_step(const Step& s);
constexpr int64_t kSmallDotVolume = 32 * 32 * 32;
constexpr int64_t kSmallDotMaxDepth = 128;
constexpr int64_t kSmallDotTransposedB = 8192;
constexpr int64_t kSmallDotTransposedRows = 8;
enum DotParam { kDotM, kDotN, kDotK, kDotA, kDotB, kDotC, kDotParams };

// The frame a whole loop's iterations share with the runtime (cluster_runner.cc: run_loop),
// int64s: the counts the loop driver returns (LoopFrame), then per step k, at
// kLoopFrameHead + kLoopFrameStride * k, what the runtime prepared for it: a loop kernel's
// element count, a small product's DotParam array, a TensorArrayWrite's row count and bytes
// per row.
enum LoopFrame { kFrameIterations, kFrameSkipped, kFrameDots, kFrameBadIndex, kFrameBadStep, kLoopFrameHead };
constexpr int kLoopFrameStride = kDotParams;

// Whether the fused expression `e` (up to loaded buffers and values other steps compute; `root`
// is the step's own) could set the status word: computed where its value is discarded, or
// skipped where it is not, it could raise an error the program never earned or miss one.
bool may_fail(const KExpr* e, const KExpr* root, std::set<const KExpr*>* seen);

// Inputs that carry shapes or axes rather than data (input i of n): they must be constants
// or cluster inputs, since their values feed run-time shape inference, not the kernels.
bool is_shape_input(OpId op, size_t i, size_t n);
// Whether codegen has an emitter for this node (its op type and dtypes).
bool can_emit(const Node& n, std::string* why);
// Lowers cluster members (sorted by id) into a program; nullptr and `why` when it can't.
std::unique_ptr<ClusterProgram> lower_cluster(const Graph& g, const std::vector<Node*>& members,
                                              std::string* why);

}  // namespace jf
