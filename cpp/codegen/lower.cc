// Lowers a cluster's nodes to kernel IR: one expression per value, index-map ops for data
// movement, softmax decomposed into reductions, matmuls and reductions as step roots.
#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "codegen/half_float.h"
#include "codegen/kernel_ir.h"
#include "ir/shape_fns.h"

namespace jf {

namespace {

class Lowering {
 public:
  // shapes_vary: the graph's shapes are one run's (a specialization), not what every run has.
  Lowering(const Graph& g, const std::vector<Node*>& members, bool shapes_vary = false)
      : g_(g), p_(std::make_unique<ClusterProgram>()), shapes_vary_(shapes_vary) {
    p_->members = members;
    for (size_t i = 0; i < members.size(); ++i) member_index_[members[i]] = static_cast<int>(i);
  }

  std::unique_ptr<ClusterProgram> run(std::string* why) {
    try {
      for (Node* n : p_->members) lower(n);
      guard_ = nullptr;
      collect_outputs();
      mark_in_place_writes();
      compute_halves();
      plan_materialization();
      fuse_sibling_loops(p_.get());
      fingerprint();
    } catch (const Error& e) {
      *why = e.what();
      return nullptr;
    }
    return std::move(p_);
  }

 private:
  const Graph& g_;
  std::unique_ptr<ClusterProgram> p_;
  const bool shapes_vary_;
  std::map<const Node*, int> member_index_;
  std::map<std::pair<const Node*, int>, KExpr*> values_;
  // The guard of the node being lowered (an inlined If branch's node), given to the values
  // computed for it; the condition of each inlined If, by the If's name.
  const KExpr* guard_ = nullptr;
  bool guard_when_ = true;
  std::map<std::string, const KExpr*> if_conditions_;

  bool is_member(const Node* n) const { return member_index_.count(n) > 0; }

  KExpr* make(KKind k, DType dt, std::vector<int> dims) {
    auto e = std::make_unique<KExpr>();
    e->id = static_cast<int>(p_->exprs.size());
    e->kind = k;
    e->dtype = dt;
    e->dims = std::move(dims);
    e->guard = guard_;
    e->guard_when = guard_when_;
    p_->exprs.push_back(std::move(e));
    return p_->exprs.back().get();
  }
  int slot(ParamFill f) {
    p_->fills.push_back(f);
    return p_->num_params++;
  }
  int new_buffer(KExpr* e) {
    p_->buffer_expr.push_back(e);
    return p_->num_buffers++;
  }

  // Dims of a member node output: a runtime slot per dim, -1 for a static 1.
  std::vector<int> node_dims(Node* n, int out) {
    std::vector<int> d;
    const Shape& s = n->outputs[out].shape;
    for (int i = 0; i < s.rank(); ++i)
      d.push_back(s[i] == 1 ? -1 : slot({ParamFill::kNodeDim, member_index_[n], out, i}));
    return d;
  }

  // A value from outside the member being lowered: computed (or bound) every run.
  KExpr* input(const Output& o) {
    const KExpr* guard = guard_;
    guard_ = nullptr;
    KExpr* e = unguarded_input(o);
    guard_ = guard;
    return e;
  }

  KExpr* unguarded_input(const Output& o) {
    auto key = std::make_pair(static_cast<const Node*>(o.node), o.index);
    auto it = values_.find(key);
    if (it != values_.end()) return it->second;
    const TensorSpec& s = o.node->outputs[o.index];
    KExpr* e;
    const Tensor* c = o.node->const_value();
    if (c && c->rank() == 0 && c->dtype() != DType::kBool) {
      e = make(KKind::kScalar, c->dtype(), {});
      if (is_int(c->dtype()))
        e->iscalar = c->get_int(0);
      else
        e->scalar = c->get_double(0);
    } else if (c && is_member(o.node) && is_splat(*c) && !read_by_library_step(o.node)) {
      // One value repeated (a folded zeros Fill, as a slice's gradient pads with): that
      // scalar broadcast to the constant's dims, so no kernel reads a buffer of copies.
      KExpr* v = make(KKind::kScalar, c->dtype(), {});
      if (is_int(c->dtype()))
        v->iscalar = c->get_int(0);
      else
        v->scalar = c->get_double(0);
      e = make(KKind::kUnary, c->dtype(), node_dims(o.node, o.index));
      e->op = OpId::Identity;
      e->operands = {v};
    } else if (c) {
      std::vector<int> dims;
      int ci = static_cast<int>(p_->constants.size());
      p_->constants.push_back(*c);
      for (int i = 0; i < c->rank(); ++i)
        dims.push_back(c->shape()[i] == 1 ? -1 : slot({ParamFill::kInputDim, -1 - ci, i}));
      e = make(KKind::kBuffer, c->dtype(), dims);
      e->buffer = -1 - ci;  // resolved to a buffer index after inputs are known
    } else {
      int ii = static_cast<int>(p_->inputs.size());
      p_->inputs.push_back(o);
      std::vector<int> dims;
      for (int i = 0; i < s.shape.rank(); ++i)
        dims.push_back(s.shape[i] == 1 ? -1 : slot({ParamFill::kInputDim, ii, i}));
      e = make(KKind::kBuffer, s.dtype, dims);
      e->buffer = ii;
    }
    values_[key] = e;
    return e;
  }

  // Whether a library step (a matmul) reads n's value: it takes a constant's buffer as it
  // is, where a broadcast scalar would be written out into a buffer on every run.
  bool read_by_library_step(const Node* n) const {
    for (const Node* m : p_->members)
      if (m->def().lower == LowerKind::kLibrary)
        for (const Output& i : m->inputs)
          if (i.node == n) return true;
    return false;
  }

  // A float or integer constant of more than one element, all of them the same value.
  static bool is_splat(const Tensor& c) {
    const DType dt = c.dtype();
    if (!(is_float(dt) || is_int(dt)) || c.num_elements() < 2) return false;
    if (is_int(dt)) {
      const int64_t v = c.get_int(0);
      for (int64_t i = 1; i < c.num_elements(); ++i)
        if (c.get_int(i) != v) return false;
      return true;
    }
    const double v = c.get_double(0);
    for (int64_t i = 1; i < c.num_elements(); ++i) {
      const double w = c.get_double(i);  // bit-equal: -0.0 and NaN payloads stay as they are
      if (std::memcmp(&v, &w, sizeof v) != 0) return false;
    }
    return true;
  }

  KExpr* operand(Node* n, int i) {
    const Output& o = n->inputs[i];
    if (is_member(o.node)) return values_.at({o.node, o.index});
    return input(o);
  }

