// If-conversion: computing both branches and selecting is what the compiled If costs when the
// branches are a few elementwise or layout ops or small matrix products; an executor branch
// would instead split the cluster in three kernels around a round trip, and stop a loop
// holding it from running whole. Only branches whose every op is pure, compiles, has static
// shapes and cannot raise at run time qualify, so the untaken branch's values are discarded
// without any observable effect. The other Ifs whose branches compile without side effects
// are inlined with guards instead, after clustering: the cluster skips the untaken branch.
#include "cluster/if_to_select.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "passes/passes.h"
#include "support/errors.h"

namespace jf {
namespace {

const char kXlaCompile[] = "_XlaCompile";
const char kXlaScope[] = "_XlaScope";

std::optional<bool> compile_attr(const Node& n) {
  if (!n.attrs.has(kXlaCompile)) return std::nullopt;
  return n.attrs.get<bool>(kXlaCompile, false);
}

std::string scope_of(const Node& n) { return n.attrs.get<std::string>(kXlaScope, ""); }

// Whether `n` would be clustered with `anchor` by mark_for_compilation's scope rules.
bool compiles_with(const Node& n, const Node& anchor, const ClusterOptions& o) {
  std::optional<bool> c = compile_attr(n);
  if (c && !*c) return false;
  if (o.whole_function) return true;
  if (o.auto_jit && !c) return true;
  return c && *c && scope_of(n) == scope_of(anchor);
}

const TensorSpec& spec(const Output& o) { return o.node->outputs[o.index]; }

int non_const_inputs(const Node& m) {
  int k = 0;
  for (const Output& o : m.inputs) k += o.node->op != OpId::Const;
  return k;
}

std::string describe(const Node& m) { return str_cat("op '", m.name, "' (", m.type(), ")"); }

// Multiply-adds of a matrix product in a branch that may run whichever branch is taken: a
// small product costs less computed for nothing than the executor branch costs, and with
// static shapes it cannot fail at run time. Larger ones keep the branch, whose untaken side
// then costs nothing.
constexpr int64_t kMaxInlineProduct = 32 * 32 * 32;

// The product's multiply-adds when every shape it has is static, else -1.
int64_t static_product_volume(const Node& m) {
  if (m.op != OpId::MatMul && m.op != OpId::BatchMatMulV2) return -1;
  const Shape &a = spec(m.inputs[0]).shape, &out = m.outputs[0].shape;
  if (!a.fully_defined() || !spec(m.inputs[1]).shape.fully_defined() || !out.fully_defined() || a.rank() < 2)
    return -1;
  const bool ta = m.attrs.get<bool>(m.op == OpId::MatMul ? "transpose_a" : "adj_x", false);
  return out.num_elements() * a[a.rank() - (ta ? 2 : 1)];
}

// Why a compiling op of a branch cannot be a guarded step ("" when it can).
std::string guarded_op_refusal(const Node& m) {
  for (const TensorSpec& t : m.outputs)
    if (is_half(t.dtype))
      return str_cat(
          "its branch's ", describe(m), " computes ", dtype_name(t.dtype),
          " values (computed in float32 and rounded where stored, which guarded steps do not do yet)");
  // Shapes and bounds are read before any step runs, whichever branch is taken.
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const Node& src = *m.inputs[i].node;
    if (m.def().is_shape_input(i, m.inputs.size()) && src.op != OpId::Const && src.op != OpId::Shape)
      return str_cat("its branch's ", describe(m), " takes a parameter computed at run time");
  }
  return "";
}

// How an If is computed inline: both branches then a select per output, or each branch's
// steps guarded by the condition (only the taken branch runs) and then the selects.
enum class Inline { kSelect, kGuarded };

// "" when `m` may be computed in a branch that is not taken; guarded, when it may be a guarded
// step (it compiles, has no side effect, and its parameters are known before the steps run).
std::string branch_op_refusal(const Node& m, const Node& anchor, const ClusterOptions& o,
                              const CanEmitFn& can_emit, Inline how = Inline::kSelect) {
  const unsigned flags = m.def().flags;
  if (flags & kControlFlow) return str_cat("its branch holds control flow: ", describe(m));
  // The loop runner writes a carried array in place; a write that might not run would need
  // the array copied. A read is a gather of the array's buffer, a value.
  const bool guarded = how == Inline::kGuarded;
  if (guarded && m.op == OpId::TensorArrayWrite)
    return str_cat("its branch writes a TensorArray: ", describe(m));
  const unsigned effects = kResourceAccess | kRandomStream;
  if (m.stateful() || ((flags & effects) && !(guarded && m.op == OpId::TensorArrayRead)))
    return str_cat("its branch has a side effect: ", describe(m));
  if ((flags & kCheck) && how == Inline::kSelect)
    return str_cat("its branch checks values at run time: ", describe(m));
  // Constants are pure and may be computed anywhere (tracing creates them outside scopes).
  if (m.op == OpId::Placeholder || m.op == OpId::Const) return "";
  if (!compiles_with(m, anchor, o))
    return str_cat("its branch's ", describe(m), " is outside the If's jit scope");
  std::string why;
  if (!can_emit(m, &why)) return str_cat("its branch's ", describe(m), " does not compile: ", why);
  if (how == Inline::kGuarded) return guarded_op_refusal(m);
  switch (m.def().lower) {
    case LowerKind::kConst:
    case LowerKind::kUnary:
    case LowerKind::kMath:
    case LowerKind::kCast:
    case LowerKind::kSelect:
    case LowerKind::kAddN:
    case LowerKind::kFillLike:
    case LowerKind::kShape:
    case LowerKind::kStack:
      return "";
    case LowerKind::kBinary:
      if (integer_form_checks(m.op, spec(m.inputs[0]).dtype))
        return str_cat("its branch's ", describe(m), " checks its integer operand at run time");
      return "";
    case LowerKind::kConcat:
      if (m.inputs.back().node->op != OpId::Const) break;
      return "";
    case LowerKind::kLibrary: {
      const int64_t v = static_product_volume(m);
      if (v >= 0 && v <= kMaxInlineProduct) return "";
      if (v > kMaxInlineProduct)
        return str_cat("its branch's ", describe(m), " is a product of ", v, " multiply-adds (more than ",
                       kMaxInlineProduct, " would be computed for nothing)");
      return str_cat("its branch's ", describe(m),
                     " is a library op, not a matrix product of static shapes, which alone may run untaken");
    }
    // Their parameters (shape, axes, bounds, perm) must be constants: then every shape they
    // could reject was checked when tracing.
    case LowerKind::kView:
    case LowerKind::kBroadcast:
    case LowerKind::kTranspose:
    case LowerKind::kReduce:
    case LowerKind::kSlice:
    case LowerKind::kSplit:
    case LowerKind::kIndexMap:
      if (non_const_inputs(m) > 1) break;
      return "";
    default:
      return str_cat("its branch's ", describe(m), " is not an elementwise, layout or reduction op");
  }
  return str_cat("its branch's ", describe(m), " takes a parameter computed at run time");
}

// Where a branch value's shape comes from: kStatic when known when tracing, else the index
// of the If input whose shape it has at run time (through ops that keep their operand's
// shape, with scalars beside), or kUnknown. Two outputs of the same If input's shape are
// equal whatever that shape turns out to be, so their select is well formed.
constexpr int kStatic = -1;
constexpr int kUnknown = -2;

// Per node of branch `b` of `n` (by its output 0): its shape source.
std::unordered_map<const Node*, int> shape_sources(const Node& n, int b) {
  const Graph& sub = *n.subgraphs[b];
  const size_t offset = b == 0 ? 1 : 1 + static_cast<size_t>(n.attrs.get<int64_t>("num_then_inputs", 0));
  std::unordered_map<const Node*, int> src;
  auto same = [](const Output& x, const Output& y) { return x.node == y.node && x.index == y.index; };
  for (size_t j = 0; j < sub.inputs.size(); ++j) {
    // Named by the first If input carrying the same value: the then branch's x and the else
    // branch's x (the same tensor passed twice) have one source.
    const int at = static_cast<int>(offset + j);
    int first = at;
    for (int i = 1; i < at; ++i)
      if (same(n.inputs[i], n.inputs[at])) {
        first = i;
        break;
      }
    src[sub.inputs[j]] = first;
  }
  for (const auto& up : sub.nodes()) {
    const Node& m = *up;
    bool known = true;
    for (const TensorSpec& t : m.outputs) known = known && t.shape.fully_defined();
    if (known) {
      src[&m] = kStatic;
      continue;
    }
    if (m.op == OpId::Placeholder) continue;
    int from = kUnknown;
    switch (m.def().lower) {
      case LowerKind::kUnary:
      case LowerKind::kMath:
      case LowerKind::kCast:
      case LowerKind::kFillLike:
      case LowerKind::kBinary:
      case LowerKind::kSelect:
      case LowerKind::kAddN:
        // Every operand but scalars has the one run-time shape.
        for (const Output& o : m.inputs) {
          if (o.node->outputs[o.index].shape.rank() == 0) continue;
          const int s = src.at(o.node);
          if (s < 0 || (from != kUnknown && from != s)) {  // static beside run-time: may not broadcast
            from = kUnknown;
            break;
          }
          from = s;
        }
        break;
      default:
        break;
    }
    src[&m] = from;
  }
  return src;
}

std::string refusal(const Node& n, const ClusterOptions& o, const CanEmitFn& can_emit, Inline how) {
  if (n.op != OpId::If || n.subgraphs.size() != 2) return "not an If";
  if (!compiles_with(n, n, o)) return "it is not in compiled code";
  const TensorSpec& pred = spec(n.inputs[0]);
  if (pred.dtype != DType::kBool || pred.shape.rank() != 0)
    return str_cat("its condition is ", dtype_name(pred.dtype), pred.shape.str(), ", not a bool scalar");
  const size_t nt = static_cast<size_t>(n.attrs.get<int64_t>("num_then_inputs", 0));
  const Graph& then_g = *n.subgraphs[0];
  const Graph& else_g = *n.subgraphs[1];
  if (then_g.inputs.size() != nt || 1 + nt + else_g.inputs.size() != n.inputs.size() ||
      then_g.outputs.size() != n.outputs.size() || else_g.outputs.size() != n.outputs.size())
    return "its branches do not match its inputs and outputs";
  std::unordered_map<const Node*, int> src[2];
  for (int b = 0; b < 2; ++b) {
    src[b] = shape_sources(n, b);
    for (const auto& up : n.subgraphs[b]->nodes()) {
      std::string why = branch_op_refusal(*up, n, o, can_emit, how);
      if (why.empty() && src[b].at(up.get()) == kUnknown)
        why = str_cat("a shape in its branch is known only at run time: ", describe(*up), " gives ",
                      up->outputs[0].shape.str());
      if (!why.empty()) return why;
    }
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Output &t = then_g.outputs[k], &e = else_g.outputs[k];
    const TensorSpec &ts = spec(t), &es = spec(e);
    const int tsrc = src[0].at(t.node), esrc = src[1].at(e.node);
    const bool same_shape = tsrc == kStatic ? esrc == kStatic && ts.shape == es.shape : tsrc == esrc;
    if (ts.dtype != es.dtype || !same_shape)
      return str_cat("its branches give output ", k, " as ", dtype_name(ts.dtype), ts.shape.str(), " and ",
                     dtype_name(es.dtype), es.shape.str(), same_shape ? "" : ", not provably the same shape");
  }
  if (how == Inline::kGuarded) {
    // The selects hold the condition the guarded steps test (and name the If's outputs).
    // A branch input given back is the If's input feeding it (as inline_if maps it).
    auto outer = [&](const Graph& sub, const Output& o, size_t offset) {
      for (size_t j = 0; j < sub.inputs.size(); ++j)
        if (o.node == sub.inputs[j]) return n.inputs[offset + j];
      return o;
    };
    bool selects = false;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Output t = outer(then_g, then_g.outputs[k], 1), e = outer(else_g, else_g.outputs[k], 1 + nt);
      selects = selects || t.node != e.node || t.index != e.index;
      if (is_half(spec(t).dtype))
        return str_cat("its output ", k, " is ", dtype_name(spec(t).dtype),
                       " (guarded steps do not compute half types yet)");
    }
    if (!selects) return "its branches compute no output that differs between them";
  }
  return "";
}

}  // namespace

