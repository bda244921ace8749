// Dead-code elimination: keep what the outputs need, plus every side effect.
#include "passes/passes.h"

namespace jf {

void dead_code_elimination(Graph& g) {
  std::vector<bool> keep(g.num_nodes(), false);
  std::vector<Node*> work;
  auto mark = [&](Node* n) {
    if (!keep[n->id]) keep[n->id] = true, work.push_back(n);
  };
  for (const Output& o : g.outputs) mark(o.node);
  for (Node* i : g.inputs) mark(i);  // the caller feeds every placeholder
  for (const auto& n : g.nodes())
    if (n->stateful()) mark(n.get());
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    for (const Output& o : n->inputs) mark(o.node);
    for (Node* c : n->control_inputs) mark(c);
  }
  g.remove_if_not(keep);
}

}  // namespace jf
