// Builds the registry table from ops.def, checks its records at compile time, and runs
// inference + kernels for one op call.
#include "ir/op_registry.h"

#include <unordered_map>

namespace jf {

#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, JIT, COST, MATH, GRAD, PY, FLAGS) \
  void INFER(OpCall&);                                                                    \
  void k_##NAME(OpCall&);
#include "ir/ops.def"
#undef JF_OP

namespace {
constexpr OpDef kOps[] = {
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, JIT, COST, MATH, GRAD, PY, FLAGS) \
  {OpId::NAME,          #NAME, NIN,  INFER, k_##NAME, TYPES, SHAPE_IN,                    \
   LowerKind::k##LOWER, JIT,   COST, MATH,  GRAD,     PY,    FLAGS},
#include "ir/ops.def"
#undef JF_OP
};

constexpr bool empty(const char* s) { return s == nullptr || *s == 0; }

// What every record must say; a row that breaks a rule fails the build, naming the op.
constexpr bool record_ok(const OpDef& d) {
  const bool never_compiled = d.lower == LowerKind::kEager || d.lower == LowerKind::kGraph;
  if (never_compiled != (d.jit.types == kNoTypes)) return false;  // eager_only() <=> Eager/Graph
  if (never_compiled && empty(d.jit.reason)) return false;        // ... and says why
  if ((d.jit.types & ~d.types) != 0 && d.lower != LowerKind::kGraph) return false;     // no more than eager
  if (!never_compiled && d.jit.types != d.types && empty(d.jit.reason)) return false;  // fewer: why
  if (d.lower == LowerKind::kMath && empty(d.math)) return false;  // Math ops name their function
  if (!d.grad.registered && empty(d.grad.reason)) return false;    // no gradient: why
  if (empty(d.py.names) && empty(d.py.reason)) return false;       // no public name: why
  if ((d.lower == LowerKind::kUnary) && d.num_inputs != 1) return false;
  if ((d.lower == LowerKind::kBinary) && d.num_inputs != 2) return false;
  if ((d.lower == LowerKind::kMath) && d.num_inputs != 1 && d.num_inputs != 2) return false;
  if ((d.flags & kStateful) && !never_compiled) return false;  // stateful ops never compile
  // nor do resource accesses, but for a TensorArray's read and write inside a loop step
  if ((d.flags & kResourceAccess) && !never_compiled && d.id != OpId::TensorArrayRead &&
      d.id != OpId::TensorArrayWrite)
    return false;
  if ((d.flags & kRandomStream) && !(d.flags & kStateful)) return false;  // a stream advances per run
  if ((d.flags & kControlFlow) && (d.lower != LowerKind::kGraph || !(d.flags & kNoKernel))) return false;
  return true;
}
#define JF_OP(NAME, NIN, INFER, TYPES, SHAPE_IN, LOWER, JIT, COST, MATH, GRAD, PY, FLAGS) \
  static_assert(record_ok(kOps[static_cast<int>(OpId::NAME)]),                            \
                "ops.def: the record of " #NAME " is incomplete or inconsistent (see record_ok)");
#include "ir/ops.def"
#undef JF_OP
}  // namespace

const char* lower_kind_name(LowerKind k) {
  static const char* const kNames[] = {
      "const",      "view",      "unary",     "binary",    "math",      "cast",    "select",
      "addn",       "broadcast", "fill_like", "transpose", "reduce",    "slice",   "split",
      "concat",     "stack",     "shape",     "gather",    "gather_nd", "one_hot", "index_map",
      "arg_reduce", "random",    "library",   "eager",     "graph"};
  static_assert(sizeof(kNames) / sizeof(*kNames) == static_cast<int>(LowerKind::kGraph) + 1);
  return kNames[static_cast<int>(k)];
}

const char* cost_name(Cost c) {
  return c == Cost::kCheap ? "cheap" : c == Cost::kTranscendental ? "transcendental" : "expensive";
}

const OpDef& op_def(OpId id) { return kOps[static_cast<int>(id)]; }
int num_ops() { return static_cast<int>(OpId::kNumOps); }

const OpDef* find_op(const std::string& name) {
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string, const OpDef*>();
    for (const OpDef& d : kOps) (*m)[d.name] = &d;
    return m;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

std::string type_set_text(TypeSet s) {
  if (s == kNumericTypes) return "numeric";
  std::vector<const char*> names;
  for (int k = 0; k < kNumDTypes; ++k)
    if (has_type(s, static_cast<DType>(k))) names.push_back(dtype_name(static_cast<DType>(k)));
  std::string t;
  for (size_t i = 0; i < names.size(); ++i)
    t += str_cat(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
  return t;
}

void OpCall::check_claimed(size_t i, bool shared) const {
  const DType d = in[i].dtype();
  if (claims(d)) return;
  const std::string set = type_set_text(def->types);
  if (shared) fail_type("expected ", set, " inputs, got ", dtype_name(d));
  const bool vowel = !set.empty() && std::string("aeiou").find(set[0]) != std::string::npos;
  fail_type("expected ", vowel ? "an " : "a ", set, " input, got ", dtype_name(d));
}

const char* OpCall::name() const { return def->name; }

std::string OpCall::input_desc() const {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) s += ", ";
    s += in[i].desc();
  }
  return s;
}

void OpCall::check_num_elements(const Shape& s) const {
  // Multiplied dim by dim as TF's TensorShape does: [0, 2**40, 2**30] is a valid empty shape,
  // [2**40, 2**30, 0] is not. Unknown dims (-1) are skipped.
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) continue;
    if (__builtin_mul_overflow(n, d, &n)) fail("Shape ", s.str(), " would have more than 2**63 - 1 elements");
  }
}

