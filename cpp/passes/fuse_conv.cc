// Conv2D chains to FusedConv2D, as TF's grappler remapper makes _FusedConv2D: a float32
// Conv2D whose only reader is a BiasAdd, then (each the only reader of the one before) an
// Add of a residual of the same shape and an activation, in either order, becomes one node
// running them as oneDNN post-ops: the output is written once instead of once per op. It
// runs after differentiation, so the backward ops read the values they read before (an
// activation's gradient its output, which the fused node computes).
#include <map>
#include <set>

#include "passes/passes.h"

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

// The attrs that decide clustering and placement: a chain fuses only inside one scope.
bool same_scope(const Node& a, const Node& b) {
  for (const char* k : {"_XlaScope", "_XlaCompile"}) {
    const AttrValue* x = a.attrs.find(k);
    const AttrValue* y = b.attrs.find(k);
    if ((x == nullptr) != (y == nullptr) || (x && attr_to_string(*x) != attr_to_string(*y))) return false;
  }
  return true;
}

}  // namespace

void fuse_conv(Graph& g) {
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
    if (n->op == OpId::Conv2D && n->outputs[0].dtype == DType::kFloat32 && n->inputs.size() == 2 &&
        known_positive(n->inputs[1].node->outputs[n->inputs[1].index].shape) &&
        known_positive(n->inputs[0].node->outputs[n->inputs[0].index].shape, 1) && n->control_inputs.empty())
      convs.push_back(n.get());
  bool changed = false;
  for (Node* conv : convs) {
    const std::string fmt = conv->attrs.get<std::string>("data_format", "NHWC");
    Node* bias = sole_reader(conv);
    if (!bias || bias->op != OpId::BiasAdd || bias->inputs[0].node != conv ||
        bias->attrs.get<std::string>("data_format", "NHWC") != fmt)
      continue;
    std::vector<std::string> ops = {"BiasAdd"};
    std::vector<Output> args = {conv->inputs[0], conv->inputs[1], bias->inputs[1]};
    Node* last = bias;
    bool added = false, activated = false;
    double alpha = 0.2;
    for (Node* next = sole_reader(last); next; next = sole_reader(last)) {
      if (next->op == OpId::AddV2 && !added) {
        const int mine = next->inputs[0].node == last ? 0 : 1;
        const Output other = next->inputs[1 - mine];
        if (next->inputs[mine].node != last || other.node == last) break;
        const TensorSpec& r = other.node->outputs[other.index];
        if (r.dtype != DType::kFloat32 || !same_shape(r.shape, last->outputs[0].shape) ||
            !same_shape(next->outputs[0].shape, last->outputs[0].shape))
          break;
        ops.push_back("Add");
        args.push_back(other);
        added = true;
      } else if (is_activation(next->op) && !activated) {
        ops.push_back(next->type());
        if (next->op == OpId::LeakyRelu) alpha = next->attrs.get<double>("alpha", 0.2);
        activated = true;
      } else {
        break;
      }
      last = next;
    }
    if (last == bias) continue;      // a bias alone: the fused loop after the convolution adds it as well
    std::vector<std::string> names;  // for jf.explain: the traced ops the node computes
    for (Node* n = conv; n != last; n = readers[{n, 0}][0]) taken.insert(n), names.push_back(n->name);
    taken.insert(last);
    names.push_back(last->name);
    Attrs at = conv->attrs;
    at.set("fused_ops", ops);
    at.set("_fused_from", names);
    if (activated) at.set("leakyrelu_alpha", alpha);
    Node* f = g.add_node(OpId::FusedConv2D, g.unique_name("FusedConv2D"), args, at, last->outputs);
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