  // The value of a shape-like input at compile time, when it is a constant.
  const Tensor* const_input(Node* n, int i) { return n->inputs[i].node->const_value(); }

  // Shape inputs feed run-time shape inference: a computed one must come from outside the
  // cluster (it then becomes a cluster input, passed along but never read by a kernel).
  void need_shape_input_available(Node* n) {
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (!is_shape_input(n->op, i, n->inputs.size())) continue;
      const Output& o = n->inputs[i];
      // A Shape member's value, and a small integer computed from known values (a slice
      // bound i + 1), are known before the kernels run: the runner computes them.
      if (is_member(o.node) && !o.node->const_value() && o.node->op != OpId::Shape) {
        if (!computable(o.node))
          throw_unimplemented(
              n->name, ": its shape input is computed inside the cluster from values the kernels compute");
        mark_value_before_run(o.node);
      }
      if (!is_member(o.node) && !o.node->const_value()) input(o);
    }
  }

  // Whether the runner can compute a member's value before the kernels run (prepare): a
  // small integer result of small integers that are constants, cluster inputs or computable.
  std::map<const Node*, bool> computable_;
  bool computable(const Node* m) {
    auto it = computable_.find(m);
    if (it != computable_.end()) return it->second;
    bool ok = !m->stateful() && m->outputs.size() == 1 && !(m->def().flags & kNoKernel);
    auto small_int = [](const TensorSpec& s) {
      if (!is_int(s.dtype)) return false;
      int64_t n = 1;
      for (int d = 0; d < s.shape.rank(); ++d) {
        if (s.shape[d] < 0) return false;
        n *= s.shape[d];
      }
      return n <= kMaxShapeValueElements;
    };
    ok = ok && small_int(m->outputs[0]);
    for (const Output& o : m->inputs) {
      if (!ok) break;
      if (o.node->const_value()) continue;
      if (is_member(o.node))
        ok = o.node->op == OpId::Shape || computable(o.node);
      else
        ok = small_int(o.node->outputs[o.index]);
    }
    computable_[m] = ok;
    return ok;
  }

  void mark_value_before_run(const Node* m) {
    if (p_->value_before_run.empty()) p_->value_before_run.assign(p_->members.size(), 0);
    if (m->attrs.has("_guard"))
      throw_unimplemented(m->name,
                          ": a value of an inlined If's branch feeds a shape, but the branch "
                          "may not run");
    char& flag = p_->value_before_run[member_index_.at(m)];
    if (flag) return;
    flag = 1;
    for (const Output& o : m->inputs)
      if (is_member(o.node) && !o.node->const_value() && o.node->op != OpId::Shape)
        mark_value_before_run(o.node);
  }

  // Elementwise result dims: the node's own dims; operand dims that are slots must equal
  // the output's at run time (checked before the kernels run).
  KExpr* elementwise(KKind k, Node* n, std::vector<KExpr*> ops, OpId op) {
    KExpr* e = make(k, n->outputs[0].dtype, node_dims(n, 0));
    e->op = op;
    e->node = n;
    e->operands = ops;
    // Float attrs reach the formula through the expr (internal "_" attrs are not the op's).
    for (const auto& kv : n->attrs.items())
      if (const double* v = std::get_if<double>(&kv.second); v && kv.first.rfind('_', 0) != 0)
        e->float_attrs.push_back({kv.first, *v});
    check_broadcast(e);
    return e;
  }
  void check_broadcast(KExpr* e) {
    for (KExpr* o : e->operands) {
      int off = e->rank() - o->rank();
      for (int d = 0; d < o->rank(); ++d)
        if (o->dims[d] >= 0) {
          if (e->dims[d + off] < 0) throw_unimplemented("broadcast of a dynamic dim into a static 1");
          p_->equal_slots.push_back({o->dims[d], e->dims[d + off]});
        }
    }
  }

  KExpr* reduce(KExpr* x, std::vector<int> axes, bool keep, OpId op, std::vector<int> dims) {
    KExpr* r = make(KKind::kReduce, x->dtype, std::move(dims));
    r->op = op;
    r->operands = {x};
    r->axes = std::move(axes);
    r->keep_dims = keep;
    r->materialized = true;
    return r;
  }

  // EuclideanNorm as TF's kernel computes it: sqrt(sum(x * x)); integer sums take the
  // truncated root of their float64 value, and one that wrapped negative the dtype's lowest
  // value (as the eager kernel: no float-to-int cast of a NaN).
  KExpr* euclidean_norm(Node* n, KExpr* x, const std::vector<int>& axes) {
    auto node = [&](KKind k, DType dt, OpId op, std::vector<KExpr*> operands) {
      KExpr* e = make(k, dt, operands[0]->dims);
      e->op = op;
      e->operands = std::move(operands);
      return e;
    };
    auto scalar = [&](DType dt, int64_t v) {
      KExpr* e = make(KKind::kScalar, dt, {});
      e->iscalar = v;
      return e;
    };
    KExpr* sq = node(KKind::kBinary, x->dtype, OpId::Mul, {x, x});
    KExpr* s = reduce(sq, axes, n->attrs.get<bool>("keep_dims", false), OpId::Sum, node_dims(n, 0));
    if (is_floating_type(x->dtype)) return elementwise(KKind::kUnary, n, {s}, OpId::Sqrt);
    KExpr* f = node(KKind::kCast, DType::kFloat64, OpId::Cast, {s});
    KExpr* r = node(KKind::kUnary, DType::kFloat64, OpId::Sqrt, {f});
    KExpr* root = node(KKind::kCast, x->dtype, OpId::Cast, {r});
    KExpr* negative = node(KKind::kBinary, DType::kBool, OpId::Less, {s, scalar(x->dtype, 0)});
    const int64_t lowest = x->dtype == DType::kInt32 ? INT32_MIN : INT64_MIN;
    return elementwise(KKind::kSelect, n, {negative, scalar(x->dtype, lowest), root}, OpId::SelectV2);
  }

