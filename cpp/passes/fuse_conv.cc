// Convolution chains to fused nodes, as TF's grappler remapper makes _FusedConv2D: a float32
// Conv2D, DepthwiseConv2dNative, Conv3D or Conv2DBackpropInput (conv2d_transpose), followed by
// ops each the only reader of the one before (a BiasAdd first, then residual adds, batch-norm
// style per-channel multiplies, adds and subtracts, and one activation, in any order), becomes
// one node running them as oneDNN post-ops: the output is written once instead of once per op.
// It runs after differentiation, so the backward ops read the values they read before (an
// activation's gradient its output, which the fused node computes).
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "passes/passes.h"
#include "passes/scope.h"

namespace jf {
namespace {

bool is_activation(OpId op) {
  // Not Relu6: oneDNN's clip turns NaN into a bound, where TF's Relu6 keeps it.
  return op == OpId::Relu || op == OpId::Elu || op == OpId::Sigmoid || op == OpId::Tanh ||
         op == OpId::LeakyRelu;
}

// Every dim from `first` on known and nonzero: the kernel then has taps to convolve (only the
// batch may be unknown or empty).
bool known_positive(const Shape& s, int first = 0) {
  for (int d = first; d < s.rank(); ++d)
    if (s[d] <= 0) return false;
  return true;
}

bool same_shape(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d)
    if (a[d] != b[d] || a[d] < 0) return false;
  return true;
}

bool channels_first(const Node& n) {
  const std::string f = n.attrs.get<std::string>("data_format", "");
  return f.size() > 2 && f[1] == 'C';
}

// The fused record for a convolution, when fuse_conv takes it as a chain's head.
bool fused_op(OpId op, OpId* fused) {
  switch (op) {
    case OpId::Conv2D:
      *fused = OpId::FusedConv2D;
      return true;
    case OpId::DepthwiseConv2dNative:
      *fused = OpId::FusedDepthwiseConv2dNative;
      return true;
    case OpId::Conv3D:
      *fused = OpId::FusedConv3D;
      return true;
    case OpId::Conv2DBackpropInput:
      *fused = OpId::FusedConv2DBackpropInput;
      return true;
    default:
      return false;
  }
}

// A conv2d_transpose oneDNN's deconvolution can compute: ungrouped, and reaching the last
// output row and column (TF allows an input one stride short of them, which oneDNN cannot pad).
bool transpose_fits(const Node& n) {
  const Shape& out = n.outputs[0].shape;
  const Shape& dy = spec_of(n.inputs[2]).shape;
  const Shape& f = spec_of(n.inputs[1]).shape;
  const bool cf = channels_first(n);
  if (out.rank() != 4 || f.rank() != 4 || dy.rank() != 4 || f[2] != out[cf ? 1 : 3]) return false;
  const auto strides = n.attrs.get<std::vector<int64_t>>("strides", {});
  const auto dil = n.attrs.get<std::vector<int64_t>>("dilations", {1, 1, 1, 1});
  const auto explicit_pads = n.attrs.get<std::vector<int64_t>>("explicit_paddings", {});
  const std::string padding = n.attrs.get<std::string>("padding", "");
  if (strides.size() != 4 || dil.size() != 4) return false;
  for (int i = 0; i < 2; ++i) {
    const int sd = cf ? 2 + i : 1 + i;
    const int64_t in = out[sd], o = dy[sd], s = strides[sd], keff = (f[i] - 1) * dil[sd] + 1;
    int64_t lo;
    if (padding == "VALID")
      lo = 0;
    else if (padding == "SAME")
      lo = std::max<int64_t>((o - 1) * s + keff - in, 0) / 2;
    else if (padding == "EXPLICIT" && explicit_pads.size() == 8)
      lo = explicit_pads[2 * sd];
    else
      return false;
    if ((o - 1) * s + keff - lo - in < 0) return false;
  }
  return true;
}

// A convolution fuse_conv may take: float32, dims known (but the batch).
bool fusable_head(const Node& n) {
  OpId f;
  if (!fused_op(n.op, &f) || n.outputs[0].dtype != DType::kFloat32 || !n.control_inputs.empty()) return false;
  if (n.op == OpId::Conv2DBackpropInput)
    return n.inputs.size() == 3 && known_positive(spec_of(n.inputs[1]).shape) &&
           known_positive(spec_of(n.inputs[2]).shape, 1) && known_positive(n.outputs[0].shape, 1) &&
           transpose_fits(n);
  return n.inputs.size() == 2 && known_positive(spec_of(n.inputs[1]).shape) &&
         known_positive(spec_of(n.inputs[0]).shape, 1);
}

// A value holding one float32 per channel of `out`: dims 1 but the channel's (aligned from the
// right; an NHWC vector is one), as the fused shape function accepts.
bool per_channel(const TensorSpec& v, const Shape& out, bool cf) {
  if (v.dtype != DType::kFloat32 || v.shape.rank() > out.rank() || v.shape.rank() == 0) return false;
  const int cd = cf ? 1 : out.rank() - 1;
  for (int d = 0; d < v.shape.rank(); ++d) {
    const int od = out.rank() - v.shape.rank() + d;
    if (v.shape[d] != (od == cd ? out[cd] : 1)) return false;
  }
  return out[cd] > 0;
}

}  // namespace

