// Dead-code elimination: keep what the outputs need, plus every side effect.
#include "passes/passes.h"

namespace jf {

// A check (CheckNumerics) runs even when nothing reads its value, as TF's automatic control
// dependencies run it; once a compiled cluster computes it, the XlaLaunch is what stays.
static bool keep_unconsumed(const Node& n) {
  if (n.attrs.get<bool>("_keep", false)) return true;
  return (n.def().flags & kCheck) && !n.attrs.get<bool>("_compiled", false);
}

void dead_code_elimination(Graph& g) {
  std::vector<bool> keep(g.num_nodes(), false);
  std::vector<Node*> work;
  auto mark = [&](Node* n) {
    if (!keep[n->id]) keep[n->id] = true, work.push_back(n);
  };
  for (const Output& o : g.outputs) mark(o.node);
  for (Node* i : g.inputs) mark(i);  // the caller feeds every placeholder
  for (const auto& n : g.nodes())
    if (n->stateful() || keep_unconsumed(*n)) mark(n.get());
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    for (const Output& o : n->inputs) mark(o.node);
    for (Node* c : n->control_inputs) mark(c);
  }
  g.remove_if_not(keep);
}

}  // namespace jf