  // Softmax and LogSoftmax over the last axis as the row's max, the exponentials of the
  // shifted row and their sum: reductions and elementwise ops that the row fusion
  // (fuse_rows.cc) runs row by row in cache, fused with the ops around them.
  //
  // Over another axis TF's graph is Transpose -> Softmax -> Transpose: the normalised axis is
  // the operand's dim `axis`, not its last. Read through the transpose, each row would be a
  // column of the data (a cache line per element, three times); instead the reductions run
  // over that dim in the operand's own layout (column reductions that stream its rows) and the
  // result is transposed back as an index map, which the outer Transpose cancels.
  KExpr* softmax(Node* n, KExpr* x) {
    const int r = x->rank();
    if (r == 0) throw_unimplemented(n->name, ": softmax of a scalar");
    if (x->kind == KKind::kTranspose && !x->materialized && x->perm.back() != r - 1) {
      KExpr* s = softmax(n, x->operands[0], x->perm.back());
      KExpr* t = make(KKind::kTranspose, s->dtype, x->dims);
      t->operands = {s};
      t->perm = x->perm;
      return t;
    }
    return softmax(n, x, r - 1);
  }
  KExpr* softmax(Node* n, KExpr* x, int axis) {
    auto op1 = [&](OpId op, KExpr* a) {
      KExpr* e = make(KKind::kUnary, a->dtype, a->dims);
      e->op = op;
      e->node = n;
      e->operands = {a};
      return e;
    };
    auto op2 = [&](OpId op, KExpr* a, KExpr* b) {
      KExpr* e = make(KKind::kBinary, a->dtype, a->dims);
      e->op = op;
      e->node = n;
      e->operands = {a, b};
      return e;
    };
    std::vector<int> per_row = x->dims;
    per_row[axis] = -1;
    KExpr* shifted = op2(OpId::Sub, x, reduce(x, {axis}, true, OpId::Max, per_row));
    KExpr* ex = op1(OpId::Exp, shifted);
    KExpr* sum = reduce(ex, {axis}, true, OpId::Sum, per_row);
    // Softmax multiplies by the sum's reciprocal, computed once per row (as TF's kernel does).
    if (n->op == OpId::Softmax) {
      KExpr* inv = op1(OpId::Reciprocal, sum);
      inv->materialized = true;
      return op2(OpId::Mul, ex, inv);
    }
    // Log-softmax keeps the shifted row (one step, summing its exponentials as it is stored,
    // in a row group) instead of subtracting the max again in the output's loop.
    shifted->materialized = true;
    return op2(OpId::Sub, shifted, op1(OpId::Log, sum));
  }

  std::vector<int> const_ints(Node* n, int i) {
    const Tensor* t = const_input(n, i);
    if (!t) throw_unimplemented(n->name, ": input ", i, " must be a constant to compile");
    auto v = t->to_int64s();
    return std::vector<int>(v.begin(), v.end());
  }

  // The condition of the If whose branch node `n` was (the merge selects of that If are
  // members: their condition operand is it), computed into a buffer before the branches.
  const KExpr* if_condition(const Node* n) {
    const std::string name = n->attrs.get<std::string>("_guard", "");
    auto it = if_conditions_.find(name);
    if (it != if_conditions_.end()) return it->second;
    Node* merge = nullptr;
    for (Node* m : p_->members)
      if (m->attrs.get<std::string>("_merge", "") == name) merge = m;
    if (!merge) throw_unimplemented(n->name, ": a node of an inlined If's branch without the If's selects");
    const KExpr* guard = guard_;
    guard_ = nullptr;
    KExpr* c = operand(merge, 0);
    if (c->kind == KKind::kScalar) {  // a constant condition still needs a buffer to test
      KExpr* id = make(KKind::kUnary, c->dtype, {});
      id->op = OpId::Identity;
      id->operands = {c};
      c = id;
    }
    if (c->kind != KKind::kBuffer) c->materialized = true;
    guard_ = guard;
    return if_conditions_[name] = c;
  }

