// Facts the rewriting passes ask of graph nodes: an output's spec, and whether two nodes
// share the compile scope that decides clustering and placement (a rewrite that joins nodes
// stays inside one scope).
#pragma once
#include "ir/graph.h"

namespace jf {

inline const TensorSpec& spec_of(const Output& o) { return o.node->outputs[o.index]; }

inline bool same_scope(const Node& a, const Node& b) {
  for (const char* k : {"_XlaScope", "_XlaCompile"}) {
    const AttrValue* x = a.attrs.find(k);
    const AttrValue* y = b.attrs.find(k);
    if ((x == nullptr) != (y == nullptr) || (x && attr_to_string(*x) != attr_to_string(*y))) return false;
  }
  return true;
}

}  // namespace jf
