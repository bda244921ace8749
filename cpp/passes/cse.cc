// Common-subexpression elimination over side-effect-free nodes, in creation order (so a
// node's inputs are already canonical when it is visited).
#include <unordered_map>

#include "passes/passes.h"

namespace jf {

void common_subexpression_elimination(Graph& g) {
  std::unordered_map<std::string, Node*> seen;
  for (const auto& np : g.nodes()) {
    Node* n = np.get();
    if (n->stateful() || n->op == OpId::Placeholder || !n->control_inputs.empty()) continue;
    std::string key = n->type();
    for (const Output& o : n->inputs) key += str_cat("|", o.node->id, ":", o.index);
    for (auto& kv : n->attrs.items()) {
      if (kv.first == "value")
        key += str_cat("|v@", std::get<Tensor>(kv.second).raw(), std::get<Tensor>(kv.second).desc());
      else
        key += "|" + kv.first + "=" + attr_to_string(kv.second);
    }
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(std::move(key), n);
      continue;
    }
    for (int i = 0; i < static_cast<int>(n->outputs.size()); ++i) replace_uses(g, {n, i}, {it->second, i});
  }
  dead_code_elimination(g);
}

}  // namespace jf