  // One case per lowering kind of the op's record (ops.def); ops of a kind differ only in
  // what the record says (their formula, shape inputs, math function).
  void lower(Node* n) {
    guard_ = nullptr;
    guard_when_ = true;
    if (n->attrs.has("_guard")) {
      guard_ = if_condition(n);
      guard_when_ = n->attrs.get<bool>("_guard_then", true);
    }
    need_shape_input_available(n);
    std::string why;
    if (!can_emit(*n, &why)) throw_unimplemented(n->name, ": ", why);
    std::vector<KExpr*> outs;
    const OpDef& def = n->def();
    const OpId op = n->op;
    auto in = [&](int i) { return operand(n, i); };
    // The data inputs (not shape inputs), in order.
    std::vector<int> data;
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (!def.is_shape_input(i, n->inputs.size())) data.push_back(static_cast<int>(i));
    if (op == OpId::Softmax || op == OpId::LogSoftmax) {  // not the library kernel: see softmax()
      values_[{n, 0}] = softmax(n, in(0));
      return;
    }
    switch (def.lower) {
      case LowerKind::kConst:
        outs.push_back(input({n, 0}));
        break;
      case LowerKind::kView: {
        // Identity and StopGradient keep their operand's shape: the same expression, so
        // nothing re-indexes it (a reshape's index arithmetic per element) and the fusion
        // passes see the operand's dims.
        if (op == OpId::Identity || op == OpId::StopGradient) {
          outs.push_back(in(data.at(0)));
          break;
        }
        KExpr* e = make(KKind::kReshape, n->outputs[0].dtype, node_dims(n, 0));
        e->operands = {in(data.at(0))};
        map_unit_reshape(n, e);
        outs.push_back(e);
        break;
      }
      case LowerKind::kUnary:
        outs.push_back(elementwise(KKind::kUnary, n, {in(0)}, op));
        break;
      case LowerKind::kMath:
        if (def.num_inputs == 1)
          outs.push_back(elementwise(KKind::kUnary, n, {in(0)}, op));
        else
          outs.push_back(elementwise(KKind::kBinary, n, {in(0), in(1)}, op));
        break;
      case LowerKind::kBroadcast:
        outs.push_back(elementwise(KKind::kUnary, n, {in(data.at(0))}, OpId::Identity));
        break;
      case LowerKind::kFillLike: {
        // Only the operand's shape is used, but run-time shape inference needs its value
        // too: an outside operand must become a cluster input.
        in(0);
        KExpr* s = make(KKind::kScalar, n->outputs[0].dtype, {});
        s->scalar = s->iscalar = op == OpId::OnesLike ? 1 : 0;
        outs.push_back(elementwise(KKind::kUnary, n, {s}, OpId::Identity));
        break;
      }
      case LowerKind::kCast:
        outs.push_back(elementwise(KKind::kCast, n, {in(0)}, op));
        break;
      case LowerKind::kBinary: {
        KExpr* x = in(0);  // operands in order: cluster inputs are numbered as first met
        KExpr* y = in(1);
        // An NCHW BiasAdd's bias [C] broadcasts as [C, 1, ..., 1] (its channel is dim 1).
        if (op == OpId::BiasAdd && n->attrs.get<std::string>("data_format", "NHWC") == "NCHW" &&
            n->outputs[0].shape.rank() >= 3) {
          std::vector<int> d = y->dims;
          d.resize(n->outputs[0].shape.rank() - 1, -1);
          KExpr* r = make(KKind::kReshape, y->dtype, d);
          r->operands = {y};
          y = r;
        }
        outs.push_back(elementwise(KKind::kBinary, n, {x, y}, op));
        break;
      }
      case LowerKind::kSelect:
        outs.push_back(elementwise(KKind::kSelect, n, {in(0), in(1), in(2)}, op));
        break;
      case LowerKind::kAddN: {
        KExpr* acc = in(0);
        for (size_t i = 1; i < n->inputs.size(); ++i) {
          KExpr* e = make(KKind::kBinary, n->outputs[0].dtype,
                          i + 1 == n->inputs.size() ? node_dims(n, 0) : acc->dims);
          e->op = OpId::AddV2;
          e->operands = {acc, in(static_cast<int>(i))};
          if (i + 1 == n->inputs.size()) check_broadcast(e);
          acc = e;
        }
        outs.push_back(acc);
        break;
      }
      case LowerKind::kTranspose: {
        KExpr* e = make(KKind::kTranspose, n->outputs[0].dtype, node_dims(n, 0));
        e->operands = {in(0)};
        for (int v : const_ints(n, 1)) e->perm.push_back(v < 0 ? v + e->rank() : v);  // TF: [-rank, rank)
        outs.push_back(e);
        break;
      }
      case LowerKind::kReduce: {
        KExpr* x = in(0);
        std::vector<int> axes;
        for (int a : const_ints(n, 1)) axes.push_back(a < 0 ? a + x->rank() : a);
        std::sort(axes.begin(), axes.end());
        axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
        if (op == OpId::EuclideanNorm) {
          outs.push_back(euclidean_norm(n, x, axes));
          break;
        }
        outs.push_back(reduce(x, axes, n->attrs.get<bool>("keep_dims", false), op, node_dims(n, 0)));
        break;
      }
      case LowerKind::kSlice: {
        KExpr* x = in(0);
        const bool unit = op == OpId::Slice;  // Slice(begin, size): unit strides, no shrink
        SlicePlan plan = unit ? SlicePlan{} : strided_slice_plan_for(n);
        KExpr* e = make(KKind::kSlice, n->outputs[0].dtype, node_dims(n, 0));
        e->operands = {x};
        int mi = member_index_[n];
        for (int d = 0; d < x->rank(); ++d) {
          e->start_slot.push_back(slot({ParamFill::kSliceStart, mi, d}));
          e->stride_slot.push_back(unit ? -1 : slot({ParamFill::kSliceStride, mi, d}));
          e->out_of_in.push_back(unit ? d : plan.out_of_in[d]);
        }
        outs.push_back(e);
        break;
      }
      case LowerKind::kSplit: {
        // The value is the one data input; the axis is the last shape input (Split: its
        // only one, SplitV: after the sizes).
        KExpr* x = in(data.at(0));
        int axis_input = op == OpId::Split ? 0 : 2;
        const Tensor* ax = const_input(n, axis_input);
        if (!ax) throw_unimplemented(n->name, ": the split axis must be a constant");
        int axis = static_cast<int>(ax->get_int(0));
        if (axis < 0) axis += x->rank();
        int mi = member_index_[n];
        for (int k = 0; k < static_cast<int>(n->outputs.size()); ++k) {
          KExpr* e = make(KKind::kSlice, n->outputs[k].dtype, node_dims(n, k));
          e->operands = {x};
          for (int d = 0; d < x->rank(); ++d) {
            e->start_slot.push_back(d == axis ? slot({ParamFill::kSplitStart, mi, k, axis}) : -1);
            e->stride_slot.push_back(-1);
            e->out_of_in.push_back(d);
          }
          outs.push_back(e);
        }
        break;
      }
      case LowerKind::kConcat:
      case LowerKind::kStack: {
        const bool stack = def.lower == LowerKind::kStack;
        int axis;
        if (!stack) {
          const Tensor* ax = const_input(n, static_cast<int>(n->inputs.size()) - 1);
          if (!ax) throw_unimplemented(n->name, ": the concat axis must be a constant");
          axis = static_cast<int>(ax->get_int(0));
        } else {
          axis = static_cast<int>(n->attrs.get<int64_t>("axis", 0));
        }
        if (axis < 0) axis += n->outputs[0].shape.rank();
        KExpr* e = make(KKind::kConcat, n->outputs[0].dtype, node_dims(n, 0));
        for (int i : data) {
          KExpr* v = in(i);
          if (stack) {  // stack = concat of values with a new unit axis
            std::vector<int> d = v->dims;
            d.insert(d.begin() + axis, -1);
            KExpr* r = make(KKind::kReshape, v->dtype, d);
            r->operands = {v};
            v = r;
          }
          e->operands.push_back(v);
        }
        e->axes = {axis};
        outs.push_back(e);
        break;
      }
      case LowerKind::kGather: {
        if (op == OpId::TensorArrayRead) {  // buffer[index]: the row at a scalar index
          KExpr* e = make(KKind::kGather, n->outputs[0].dtype, node_dims(n, 0));
          e->node = n;
          e->operands = {in(0), array_index(n)};
          e->axes = {0};
          outs.push_back(e);
          break;
        }
        KExpr* p = in(0);
        KExpr* e = make(KKind::kGather, n->outputs[0].dtype, node_dims(n, 0));
        e->node = n;
        e->operands = {p, in(1)};
        int axis = const_ints(n, 2).at(0);
        e->axes = {axis < 0 ? axis + p->rank() : axis};
        int bd = static_cast<int>(n->attrs.get<int64_t>("batch_dims", 0));
        e->batch_dims = bd < 0 ? bd + e->operands[1]->rank() : bd;
        outs.push_back(e);
        break;
      }
      case LowerKind::kGatherNd: {  // the index depth is indices.rank - 1 + params.rank - out.rank
        KExpr* e = make(KKind::kGatherNd, n->outputs[0].dtype, node_dims(n, 0));
        e->node = n;
        e->operands = {in(0), in(1)};
        outs.push_back(e);
        break;
      }
      case LowerKind::kOneHot: {
        KExpr* e = make(KKind::kOneHot, n->outputs[0].dtype, node_dims(n, 0));
        e->operands = {in(0), in(2), in(3)};
        int axis = static_cast<int>(n->attrs.get<int64_t>("axis", -1));
        e->axes = {axis < 0 ? e->rank() - 1 : axis};
        outs.push_back(e);
        break;
      }
      case LowerKind::kRandom: {  // the state (and an int range): formulas_random.cc
        KExpr* e = make(KKind::kRandom, n->outputs[0].dtype, node_dims(n, 0));
        e->op = op;
        e->node = n;
        for (int i : data) e->operands.push_back(in(i));
        outs.push_back(e);
        break;
      }
      case LowerKind::kIndexMap:
        outs.push_back(index_map(n));
        break;
      case LowerKind::kArgReduce: {
        KExpr* x = in(0);
        int axis = const_ints(n, 1).at(0);
        KExpr* e = make(KKind::kArgReduce, n->outputs[0].dtype, node_dims(n, 0));
        e->op = op;
        e->operands = {x};
        e->axes = {axis < 0 ? axis + x->rank() : axis};
        e->materialized = true;  // a loop root, like a reduction
        outs.push_back(e);
        break;
      }
      case LowerKind::kShape: {
        KExpr* e = make(KKind::kShapeOf, n->outputs[0].dtype, node_dims(n, 0));
        e->operands = {in(0)};  // an outside operand becomes a cluster input: shape inference reads it
        outs.push_back(e);
        break;
      }
      // Library steps: Eigen's GEMM, scans, top-k (softmax is decomposed above).
      case LowerKind::kLibrary: {
        // One buffer per output (TopKV2's values and indices): the first is the step's root,
        // the others its siblings, all written by the one kernel call.
        Step s{Step::kLibrary, nullptr, n, {}};
        for (int k = 0; k < static_cast<int>(n->outputs.size()); ++k) {
          KExpr* e = make(KKind::kBuffer, n->outputs[k].dtype, node_dims(n, k));
          e->materialized = true;
          (k == 0 ? s.root : s.siblings.emplace_back()) = e;
          outs.push_back(e);
        }
        for (size_t i = 0; i < n->inputs.size(); ++i) s.args.push_back(in(static_cast<int>(i)));
        if (n->op == OpId::MatMul)
          s.dot = {n->attrs.get<bool>("transpose_a", false), n->attrs.get<bool>("transpose_b", false)};
        pending_matmuls_.push_back(s);
        break;
      }
      case LowerKind::kEager:
      case LowerKind::kGraph:
        throw_unimplemented(n->name, ": no emitter for ", n->type());  // can_emit refused it
    }
    for (int i = 0; i < static_cast<int>(outs.size()); ++i) values_[{n, i}] = outs[i];
  }