Tensor& OpCall::alloc(size_t i) {
  if (results.size() < num_outputs()) results.resize(num_outputs());
  const TensorSpec& s = spec(i);
  try {
    results[i] =
        recycle ? Tensor::empty_reusing(s.dtype, s.shape, &recycle[i]) : Tensor::empty(s.dtype, s.shape);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kResourceExhausted) throw;
    throw_resource_exhausted(name(), ": ", e.what(), " (inputs: ", input_desc(), ")");
  }
  return results[i];
}

static void check_arity(const OpDef& def, const std::vector<Tensor>& inputs) {
  if (def.num_inputs >= 0 && static_cast<int>(inputs.size()) != def.num_inputs)
    throw_invalid(def.name, ": expected ", def.num_inputs, " inputs, got ", inputs.size());
  // A string reaches only the ops whose record claims strings: every other kernel and shape
  // function switches on numeric dtypes, so the refusal is made once, here, in TF's words
  // (its op constructor's TypeError). Control flow passes its values through.
  if (def.flags & kControlFlow) return;
  // The dtypes added after the original five are refused here too when the op's main operand
  // has one its record does not claim: shape functions written before them do not check.
  const int mi = def.main_input(inputs.size());
  if (mi >= 0) {
    const DType d = inputs[mi].dtype();
    if (d != DType::kInvalid && !has_type(kAllTypes | kStringTypes, d) && !has_type(def.types, d))
      throw_type("Value passed to parameter 'x' has DataType ", dtype_name(d),
                 " not in list of allowed values: ", type_set_text(def.types), " (op ", def.name, ", input #",
                 mi, ")");
  }
  // An op that moves strings still takes its shapes and axes as numbers.
  const bool strings = has_type(def.types, DType::kString);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].dtype() == DType::kString && (!strings || def.is_shape_input(i, inputs.size())))
      throw_type("Value passed to parameter '", def.is_shape_input(i, inputs.size()) ? "shape" : "x",
                 "' has DataType string not in list of allowed values: ", type_set_text(def.types), " (op ",
                 def.name, ", input #", i, ")");
}

std::vector<TensorSpec> infer_specs(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                    const std::vector<std::optional<std::vector<int64_t>>>* partial) {
  check_arity(def, inputs);
  OpCall call(&def, inputs, attrs);
  call.partial = partial;
  def.infer(call);
  return std::move(call.out);
}

std::vector<Tensor> run_kernel(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  check_arity(def, inputs);
  OpCall call(&def, inputs, attrs);
  def.infer(call);
  call.results.resize(call.out.size());
  def.kernel(call);
  return std::move(call.results);
}

std::string attr_to_string(const AttrValue& v) {
  struct V {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return str_cat(d); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(DType d) const { return dtype_name(d); }
    std::string operator()(const Shape& s) const { return s.str(); }
    std::string operator()(const std::vector<int64_t>& l) const {
      std::string r = "[";
      for (size_t i = 0; i < l.size(); ++i) r += (i ? "," : "") + std::to_string(l[i]);
      return r + "]";
    }
    std::string operator()(const std::vector<double>& l) const {
      std::string r = "[";
      for (size_t i = 0; i < l.size(); ++i) r += (i ? "," : "") + str_cat(l[i]);
      return r + "]";
    }
    std::string operator()(const std::vector<std::string>& l) const {
      std::string r = "[";
      for (size_t i = 0; i < l.size(); ++i) r += (i ? ",\"" : "\"") + l[i] + "\"";
      return r + "]";
    }
    std::string operator()(const Tensor& t) const { return "<tensor " + t.desc() + ">"; }
  };
  return std::visit(V{}, v);
}

}  // namespace jf
