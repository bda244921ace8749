// Row-reduction fusion over kernel IR. Softmax, layer norm and their gradients lower to a few
// loop steps over one [rows..., width] shape: reductions over the last axis (a max, a sum, a
// mean) and elementwise steps that read them per row. Run one after another over the whole
// tensor, each step streams the data from memory again. Grouped, the steps run row by row:
// every part of the group finishes a row before the next row starts, so the row is read from
// memory once and stays in cache for the later parts, and a full-row value only the group
// reads (softmax's exponentials) lives in a one-row scratch buffer instead of memory.
//
// A step joins the open group when its values are rows of the group's shape (full rows, or
// one value per row) and everything it reads from earlier parts is read in its own row: only
// elementwise ops (broadcasting a per-row value along the row) and reshapes between row
// shapes lie on the way. A group without a reduction is left as plain steps.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "codegen/kernel_ir.h"
#include "codegen/slot_classes.h"

namespace jf {
namespace {

enum class RowShape { kNone, kPerRow, kFullRow };

struct Group {
  std::vector<int> row;  // slots of the outer dims
  int width = -1;
  std::vector<Step> parts;
  bool has_reduction = false;
};

class RowFuser {
 public:
  explicit RowFuser(ClusterProgram* p) : p_(p), sc_(*p) {
    // A reduction's kept dims are its operand's, though lowering may give the reduction node
    // slots of its own (TF's Sum has its own output shape): without this, a cross-entropy's
    // final sum over the last axis would not be seen reading rows of the group's shape.
    for (const auto& e : p->exprs) {
      if (e->kind != KKind::kReduce && e->kind != KKind::kArgReduce) continue;
      const KExpr* x = e->operands[0];
      int out = 0;
      for (int d = 0; d < x->rank() && out < e->rank(); ++d) {
        const bool reduced = std::find(e->axes.begin(), e->axes.end(), d) != e->axes.end();
        if (reduced && !e->keep_dims) continue;
        if (!reduced) sc_.unite(e->dims[out], x->dims[d]);
        ++out;
      }
    }
  }

  int run() {
    std::vector<Step> out;
    Group g;
    bool open = false;
    int groups = 0;
    auto close = [&] {
      if (!open) return;
      open = false;
      if (!g.has_reduction || g.parts.size() < 2) {
        for (Step& s : g.parts) out.push_back(std::move(s));
        return;
      }
      canonicalize_dims(g);
      Step s{Step::kRowGroup, g.parts.front().root, nullptr, {}};
      s.guard = g.parts.front().guard;
      s.guard_when = g.parts.front().guard_when;
      s.parts = std::move(g.parts);
      s.row_dims = g.row;
      s.width = g.width;
      out.push_back(std::move(s));
      ++groups;
    };
    for (Step& s : p_->steps) {
      if (open && joins(g, s)) {
        g.has_reduction |= is_row_reduction(s.root, g);
        g.parts.push_back(std::move(s));
        continue;
      }
      close();
      Group fresh;
      if (starts(s, &fresh)) {
        g = std::move(fresh);
        g.has_reduction = is_row_reduction(s.root, g);
        g.parts.push_back(std::move(s));
        open = true;
        continue;
      }
      out.push_back(std::move(s));
    }
    close();
    p_->steps = std::move(out);
    if (groups) mark_row_local();
    return groups;
  }

 private:
  ClusterProgram* p_;
  SlotClasses sc_;

  // The values a group computes and reads name the row and width dims by the group's own
  // slots where their slots are of the same class (equal at run time), so the kernel computes
  // one index per element: with a slot of its own, a reduction's operand would index a row
  // kept in scratch through another parameter, and LLVM, unable to see that the loads are the
  // stores of the same iteration, would guard the vectorized loop with an overlap check that
  // always fails.
  void canonicalize_dims(const Group& g) {
    const int k = static_cast<int>(g.row.size());
    std::set<KExpr*> seen;
    std::vector<KExpr*> todo;
    for (const Step& q : g.parts) {
      todo.push_back(q.root);
      todo.insert(todo.end(), q.siblings.begin(), q.siblings.end());
    }
    while (!todo.empty()) {
      KExpr* e = todo.back();
      todo.pop_back();
      if (!seen.insert(e).second) continue;
      const RowShape shape = shape_of(e, g);
      if (shape != RowShape::kNone) {
        for (int d = 0; d < k; ++d) e->dims[d] = e->dims[d] < 0 ? e->dims[d] : g.row[d];
        if (shape == RowShape::kFullRow) e->dims[k] = g.width;
      }
      for (KExpr* o : e->operands) todo.push_back(o);
    }
  }

