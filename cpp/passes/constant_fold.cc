// Constant folding: side-effect-free single-output nodes whose inputs are all Const become
// Const themselves (bounded size, so folding never builds huge constants).
#include "passes/passes.h"

namespace jf {

static constexpr int64_t kMaxFoldElements = 1 << 16;

static void become_const(Node* n, const Tensor& value) {
  n->op = OpId::Const;
  n->inputs.clear();
  Attrs a;
  a.set("value", value);
  a.set("dtype", value.dtype());
  n->attrs = a;
}

void constant_folding(Graph& g) {
  for (const auto& np : g.nodes()) {
    Node* n = np.get();
    if (n->stateful() || n->op == OpId::Const || n->op == OpId::Placeholder || n->outputs.size() != 1 ||
        n->inputs.empty() || (n->def().flags & (kNoKernel | kCheck)))  // a check fails when run
      continue;
    // Shape of a value whose shape is static is a constant even when the value is not.
    if (n->op == OpId::Shape && n->inputs[0].node->outputs[n->inputs[0].index].shape.fully_defined()) {
      const Shape& s = n->inputs[0].node->outputs[n->inputs[0].index].shape;
      become_const(n, Tensor::from_int64s(s.vec(), n->outputs[0].dtype));
      continue;
    }
    bool all_const = true;
    std::vector<Tensor> vals;
    for (const Output& o : n->inputs) {
      const Tensor* v = o.node->const_value();
      if (!v) {
        all_const = false;
        break;
      }
      vals.push_back(*v);
    }
    if (!all_const || !n->outputs[0].shape.fully_defined() ||
        n->outputs[0].shape.num_elements() > kMaxFoldElements)
      continue;
    Tensor value;
    try {
      value = run_kernel(n->def(), vals, n->attrs)[0];
    } catch (const Error&) {
      continue;  // leave it for run time, where the error reaches the user
    }
    become_const(n, value);
  }
}

}  // namespace jf