  // A reshape that only inserts or removes 1s (a gradient's [1, b, t, h, d] of [b, t, h, d])
  // reads its operand at the same index with the 1s dropped: out_of_in gives, per operand
  // dim, the output dim indexing it (-1: a static 1), instead of a divide per dim to split
  // the linear index. The paired dims are checked equal at run time (equal_slots); shapes
  // where they are not run a specialization, lowered without the mapping: its graph's shapes
  // are one run's, and other runs it serves may factor the reshape differently.
  void map_unit_reshape(const Node* n, KExpr* e) {
    if (shapes_vary_) return;
    const Output& src = n->inputs[0];
    const Shape &from = src.node->outputs[src.index].shape, &to = n->outputs[0].shape;
    const KExpr* x = e->operands[0];
    if (x->rank() != from.rank()) return;
    std::vector<int> of(from.rank(), -1);
    int j = 0;
    for (int d = 0; d < from.rank(); ++d) {
      if (from[d] == 1) continue;
      while (j < to.rank() && to[j] == 1) ++j;
      if (from[d] < 0 || j == to.rank() || to[j] != from[d] || x->dims[d] < 0 || e->dims[j] < 0) return;
      of[d] = j++;
    }
    for (; j < to.rank(); ++j)
      if (to[j] != 1) return;
    for (int d = 0; d < from.rank(); ++d)
      if (of[d] >= 0) p_->equal_slots.push_back({x->dims[d], e->dims[of[d]]});
    e->out_of_in = std::move(of);
  }

  // ReverseV2, Tile, PadV2, MirrorPad, Roll: one DimMapKind (and parameter) per dim, from
  // the op's constant shape inputs.
  KExpr* index_map(Node* n) {
    KExpr* x = operand(n, 0);
    const int r = x->rank();
    KExpr* e = make(KKind::kIndexMap, n->outputs[0].dtype, node_dims(n, 0));
    e->operands = {x};
    e->map_kind.assign(r, static_cast<int>(DimMapKind::kSame));
    e->map_param.assign(r, 0);
    auto set = [&](int d, DimMapKind k, int64_t p) {
      e->map_kind[d] = static_cast<int>(k);
      e->map_param[d] = p;
    };
    switch (n->op) {
      case OpId::ReverseV2:
        for (int a : const_ints(n, 1)) set(a < 0 ? a + r : a, DimMapKind::kReverse, 0);
        break;
      case OpId::Tile:
        for (int d = 0; d < r; ++d) set(d, DimMapKind::kTile, 0);
        break;
      case OpId::PadV2:
      case OpId::MirrorPad: {
        std::vector<int> pads = const_ints(n, 1);
        DimMapKind k = DimMapKind::kPad;
        if (n->op == OpId::MirrorPad)
          k = n->attrs.get<std::string>("mode", "REFLECT") == "SYMMETRIC" ? DimMapKind::kSymmetric
                                                                          : DimMapKind::kReflect;
        for (int d = 0; d < r; ++d)
          set(d, pads[2 * d] || pads[2 * d + 1] ? k : DimMapKind::kSame, pads[2 * d]);
        if (n->op == OpId::PadV2) e->operands.push_back(operand(n, 2));
        break;
      }
      case OpId::Roll: {
        std::vector<int> shift = const_ints(n, 1), axes = const_ints(n, 2);
        for (size_t k = 0; k < axes.size(); ++k) {
          int d = axes[k] < 0 ? axes[k] + r : axes[k];
          set(d, DimMapKind::kRoll, e->map_param[d] + shift[k]);  // shifts of one axis add up
        }
        break;
      }
      default:
        throw_unimplemented(n->name, ": no index map for ", n->type());
    }
    return e;
  }

  SlicePlan strided_slice_plan_for(Node* n) {
    std::vector<Tensor> views;
    for (const Output& o : n->inputs) {
      const Tensor* c = o.node->const_value();
      views.push_back(c ? *c
                        : Tensor(o.node->outputs[o.index].dtype, o.node->outputs[o.index].shape, nullptr));
    }
    OpCall call(&n->def(), views, n->attrs);
    if (views[1].buffer() && views[2].buffer() && views[3].buffer())
      return strided_slice_plan(call, views[0].shape(), views[1].to_int64s(), views[2].to_int64s(),
                                views[3].to_int64s());
    // Bounds computed at run time: which output dim reads each input dim follows from the
    // masks alone (the starts and strides are run-time parameters), so plan with stand-ins.
    int64_t nb = views[1].shape()[0];
    Shape big;
    for (int d = 0; d < views[0].rank(); ++d) big.push_back(int64_t(1) << 30);
    return strided_slice_plan(call, big, std::vector<int64_t>(nb, 0), std::vector<int64_t>(nb, 1),
                              std::vector<int64_t>(nb, 1));
  }