  // What a value is to the group: full rows [rows..., width], one value per row ([rows...]
  // or [rows..., 1]), or neither.
  RowShape shape_of(const KExpr* e, const Group& g) {
    const int k = static_cast<int>(g.row.size());
    auto rows_match = [&] {
      for (int d = 0; d < k; ++d)
        if (!sc_.same_slot(e->dims[d], g.row[d])) return false;
      return true;
    };
    if (e->rank() == k) return rows_match() ? RowShape::kPerRow : RowShape::kNone;
    if (e->rank() != k + 1 || !rows_match()) return RowShape::kNone;
    if (sc_.same_slot(e->dims[k], g.width)) return RowShape::kFullRow;
    return e->dims[k] < 0 ? RowShape::kPerRow : RowShape::kNone;
  }

  // A reduction (or arg-reduction) of full rows over their last axis only.
  bool is_row_reduction(const KExpr* e, const Group& g) {
    if (e->kind != KKind::kReduce && e->kind != KKind::kArgReduce) return false;
    const KExpr* x = e->operands[0];
    return e->axes.size() == 1 && e->axes[0] == x->rank() - 1 && shape_of(x, g) == RowShape::kFullRow &&
           shape_of(e, g) == RowShape::kPerRow;
  }

  // A new group around s: a row reduction, or a full-row loop a reduction may follow.
  bool starts(const Step& s, Group* g) {
    if (s.kind != Step::kLoop) return false;
    const KExpr* r = s.root;
    const KExpr* x = r->kind == KKind::kReduce || r->kind == KKind::kArgReduce ? r->operands[0] : r;
    if (x->rank() == 0 || x->dims.back() < 0) return false;  // no row to keep in cache
    g->row.assign(x->dims.begin(), x->dims.end() - 1);
    g->width = x->dims.back();
    if (x == r) return shape_of(r, *g) == RowShape::kFullRow && readable_in_row(s, *g);
    return is_row_reduction(r, *g) && readable_in_row(s, *g);
  }

  bool joins(const Group& g, const Step& s) {
    if (s.kind != Step::kLoop) return false;
    const Step& first = g.parts.front();  // a group runs whole or not at all
    if (s.guard != first.guard || s.guard_when != first.guard_when) return false;
    const KExpr* r = s.root;
    if (r->kind == KKind::kReduce || r->kind == KKind::kArgReduce) {
      if (!is_row_reduction(r, g)) return false;
    } else if (shape_of(r, g) == RowShape::kNone) {
      return false;
    }
    for (const KExpr* sib : s.siblings)
      if (!sc_.same_dims(sib, r)) return false;
    return readable_in_row(s, g, &g.parts);
  }

  // Whether the operand `o` of `e`, read at e's index in some row, is read in that same row.
  bool same_row(const KExpr* e, const KExpr* o, const Group& g) {
    if (is_elementwise(e->kind)) {
      const int k = static_cast<int>(g.row.size());
      const int off = e->rank() - o->rank();
      for (int d = 0; d < k && d < e->rank(); ++d) {
        if (e->dims[d] < 0) continue;
        if (d - off < 0 || !sc_.same_slot(o->dims[d - off], e->dims[d])) return false;
      }
      return true;
    }
    if (e->kind == KKind::kReshape) {
      RowShape a = shape_of(e, g), b = shape_of(o, g);
      return a != RowShape::kNone && a == b;
    }
    if (e->kind == KKind::kReduce || e->kind == KKind::kArgReduce) return is_row_reduction(e, g);
    return false;
  }

