// Python views of graph nodes: a node pinned by its graph, and TF's NodeDef/AttrValue shapes
// that compile_ops callables and Operation.node_def expose.
#pragma once
#include <memory>

#include "ir/graph.h"

namespace jf::py_bridge {

struct NodeRef {
  std::shared_ptr<Graph> graph;
  Node* node;
};

struct AttrRef {
  AttrValue value;
};

}  // namespace jf::py_bridge