std::string if_conversion_refusal(const Node& n, const ClusterOptions& o, const CanEmitFn& can_emit) {
  return refusal(n, o, can_emit, Inline::kSelect);
}

std::string guarded_if_refusal(const Node& n, const ClusterOptions& o, const CanEmitFn& can_emit) {
  return refusal(n, o, can_emit, Inline::kGuarded);
}

namespace {

// Both branches copied into `g` after the If's inputs, then one select per output that
// differs between them; the If's uses move to the selects.
// Guarded: every copied branch node is marked `_guard` (the If's name) and `_guard_then`
// (which branch), and every select `_merge` (the If's name): lowering finds the condition
// the guarded steps test on the selects (kernel_ir.h: Step::guard).
void inline_if(Graph& g, Node* n, IfConversion* rec, bool guarded) {
  const size_t nt = static_cast<size_t>(n->attrs.get<int64_t>("num_then_inputs", 0));
  std::vector<Output> results[2];
  for (int b = 0; b < 2; ++b) {
    const Graph& sub = *n->subgraphs[b];
    const size_t offset = b == 0 ? 1 : 1 + nt;
    std::unordered_map<const Node*, Output> fed;
    for (size_t j = 0; j < sub.inputs.size(); ++j) fed[sub.inputs[j]] = n->inputs[offset + j];
    std::unordered_map<const Node*, Node*> copy;
    auto map = [&](const Output& o) {
      auto it = fed.find(o.node);
      return it != fed.end() ? it->second : Output{copy.at(o.node), o.index};
    };
    // Named as jf.explain names the branch's ops ("cond/then/mul").
    const std::string prefix = str_cat(n->name, b == 0 ? "/then/" : "/else/");
    for (const auto& up : sub.nodes()) {
      const Node* m = up.get();
      if (m->op == OpId::Placeholder) continue;
      std::vector<Output> ins;
      for (const Output& o : m->inputs) ins.push_back(map(o));
      Attrs attrs = m->attrs;
      if (guarded) {
        attrs.set("_guard", n->name);
        attrs.set("_guard_then", b == 0);
      }
      Node* c = g.add_node(m->op, g.unique_name(prefix + m->name), ins, attrs, m->outputs);
      for (Node* ci : m->control_inputs)
        if (copy.count(ci)) c->control_inputs.push_back(copy.at(ci));
      c->source = m->source;
      c->order_key = n->id;
      copy[m] = c;
      rec->new_nodes.push_back(c->name);
    }
    for (const Output& o : sub.outputs) results[b].push_back(map(o));
  }
  Attrs scope;
  for (const char* k : {kXlaCompile, kXlaScope})
    if (const AttrValue* v = n->attrs.find(k)) scope.set(k, *v);
  for (size_t k = 0; k < n->outputs.size(); ++k) {
    const Output t = results[0][k], e = results[1][k];
    Output r = t;
    rec->selects.emplace_back();
    if (t.node != e.node || t.index != e.index) {
      Attrs attrs = scope;
      if (guarded) attrs.set("_merge", n->name);
      Node* s = g.add_node(OpId::SelectV2, g.unique_name(n->name + "/select"), {n->inputs[0], t, e}, attrs,
                           {spec(t)});
      s->source = n->source;
      s->order_key = n->id;
      rec->new_nodes.push_back(s->name);
      rec->selects.back() = s->name;
      r = {s, 0};
    }
    replace_uses(g, {n, static_cast<int>(k)}, r);
  }
  // An op ordered after the If stays ordered after what the If was ordered after.
  for (const auto& up : g.nodes()) {
    std::vector<Node*>& ci = up->control_inputs;
    if (std::find(ci.begin(), ci.end(), n) == ci.end()) continue;
    ci.erase(std::remove(ci.begin(), ci.end(), n), ci.end());
    for (Node* p : n->control_inputs)
      if (std::find(ci.begin(), ci.end(), p) == ci.end()) ci.push_back(p);
  }
}

// The inlined Ifs removed, their branch nodes ordered where the If was.
void remove_inlined(Graph& h, const std::vector<Node*>& inlined) {
  for (const auto& up : h.nodes())
    if (up->order_key < 0) up->order_key = up->id;
  h.topo_sort();
  std::vector<bool> keep(h.num_nodes(), true);
  for (Node* n : inlined) keep[n->id] = false;
  h.remove_if_not(keep);
  for (const auto& up : h.nodes()) up->order_key = -1;
}

}  // namespace

