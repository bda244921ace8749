// Builds the registry table from ops.def and runs inference + kernels for one op call.
#include "ir/op_registry.h"

#include <unordered_map>

namespace jf {

#define JF_OP(NAME, NIN, INFER, KERNEL, FLAGS) \
  void INFER(OpCall&);                         \
  void KERNEL(OpCall&);
#include "ir/ops.def"
#undef JF_OP

namespace {
const OpDef kOps[] = {
#define JF_OP(NAME, NIN, INFER, KERNEL, FLAGS) {OpId::NAME, #NAME, NIN, INFER, KERNEL, FLAGS},
#include "ir/ops.def"
#undef JF_OP
};
}  // namespace

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

const char* OpCall::name() const { return def->name; }

std::string OpCall::input_desc() const {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) s += ", ";
    s += in[i].desc();
  }
  return s;
}

Tensor& OpCall::alloc(size_t i) {
  if (results.size() < num_outputs()) results.resize(num_outputs());
  const TensorSpec& s = spec(i);
  results[i] =
      recycle ? Tensor::empty_reusing(s.dtype, s.shape, &recycle[i]) : Tensor::empty(s.dtype, s.shape);
  return results[i];
}

static void check_arity(const OpDef& def, const std::vector<Tensor>& inputs) {
  if (def.num_inputs >= 0 && static_cast<int>(inputs.size()) != def.num_inputs)
    throw_invalid(def.name, ": expected ", def.num_inputs, " inputs, got ", inputs.size());
}

std::vector<TensorSpec> infer_specs(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  check_arity(def, inputs);
  OpCall call(&def, inputs, attrs);
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