void fuse_conv(Graph& g) {
  // JITFLOW_CONV_FUSION=0 keeps every convolution as traced (to measure what fusion gains).
  if (const char* v = std::getenv("JITFLOW_CONV_FUSION"); v && std::strcmp(v, "0") == 0) return;
  // Readers of each output (graph outputs and control edges count as readers that forbid fusion).
  std::map<std::pair<Node*, int>, std::vector<Node*>> readers;
  std::map<Node*, int> pinned;
  for (const auto& n : g.nodes()) {
    for (const Output& o : n->inputs) readers[{o.node, o.index}].push_back(n.get());
    for (Node* c : n->control_inputs) pinned[c]++;
  }
  for (const Output& o : g.outputs) pinned[o.node]++;
  std::set<Node*> taken;  // nodes already inside a chain (two chains may meet at one Add)
  // The only reader of n's output, when n can disappear into a fused node.
  auto sole_reader = [&](Node* n) -> Node* {
    if (pinned.count(n) || !n->control_inputs.empty()) return nullptr;
    auto it = readers.find({n, 0});
    if (it == readers.end() || it->second.size() != 1) return nullptr;
    Node* r = it->second[0];
    return same_scope(*n, *r) && r->control_inputs.empty() && !taken.count(r) ? r : nullptr;
  };
  std::vector<Node*> convs;
  for (const auto& n : g.nodes())
    if (fusable_head(*n)) convs.push_back(n.get());
  bool changed = false;
  for (Node* conv : convs) {
    OpId fused;
    fused_op(conv->op, &fused);
    const bool cf = channels_first(*conv);
    const Shape out = conv->outputs[0].shape;
    std::vector<std::string> ops;
    std::vector<Output> args(conv->inputs.begin(), conv->inputs.end());
    Node* last = conv;
    bool residual = false, activated = false;
    double alpha = 0.2;
    for (Node* next = sole_reader(last); next && ops.size() < 8; next = sole_reader(last)) {
      if (!same_shape(next->outputs[0].shape, out) || next->outputs[0].dtype != DType::kFloat32) break;
      const int mine = next->inputs.size() == 2 && next->inputs[0].node == last ? 0 : 1;
      const Output other = next->inputs.size() == 2 ? next->inputs[1 - mine] : Output{};
      if (next->inputs.size() == 2 && (next->inputs[mine].node != last || other.node == last)) break;
      if (next->op == OpId::BiasAdd && ops.empty() && mine == 0 && channels_first(*next) == cf &&
          spec_of(other).dtype == DType::kFloat32 && spec_of(other).shape.rank() == 1 &&
          spec_of(other).shape[0] == out[cf ? 1 : out.rank() - 1]) {
        ops.push_back("BiasAdd");
        args.push_back(other);
      } else if (next->op == OpId::AddV2 && !residual && spec_of(other).dtype == DType::kFloat32 &&
                 same_shape(spec_of(other).shape, out)) {
        ops.push_back("Add");
        args.push_back(other);
        residual = true;
      } else if ((next->op == OpId::AddV2 || next->op == OpId::Mul || (next->op == OpId::Sub && mine == 0)) &&
                 per_channel(spec_of(other), out, cf)) {
        ops.push_back(next->op == OpId::Mul   ? "MulChannel"
                      : next->op == OpId::Sub ? "SubChannel"
                                              : "AddChannel");
        args.push_back(other);
      } else if (is_activation(next->op) && !activated) {
        ops.push_back(next->type());
        if (next->op == OpId::LeakyRelu) alpha = next->attrs.get<double>("alpha", 0.2);
        activated = true;
      } else {
        break;
      }
      last = next;
    }
    // Nothing, or a bias alone: the fused loop after the convolution adds it as well.
    if (ops.empty() || (ops.size() == 1 && ops[0] == "BiasAdd")) continue;
    std::vector<std::string> names;  // for jf.explain: the traced ops the node computes
    for (Node* n = conv; n != last; n = readers[{n, 0}][0]) taken.insert(n), names.push_back(n->name);
    taken.insert(last);
    names.push_back(last->name);
    Attrs at = conv->attrs;
    at.set("fused_ops", ops);
    at.set("_fused_from", names);
    if (activated) at.set("leakyrelu_alpha", alpha);
    Node* f = g.add_node(fused, g.unique_name(op_def(fused).name), args, at, last->outputs);
    f->source = conv->source;
    f->order_key = last->id;
    replace_uses(g, {last, 0}, {f, 0});
    changed = true;
  }
  if (!changed) return;
  g.topo_sort();  // each fused node where its chain's last node was
  dead_code_elimination(g);
}

}  // namespace jf
