// The dataflow graph: nodes with TF-style unique names, op types, data and control inputs,
// typed attrs and inferred output specs. Subgraphs hang off control-flow nodes (If/While).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/op_registry.h"

namespace jf {

class Graph;
struct Node;
struct CompiledCluster;  // runtime/cluster_runner.h

struct Output {
  Node* node = nullptr;
  int index = 0;
};

struct Node {
  int id = 0;        // creation order: also a valid topological order
  std::string name;  // unique in its graph
  OpId op;
  std::vector<Output> inputs;
  std::vector<Node*> control_inputs;
  Attrs attrs;
  std::vector<TensorSpec> outputs;
  std::string source;                             // user's file:line that created it
  std::vector<std::shared_ptr<Graph>> subgraphs;  // If: then/else; While: cond/body
  std::shared_ptr<CompiledCluster> cluster;       // XlaLaunch: the compiled cluster it runs
  int order_key = -1;                             // topo_sort priority (default: id)
  const OpDef& def() const { return op_def(op); }
  const char* type() const { return def().name; }
  bool stateful() const;
  // The eager value of a Const node (nullptr for others).
  const Tensor* const_value() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;

  Node* add_node(OpId op, const std::string& name, std::vector<Output> inputs, Attrs attrs,
                 std::vector<TensorSpec> outputs);
  // TF's naming: "MatMul", then "MatMul_1", ...; a used name gets a suffix too.
  std::string unique_name(const std::string& base);
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  Node* find(const std::string& name) const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }

  std::vector<Node*> inputs;    // Placeholders fed by the caller, in order
  std::vector<Output> outputs;  // returned values
  int jit_scope_count = 0;      // root jit_scopes opened in this graph (for "jit_scope_<N>")
  int jit_scope_depth = 0;

  // Deep copy (passes work on a copy; introspection sees the graph as traced).
  std::shared_ptr<Graph> clone() const;
  // Stable topological re-sort (Kahn, smallest order_key/id first); renumbers ids.
  void topo_sort();
  // Removes nodes for which keep[id] is false; renumbers ids in order.
  void remove_if_not(const std::vector<bool>& keep);
  std::string to_string() const;
  // Graphviz text; nodes named in `cluster_of` are drawn inside a box per cluster.
  std::string to_dot(const std::map<std::string, std::string>& cluster_of = {}) const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, int> name_counts_;
  std::unordered_set<std::string> used_;  // node names and name-scope names
};

}  // namespace jf