std::shared_ptr<Graph> inline_guarded_ifs(const Graph& g, const std::set<std::string>& names,
                                          std::vector<IfConversion>* done) {
  std::shared_ptr<Graph> h = g.clone();
  std::vector<Node*> ifs;
  for (const auto& up : h->nodes())
    if (up->op == OpId::If && names.count(up->name)) ifs.push_back(up.get());
  for (Node* n : ifs) {
    done->push_back(IfConversion{n->name, {}});
    inline_if(*h, n, &done->back(), true);
  }
  remove_inlined(*h, ifs);
  return h;
}

std::shared_ptr<Graph> inline_clustered_ifs(const std::shared_ptr<Graph>& a, ClusteringResult* cr,
                                            GuardedIfs* g) {
  g->of_cluster.assign(cr->clusters.size(), {});
  for (const Cluster& c : cr->clusters)
    for (const Node* n : c.nodes)
      if (n->op == OpId::If) g->names.insert(n->name);
  if (g->names.empty()) return a;
  std::vector<IfConversion> done;
  std::shared_ptr<Graph> inl = inline_guarded_ifs(*a, g->names, &done);
  for (IfConversion& c : done) g->by_name[c.if_name] = std::move(c);
  for (size_t i = 0; i < cr->clusters.size(); ++i) {
    std::vector<Node*> nodes;
    for (const Node* n : cr->clusters[i].nodes) {
      if (!g->names.count(n->name)) {
        nodes.push_back(inl->find(n->name));
        continue;
      }
      g->of_cluster[i].push_back(n->name);
      for (const std::string& m : g->by_name.at(n->name).new_nodes) nodes.push_back(inl->find(m));
    }
    std::sort(nodes.begin(), nodes.end(), [](const Node* x, const Node* y) { return x->id < y->id; });
    cr->clusters[i].nodes = std::move(nodes);
  }
  return inl;
}