  std::vector<Step> pending_matmuls_;

  void collect_outputs() {
    std::vector<bool> used_outside(0);
    auto add_output = [&](const Output& o) {
      for (const Output& x : p_->outputs)
        if (x.node == o.node && x.index == o.index) return;
      p_->outputs.push_back(o);
    };
    for (const auto& np : g_.nodes()) {
      if (is_member(np.get())) continue;
      for (const Output& o : np->inputs)
        if (is_member(o.node)) add_output(o);
    }
    for (const Output& o : g_.outputs)
      if (is_member(o.node)) add_output(o);
    // A check's value is an output: materialized, every element is checked, even where its
    // consumers read a few elements or none.
    for (Node* m : p_->members)
      if (m->def().flags & kCheck) add_output({m, 0});
  }

  // A TensorArrayRead's index for the gather, whose check covers [0, capacity): an index at
  // or past the array's size (below its capacity when a growing array doubled it) becomes -1,
  // so the gather's check fails it too.
  KExpr* array_index(Node* n) {
    KExpr* ix = operand(n, 2);
    const Tensor* size = const_input(n, 1);
    const int64_t capacity = n->inputs[0].node->outputs[n->inputs[0].index].shape[0];
    if (size && capacity >= 0 && size->get_int(0) == capacity) return ix;
    KExpr* sz = operand(n, 1);
    if (sz->dtype != ix->dtype) {
      KExpr* c = make(KKind::kCast, ix->dtype, sz->dims);
      c->op = OpId::Cast;
      c->operands = {sz};
      sz = c;
    }
    KExpr* below = make(KKind::kBinary, DType::kBool, {});
    below->op = OpId::Less;
    below->operands = {ix, sz};
    KExpr* outside = make(KKind::kScalar, ix->dtype, {});
    outside->iscalar = -1;
    KExpr* e = make(KKind::kSelect, ix->dtype, {});
    e->op = OpId::SelectV2;
    e->operands = {below, ix, outside};
    return e;
  }

  // A TensorArrayWrite may write into its array's buffer when it is that value's only reader
  // and the value is no output (an array read in the same iteration keeps its old rows).
  void mark_in_place_writes() {
    for (Step& s : pending_matmuls_) {
      if (s.node->op != OpId::TensorArrayWrite) continue;
      const Output& a = s.node->inputs[0];
      int readers = 0;
      for (const Node* m : p_->members)
        for (const Output& o : m->inputs) readers += o.node == a.node && o.index == a.index;
      bool output = false;
      for (const Output& o : p_->outputs) output = output || (o.node == a.node && o.index == a.index);
      s.in_place = readers == 1 && !output;
    }
  }

  // Half types compute in float32 and round where they are stored (half_float.h).
  void compute_halves() {
    std::vector<StoredValue> stored;
    for (const Output& o : p_->outputs)
      stored.push_back({&values_.at({o.node, o.index}), o.node->outputs[o.index].dtype});
    compute_halves_in_float32(p_.get(), &pending_matmuls_, stored);
  }

  // Whether some element of `o` feeds several elements of `e` (numpy broadcasting).
  static bool is_broadcast(const KExpr* o, const KExpr* e) {
    int off = e->rank() - o->rank();
    if (off > 0) return true;
    for (int d = 0; d < o->rank(); ++d)
      if (o->dims[d] < 0 && e->dims[d + off] >= 0) return true;
    return false;
  }

  // A library step reads a reshape of a value from that value's buffer: the runner hands the
  // kernel the buffer with the node's input shape. Materializing the reshape instead would
  // copy every element through a divide per index (the reshape of a transposed gradient to a
  // matrix took 11 of an attention step's 50 ms), where the value's own loop walks its rows.
  static KExpr* reshape_source(KExpr* a) {
    while (a->kind == KKind::kReshape && !a->materialized) a = a->operands[0];
    return a;
  }

  // Decides which expressions get their own buffer, and orders the steps.
  void plan_materialization() {
    // Constant buffers follow the inputs.
    int nin = static_cast<int>(p_->inputs.size());
    p_->num_buffers = nin + static_cast<int>(p_->constants.size());
    p_->buffer_expr.assign(p_->num_buffers, nullptr);
    for (auto& e : p_->exprs) {
      if (e->kind == KKind::kBuffer && e->buffer < 0 && !e->materialized) e->buffer = nin + (-1 - e->buffer);
      if (e->kind == KKind::kBuffer && !e->materialized) p_->buffer_expr[e->buffer] = e.get();
    }
    for (auto& f : p_->fills)
      if (f.kind == ParamFill::kInputDim && f.a < 0) f.a = nin + (-1 - f.a);
    std::vector<int> uses(p_->exprs.size(), 0);
    for (auto& e : p_->exprs)
      for (KExpr* o : e->operands) uses[o->id]++;
    for (const Step& s : pending_matmuls_)
      for (KExpr* a : s.args) uses[a->id]++;
    std::vector<bool> expensive(p_->exprs.size(), false);
    for (auto& e : p_->exprs) {
      bool x = ((e->kind == KKind::kUnary || e->kind == KKind::kBinary) &&
                op_def(e->op).cost == Cost::kTranscendental) ||
               e->kind == KKind::kRandom;  // ten Philox rounds per element: computed once
      for (KExpr* o : e->operands) x |= expensive[o->id] && !o->materialized;
      expensive[e->id] = x;
    }
    for (auto& e : p_->exprs)
      if (uses[e->id] > 1 && expensive[e->id] && e->kind != KKind::kBuffer) e->materialized = true;
    // An expensive value broadcast into a larger one (Adam's bias correction, a scalar of
    // two pows, scaling every parameter) is computed once per own element, not per use.
    for (auto& e : p_->exprs) {
      // Gathers and index maps may read an element many times (tile, repeated indices).
      bool rereads = e->kind == KKind::kGather || e->kind == KKind::kIndexMap || e->kind == KKind::kGatherNd;
      if (!is_elementwise(e->kind) && !rereads) continue;
      for (KExpr* o : e->operands)
        if (expensive[o->id] && o->kind != KKind::kBuffer && (rereads || is_broadcast(o, e.get())))
          o->materialized = true;
    }
    for (Step& s : pending_matmuls_)
      for (KExpr*& a : s.args) {
        a = reshape_source(a);
        if (a->kind != KKind::kBuffer) a->materialized = true;
      }
    guard_values(uses);
    for (const Output& o : p_->outputs) {
      KExpr* e = values_.at({o.node, o.index});
      if (auto m = merged_.find(e); m != merged_.end()) e = m->second;  // the branches' one buffer
      if (e->kind == KKind::kBuffer && !e->materialized) {
        // An input passed straight through: copy it so every output has its own buffer.
        KExpr* c = make(KKind::kUnary, e->dtype, e->dims);
        c->op = OpId::Identity;
        c->operands = {e};
        e = c;
      }
      e->materialized = true;
      p_->output_exprs.push_back(e);
    }
    // Steps in expression order (a topological order); matmuls at their result's position.
    for (auto& e : p_->exprs) {
      if (!e->materialized) continue;
      auto partner = partner_.find(e.get());
      e->buffer = partner != partner_.end() && partner->second->buffer >= 0 ? partner->second->buffer
                                                                            : new_buffer(e.get());
      bool is_mm = false;
      for (const Step& s : pending_matmuls_) {
        if (s.root == e.get()) p_->steps.push_back(s), is_mm = true;
        for (const KExpr* o : s.siblings) is_mm |= o == e.get();  // written by its library step
      }
      if (!is_mm) p_->steps.push_back({Step::kLoop, e.get(), nullptr, {}});
    }
    for (Step& s : p_->steps)
      if (s.root->guard) {
        s.guard = s.root->guard->buffer;
        s.guard_when = s.root->guard_when;
      }
  }

