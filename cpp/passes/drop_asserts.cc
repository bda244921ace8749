// jit_compile=True drops Assert nodes, as TF's XLA does (its Assert kernel compiles to nothing).
#include <algorithm>

#include "passes/passes.h"

namespace jf {

std::vector<std::string> drop_asserts(Graph& g) {
  std::vector<std::string> dropped;
  std::vector<bool> keep(g.num_nodes(), true);
  // Ids are a topological order: an Assert's own control inputs are rewired before anything
  // that waits on it takes them over.
  for (const auto& up : g.nodes()) {
    Node* n = up.get();
    std::vector<Node*> ctl;
    auto add = [&](Node* c) {
      if (std::find(ctl.begin(), ctl.end(), c) == ctl.end()) ctl.push_back(c);
    };
    for (Node* c : n->control_inputs) {
      if (c->op != OpId::Assert) add(c);
      for (Node* cc : c->op == OpId::Assert ? c->control_inputs : std::vector<Node*>{}) add(cc);
    }
    n->control_inputs = std::move(ctl);
    if (n->op == OpId::Assert) keep[n->id] = false, dropped.push_back(n->name);
  }
  if (dropped.empty()) return dropped;
  g.remove_if_not(keep);
  dead_code_elimination(g);  // the conditions and data only the asserts read
  return dropped;
}

}  // namespace jf
