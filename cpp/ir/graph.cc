// Graph construction, naming, copying and text/dot printing.
#include "ir/graph.h"

#include <queue>
#include <sstream>

namespace jf {

bool Node::stateful() const { return def().flags & kStateful; }

const Tensor* Node::const_value() const {
  if (op != OpId::Const) return nullptr;
  return &std::get<Tensor>(*attrs.find("value"));
}

std::string Graph::unique_name(const std::string& base) {
  int& n = name_counts_[base];
  std::string name = base;
  if (n > 0 || used_.count(base)) {
    int i = n > 0 ? n : 1;
    while (used_.count(base + "_" + std::to_string(i))) ++i;
    name = base + "_" + std::to_string(i);
    n = i + 1;
  } else {
    n = 1;
  }
  used_.insert(name);
  return name;
}

Node* Graph::add_node(OpId op, const std::string& name, std::vector<Output> inputs, Attrs attrs,
                      std::vector<TensorSpec> outputs) {
  auto n = std::make_unique<Node>();
  n->id = static_cast<int>(nodes_.size());
  n->name = name;
  n->op = op;
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
  n->outputs = std::move(outputs);
  Node* p = n.get();
  by_name_[name] = p;
  used_.insert(name);
  nodes_.push_back(std::move(n));
  return p;
}

Node* Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<Graph> Graph::clone() const {
  auto g = std::make_shared<Graph>();
  std::vector<Node*> map(nodes_.size());
  for (const auto& n : nodes_) {
    std::vector<Output> ins;
    for (const Output& o : n->inputs) ins.push_back({map[o.node->id], o.index});
    Node* c = g->add_node(n->op, n->name, ins, n->attrs, n->outputs);
    for (Node* ci : n->control_inputs) c->control_inputs.push_back(map[ci->id]);
    c->source = n->source;
    c->subgraphs = n->subgraphs;  // subgraphs are immutable once built: share
    c->cluster = n->cluster;
    map[n->id] = c;
  }
  for (Node* i : inputs) g->inputs.push_back(map[i->id]);
  for (const Output& o : outputs) g->outputs.push_back({map[o.node->id], o.index});
  g->name_counts_ = name_counts_;
  g->used_ = used_;
  g->jit_scope_count = jit_scope_count;
  return g;
}

void Graph::remove_if_not(const std::vector<bool>& keep) {
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& n : nodes_) {
    if (keep[n->id]) {
      kept.push_back(std::move(n));
    } else {
      by_name_.erase(n->name);
    }
  }
  nodes_ = std::move(kept);
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->id = static_cast<int>(i);
}

void Graph::topo_sort() {
  size_t n = nodes_.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (const auto& nd : nodes_) {
    for (const Output& o : nd->inputs) users[o.node->id].push_back(nd->id), pending[nd->id]++;
    for (Node* c : nd->control_inputs) users[c->id].push_back(nd->id), pending[nd->id]++;
  }
  auto key = [&](int i) { return nodes_[i]->order_key >= 0 ? nodes_[i]->order_key : i; };
  auto cmp = [&](int a, int b) { return key(a) > key(b) || (key(a) == key(b) && a > b); };
  std::priority_queue<int, std::vector<int>, decltype(cmp)> ready(cmp);
  for (size_t i = 0; i < n; ++i)
    if (!pending[i]) ready.push(static_cast<int>(i));
  std::vector<std::unique_ptr<Node>> sorted;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    for (int u : users[i])
      if (--pending[u] == 0) ready.push(u);
    sorted.push_back(std::move(nodes_[i]));
  }
  JF_CHECK(sorted.size() == n, "graph has a cycle");
  nodes_ = std::move(sorted);
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->id = static_cast<int>(i), nodes_[i]->order_key = -1;
}

static std::string spec_str(const TensorSpec& s) { return str_cat(dtype_name(s.dtype), s.shape.str()); }

std::string Graph::to_string() const {
  std::ostringstream os;
  for (const auto& n : nodes_) {
    os << n->name << " = " << n->type() << "(";
    for (size_t i = 0; i < n->inputs.size(); ++i)
      os << (i ? ", " : "") << n->inputs[i].node->name
         << (n->inputs[i].index ? ":" + std::to_string(n->inputs[i].index) : "");
    for (Node* c : n->control_inputs) os << ", ^" << c->name;
    os << ")";
    for (auto& kv : n->attrs.items())
      if (kv.first != "value") os << " " << kv.first << "=" << attr_to_string(kv.second);
    os << " -> ";
    for (size_t i = 0; i < n->outputs.size(); ++i) os << (i ? ", " : "") << spec_str(n->outputs[i]);
    os << "\n";
  }
  os << "return (";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << (i ? ", " : "") << outputs[i].node->name << ":" << outputs[i].index;
  os << ")\n";
  return os.str();
}

std::string Graph::to_dot(const std::map<std::string, std::string>& cluster_of) const {
  std::ostringstream os;
  os << "digraph G {\n  node [shape=box, fontsize=10];\n";
  std::map<std::string, std::vector<const Node*>> boxes;
  for (const auto& n : nodes_) {
    auto it = cluster_of.find(n->name);
    if (it != cluster_of.end()) boxes[it->second].push_back(n.get());
  }
  for (const auto& n : nodes_) {
    os << "  n" << n->id << " [label=\"" << n->name << "\\n" << n->type() << "\"";
    if (n->attrs.get<bool>("_XlaCompile", false)) os << ", style=filled, fillcolor=lightblue";
    os << "];\n";
  }
  for (const auto& b : boxes) {
    os << "  subgraph " << b.first << " {\n    label=\"" << b.first
       << " (compiled)\"; style=rounded; color=blue;\n";
    for (const Node* n : b.second) os << "    n" << n->id << ";\n";
    os << "  }\n";
  }
  for (const auto& n : nodes_) {
    for (const Output& o : n->inputs)
      os << "  n" << o.node->id << " -> n" << n->id << " [label=\"" << spec_str(o.node->outputs[o.index])
         << "\"];\n";
    for (Node* c : n->control_inputs) os << "  n" << c->id << " -> n" << n->id << " [style=dashed];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace jf