  static bool same_guard(const KExpr* a, const KExpr* b) {
    return a->guard == b->guard && (!a->guard || a->guard_when == b->guard_when);
  }

  // A step computes values of one guard. A branch value read elsewhere (by the If's merge
  // select) is stored by its branch's step; a value computed every run whose computation may
  // raise (an integer division, a gather's index check) is not fused into a branch's step,
  // where the error would be missed when the branch does not run.
  void guard_values(const std::vector<int>& uses) {
    auto leaf = [](const KExpr* o) {
      return o->kind == KKind::kBuffer || o->kind == KKind::kScalar || o->materialized;
    };
    auto split = [&](const KExpr* user, KExpr* o) {
      if (leaf(o) || same_guard(user, o)) return;
      std::set<const KExpr*> seen;
      if (o->guard || (user->guard && may_fail(o, o, &seen))) o->materialized = true;
    };
    for (auto& e : p_->exprs)
      for (KExpr* o : e->operands) split(e.get(), o);
    for (const Step& s : pending_matmuls_)
      for (KExpr* a : s.args) split(s.root, a);
    share_branch_buffers(uses);
  }

  // An If's select whose two sides are loop steps of its own branches, each read by nothing but
  // the select: both steps write one buffer (one of them runs), and the If's value is that
  // buffer, so no select runs to copy it.
  std::map<const KExpr*, KExpr*> partner_;  // a side's step -> the other side's
  std::map<const KExpr*, KExpr*> merged_;   // such a select -> its then side
  // uses: reads by other values and library steps (plan_materialization's count).
  void share_branch_buffers(std::vector<int> uses) {
    for (const Output& o : p_->outputs) uses[values_.at({o.node, o.index})->id]++;
    for (auto& e : p_->exprs) {
      if (e->kind != KKind::kSelect || !e->node || !e->node->attrs.has("_merge")) continue;
      auto cond = if_conditions_.find(e->node->attrs.get<std::string>("_merge", ""));
      if (cond == if_conditions_.end()) continue;  // no branch node computes anything (x or y)
      const KExpr* c = cond->second;
      KExpr *t = e->operands[1], *f = e->operands[2];
      auto own = [&](const KExpr* x, bool when) {
        return x->guard == c && x->guard_when == when && x->materialized && x->kind != KKind::kBuffer &&
               x->kind != KKind::kScalar && uses[x->id] == 1 && x->dtype == e->dtype &&
               x->rank() == e->rank();
      };
      if (!own(t, true) || !own(f, false)) continue;
      partner_[t] = f;
      partner_[f] = t;
      merged_[e.get()] = t;
    }
  }

  void fingerprint() {
    std::ostringstream os;
    auto dims = [&](const KExpr* e) {
      os << "[";
      for (int d : e->dims) os << d << ",";
      os << "]";
    };
    for (auto& e : p_->exprs) {
      os << e->id << ":" << int(e->kind) << "/" << int(e->op) << "/" << dtype_name(e->dtype);
      dims(e.get());
      os << "(";
      for (KExpr* o : e->operands) os << o->id << ",";
      // Immediates by their exact bits: kernels differing only in a constant must not share
      // a compile-cache entry.
      uint64_t bits;
      std::memcpy(&bits, &e->scalar, sizeof bits);
      os << ")b" << e->buffer << "m" << e->materialized << "s" << bits << "i" << e->iscalar << "k"
         << e->keep_dims;
      for (const auto& kv : e->float_attrs) {
        std::memcpy(&bits, &kv.second, sizeof bits);
        os << "F" << kv.first << "=" << bits;
      }
      for (int v : e->perm) os << "p" << v;
      for (int v : e->axes) os << "a" << v;
      os << "g" << e->batch_dims;
      for (size_t i = 0; i < e->map_kind.size(); ++i) os << "M" << e->map_kind[i] << "," << e->map_param[i];
      for (size_t i = 0; i < e->start_slot.size(); ++i)
        os << "S" << e->start_slot[i] << "," << e->stride_slot[i] << "," << e->out_of_in[i];
      if (e->kind == KKind::kReshape)  // a unit reshape's index mapping (map_unit_reshape)
        for (int v : e->out_of_in) os << "R" << v;
      os << ";";
    }
    for (const Step& s : p_->steps) {
      os << "|" << s.kind << ":" << s.root->id << (s.in_place ? "w" : "");
      if (s.guard >= 0) os << "G" << s.guard << (s.guard_when ? "t" : "f");
      // A small product's code reads its operands as the node's attrs lay them out.
      if (is_small_dot_step(s)) os << "D" << s.dot.transpose_a << s.dot.transpose_b;
      for (const KExpr* e : s.siblings) os << "+" << e->id;
    }
    os << "|P" << p_->num_params << "B" << p_->num_buffers;
    p_->fingerprint = os.str();
  }
};

}  // namespace