  // Every value s reads that an earlier part computes is read in the row being computed.
  bool readable_in_row(const Step& s, const Group& g, const std::vector<Step>* parts = nullptr) {
    std::set<const KExpr*> made;
    if (parts)
      for (const Step& q : *parts) {
        made.insert(q.root);
        for (const KExpr* sib : q.siblings) made.insert(sib);
      }
    std::vector<const KExpr*> tops{s.root};
    tops.insert(tops.end(), s.siblings.begin(), s.siblings.end());
    std::set<std::pair<const KExpr*, bool>> seen;
    std::vector<std::pair<const KExpr*, bool>> todo;
    for (const KExpr* t : tops) {
      if (shape_of(t, g) == RowShape::kNone) return false;
      todo.push_back({t, true});
    }
    std::set<const KExpr*> top_set(tops.begin(), tops.end());
    while (!todo.empty()) {
      auto [e, in_row] = todo.back();
      todo.pop_back();
      if (!top_set.count(e) && (e->kind == KKind::kBuffer || e->materialized)) {
        if (made.count(e) && !in_row) return false;
        continue;
      }
      if (!seen.insert({e, in_row}).second) continue;
      for (const KExpr* o : e->operands) todo.push_back({o, in_row && same_row(e, o, g)});
    }
    return true;
  }

  // Full-row values of a group that nothing outside it reads (no other step, no output).
  void mark_row_local() {
    std::set<const KExpr*> read_outside;
    for (const KExpr* e : p_->output_exprs) read_outside.insert(e);
    auto reads_of = [&](const KExpr* top, std::set<const KExpr*>* into) {
      std::set<const KExpr*> seen;
      std::vector<const KExpr*> todo{top};
      while (!todo.empty()) {
        const KExpr* e = todo.back();
        todo.pop_back();
        if (e != top && (e->kind == KKind::kBuffer || e->materialized)) {
          into->insert(e);
          continue;
        }
        if (!seen.insert(e).second) continue;
        for (const KExpr* o : e->operands) todo.push_back(o);
      }
    };
    auto step_reads = [&](const Step& s, std::set<const KExpr*>* into) {
      if (s.kind == Step::kLibrary) {
        for (const KExpr* a : s.args) into->insert(a);
        return;
      }
      reads_of(s.root, into);
      for (const KExpr* sib : s.siblings) reads_of(sib, into);
    };
    std::vector<std::set<const KExpr*>> reads(p_->steps.size());
    for (size_t k = 0; k < p_->steps.size(); ++k) {
      const Step& s = p_->steps[k];
      if (s.kind == Step::kRowGroup)
        for (const Step& q : s.parts) step_reads(q, &reads[k]);
      else
        step_reads(s, &reads[k]);
    }
    p_->scratch_only.assign(p_->num_buffers, 0);
    for (size_t k = 0; k < p_->steps.size(); ++k) {
      Step& s = p_->steps[k];
      if (s.kind != Step::kRowGroup) continue;
      Group g{s.row_dims, s.width, {}, true};
      for (const Step& q : s.parts) {
        if (q.root->kind == KKind::kReduce || q.root->kind == KKind::kArgReduce) continue;
        std::vector<const KExpr*> vals{q.root};
        vals.insert(vals.end(), q.siblings.begin(), q.siblings.end());
        for (const KExpr* v : vals) {
          if (shape_of(v, g) != RowShape::kFullRow || read_outside.count(v)) continue;
          bool outside = false;
          for (size_t j = 0; j < p_->steps.size() && !outside; ++j) outside = j != k && reads[j].count(v);
          if (outside) continue;
          s.row_local.push_back(v);
          p_->scratch_only[v->buffer] = 1;
        }
      }
    }
  }
};

}  // namespace

int fuse_row_groups(ClusterProgram* p) {
  int groups = RowFuser(p).run();
  if (!groups) return 0;
  std::ostringstream os;
  for (const Step& s : p->steps) {
    if (s.kind != Step::kRowGroup) continue;
    os << "|R" << s.width << ":";
    for (int d : s.row_dims) os << d << ",";
    for (const Step& q : s.parts) os << "p" << q.root->id;
    for (const KExpr* e : s.row_local) os << "l" << e->id;
  }
  p->fingerprint += os.str();
  return groups;
}

}  // namespace jf