std::shared_ptr<Graph> restore_failed_ifs(const Graph& a, const GuardedIfs& g,
                                          const std::set<std::string>& failed) {
  std::set<std::string> kept;
  for (const std::string& name : g.names)
    if (!failed.count(name)) kept.insert(name);
  std::vector<IfConversion> done;
  std::shared_ptr<Graph> inl = kept.empty() ? a.clone() : inline_guarded_ifs(a, kept, &done);
  for (const std::string& name : failed) {
    Node* n = inl->find(name);
    const std::vector<std::string>& selects = g.by_name.at(name).selects;
    for (size_t k = 0; k < selects.size(); ++k)
      if (!selects[k].empty())
        inl->add_node(OpId::Identity, selects[k], {{n, static_cast<int>(k)}}, Attrs(), {n->outputs[k]});
  }
  return inl;
}

std::shared_ptr<Graph> convert_ifs_to_selects(const Graph& g, const ClusterOptions& opts,
                                              const CanEmitFn& can_emit, std::vector<IfConversion>* done) {
  bool has_if = false;
  for (const auto& up : g.nodes()) has_if = has_if || up->op == OpId::If;
  if (!has_if) return nullptr;
  std::shared_ptr<Graph> h = g.clone();
  bool changed = false;
  std::vector<Node*> ifs;
  for (const auto& up : h->nodes())
    if (up->op == OpId::If) ifs.push_back(up.get());
  for (Node* n : ifs) {
    for (std::shared_ptr<Graph>& sub : n->subgraphs) {
      std::vector<IfConversion> inner;
      if (std::shared_ptr<Graph> s = convert_ifs_to_selects(*sub, opts, can_emit, &inner)) {
        sub = s;
        changed = true;
      }
    }
  }
  std::vector<Node*> converted;
  for (Node* n : ifs) {
    if (!if_conversion_refusal(*n, opts, can_emit).empty()) continue;
    done->push_back(IfConversion{n->name, {}});
    inline_if(*h, n, &done->back(), false);
    converted.push_back(n);
  }
  if (!changed && converted.empty()) return nullptr;
  if (converted.empty()) return h;
  remove_inlined(*h, converted);
  return h;
}

}  // namespace jf