// From the record: Eager and Graph ops never compile; others compile for the dtypes their
// JIT column covers (of the main operand; no data input: the output's).
// Gathers and index maps take their axes, paddings and shifts into the generated code.
static bool shape_inputs_constant(const Node& n, std::string* why) {
  const OpDef& def = n.def();
  // OneHot's depth only sizes its output (run-time shape inference), so a class count
  // computed at run time (a dim of a Shape) compiles; the emitter never reads it.
  if (def.lower != LowerKind::kGather && def.lower != LowerKind::kIndexMap &&
      def.lower != LowerKind::kArgReduce)
    return true;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (def.is_shape_input(i, n.inputs.size()) && !n.inputs[i].node->const_value()) {
      *why = str_cat(n.type(), ": its input ", i,
                     " (axes, paddings, shifts or depth) is computed at run time; "
                     "it compiles when that input is a constant");
      return false;
    }
  return true;
}

// A TensorArray's read and write compile in their static form: a scalar index, an array of
// one element shape, a write neither accumulating nor growing the array. Other forms (a dynamic_size array's
// writes, the gradient's accumulators, gathers and scatters) stay on the executor, which writes them in
// place.
static bool tensor_array_static(const Node& n, std::string* why) {
  auto shape = [&](int i) -> const Shape& { return n.inputs[i].node->outputs[n.inputs[i].index].shape; };
  const Shape& buf = shape(0);
  const bool write = n.op == OpId::TensorArrayWrite;
  if (shape(write ? 1 : 2).rank() != 0 || buf.rank() < 1) {
    *why = str_cat(n.type(),
                   ": compiles at a scalar index only (a gather, scatter or unstack stays on the executor)");
    return false;
  }
  if (!write) return true;
  if (n.attrs.get<int64_t>("mode", 0) == 1) {
    *why = str_cat(n.type(), ": a write that may grow the array (dynamic_size=True) stays on the executor");
    return false;
  }
  if (n.attrs.get<bool>("accumulate", false) || shape(2).rank() != buf.rank() - 1) {
    *why = str_cat(n.type(), ": compiles only setting one element (this write accumulates into it)");
    return false;
  }
  return true;
}

bool can_emit(const Node& n, std::string* why) {
  const OpDef& def = n.def();
  for (const auto& o : n.outputs)  // Cast to a dtype the emitters lack: its input passed below
    if (o.dtype != DType::kInvalid && !has_type(kAllTypes | kHalfTypes | kStringTypes, o.dtype)) {
      *why = str_cat("no emitter for ", n.type(), " producing ", dtype_name(o.dtype), " (", NEW_DTYPES_EAGER,
                     ")");
      return false;
    }
  if (def.jit.types == kNoTypes) {
    *why = str_cat("no JIT emitter for ", n.type(), " (", def.jit.reason, ")");
    return false;
  }
  if (def.lower == LowerKind::kRandom && is_half(n.outputs.at(0).dtype)) {
    *why = str_cat("no emitter for ", n.type(), " producing ", dtype_name(n.outputs[0].dtype),
                   " (TF draws half-float samples by its own bit recipe, which runs eagerly)");
    return false;
  }
  int mi = def.main_input(n.inputs.size());
  DType dt = mi < 0 ? n.outputs.at(0).dtype : n.inputs[mi].node->outputs[n.inputs[mi].index].dtype;
  if (!has_type(def.jit.types, dt)) {
    *why = str_cat("no emitter for ", n.type(), " on ", dtype_name(dt));
    if (def.jit.reason) *why += str_cat(" (", def.jit.reason, ")");
    return false;
  }
  // A slice whose bounds are computed at run time (x[i], x[i:] with a traced i) compiles: the
  // runner computes the bounds before the kernels run (see Lowering::computable).
  if (def.lower == LowerKind::kSlice && n.op == OpId::StridedSlice) {
    const Shape& bounds = n.inputs[1].node->outputs[n.inputs[1].index].shape;
    if (bounds.rank() == 1 && bounds[0] < 0) {
      *why = "the number of slice bounds is not known";
      return false;
    }
  }
  if (n.op == OpId::TensorArrayRead || n.op == OpId::TensorArrayWrite) return tensor_array_static(n, why);
  return shape_inputs_constant(n, why);
}

bool is_shape_input(OpId op, size_t i, size_t n) { return op_def(op).is_shape_input(i, n); }

bool has_loop_driver(const ClusterProgram& p) {
  if (!p.loop || p.steps.empty()) return false;
  for (const Step& s : p.steps) {
    const bool array_write = s.kind == Step::kLibrary && s.node->op == OpId::TensorArrayWrite && s.in_place;
    if (s.kind != Step::kLoop && !is_small_dot_step(s) && !array_write) return false;
  }
  return true;
}

bool writes_array_in_place(const ClusterProgram& p, int in, int out) {
  for (const Step& s : p.steps)
    if (s.kind == Step::kLibrary && s.node->op == OpId::TensorArrayWrite && s.in_place &&
        s.root->buffer == out && s.args[0]->buffer == in)
      return true;
  return false;
}

void set_loop_plan(ClusterProgram* p, LoopPlan plan) {
  std::string f = "|L" + std::to_string(plan.cond);
  for (const auto& [in, out] : plan.swaps) f += "," + std::to_string(in) + ">" + std::to_string(out);
  p->fingerprint += f;
  p->loop = std::move(plan);
}

bool may_fail(const KExpr* e, const KExpr* root, std::set<const KExpr*>* seen) {
  if (e->kind == KKind::kBuffer || (e->materialized && e != root) || !seen->insert(e).second) return false;
  if (e->kind == KKind::kGather || e->kind == KKind::kGatherNd || e->kind == KKind::kRandom) return true;
  if (op_def(e->op).flags & kCheck) return true;
  if (e->kind == KKind::kBinary && integer_form_checks(e->op, e->operands[0]->dtype)) return true;
  for (const KExpr* o : e->operands)
    if (may_fail(o, root, seen)) return true;
  return false;
}

bool is_small_dot_step(const Step& s) {
  if (s.kind != Step::kLibrary || s.node->op != OpId::MatMul || s.args.size() != 2) return false;
  const DType t = s.node->outputs[0].dtype;
  if ((t != DType::kFloat32 && t != DType::kFloat64) || s.root->dtype != t) return false;
  return s.root->rank() == 2;
}

std::unique_ptr<ClusterProgram> lower_cluster(const Graph& g, const std::vector<Node*>& members,
                                              std::string* why) {
  return Lowering(g, members).run(why);
}

// Declared where it is used (runtime/cluster_runner.cc: a specialization's program).
std::unique_ptr<ClusterProgram> lower_cluster_for_varying_shapes(const Graph& g,
                                                                 const std::vector<Node*>& members,
                                                                 std::string* why) {
  return Lowering(g, members, /*shapes_vary=*/true).run(why);
}

}  // namespace jf
