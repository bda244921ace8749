// Shape inference pass: re-infers every node's output specs in order, so constants folded
// upstream (e.g. a Reshape's shape) sharpen the shapes downstream.
#include "ir/partial_shape.h"
#include "passes/passes.h"

namespace jf {

void shape_inference(Graph& g) {
  for (const auto& np : g.nodes()) {
    Node* n = np.get();
    if (n->op == OpId::Placeholder || n->op == OpId::Const || (n->def().flags & kNoKernel)) continue;
    std::vector<Tensor> views;
    for (const Output& o : n->inputs) {
      if (const Tensor* v = o.node->const_value())
        views.push_back(*v);
      else
        views.push_back(Tensor(o.node->outputs[o.index].dtype, o.node->outputs[o.index].shape, nullptr));
    }
    auto partial = partial_shape_inputs(n->def(), n->inputs);
    n->outputs = infer_specs(n->def(), views, n->attrs, partial.empty() ? nullptr : &partial);
  }
}

}  // namespace jf
