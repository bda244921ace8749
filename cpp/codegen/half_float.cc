// Half types in compiled code: float32 arithmetic between half-type loads and stores (see
// half_float.h). The conversions themselves are ElementalEmitter::cast's.
#include "codegen/half_float.h"

#include <Eigen/Core>
#include <limits>
#include <map>
#include <memory>
#include <utility>

namespace jf {

namespace {

KExpr* make_cast(ClusterProgram* p, DType to, KExpr* operand) {
  auto e = std::make_unique<KExpr>();
  e->kind = KKind::kCast;
  e->op = OpId::Cast;
  e->dtype = to;
  e->dims = operand->dims;
  e->operands = {operand};
  p->exprs.push_back(std::move(e));
  return p->exprs.back().get();
}

// Values in memory of a half type: buffers (inputs, constants, library results) and explicit
// casts to a half type (their rounding is the op's meaning, so it is kept).
bool half_in_memory(const KExpr* e) { return is_half(e->dtype); }

// A topological order of p's expressions that keeps the existing order of those already in
// one; a library step's result comes after its operands. Iterative: clusters can be deep.
void sort_and_renumber(ClusterProgram* p, const std::vector<Step>& library_steps) {
  const size_t n = p->exprs.size();
  std::map<const KExpr*, size_t> at;
  for (size_t i = 0; i < n; ++i) at[p->exprs[i].get()] = i;
  std::map<const KExpr*, std::vector<KExpr*>> extra;  // library results wait for the operands
  for (const Step& s : library_steps) {
    extra[s.root] = s.args;
    for (const KExpr* sib : s.siblings) extra[sib] = s.args;
  }
  auto deps = [&](size_t i) {
    std::vector<KExpr*> d = p->exprs[i]->operands;
    auto it = extra.find(p->exprs[i].get());
    if (it != extra.end()) d.insert(d.end(), it->second.begin(), it->second.end());
    return d;
  };
  std::vector<char> done(n, 0);
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t start = 0; start < n; ++start) {
    if (done[start]) continue;
    std::vector<std::pair<size_t, bool>> stack{{start, false}};
    while (!stack.empty()) {
      auto [i, expanded] = stack.back();
      stack.pop_back();
      if (done[i]) continue;
      if (expanded) {
        done[i] = 1;
        order.push_back(i);
        continue;
      }
      stack.push_back({i, true});
      std::vector<KExpr*> d = deps(i);
      for (auto it = d.rbegin(); it != d.rend(); ++it)
        if (!done[at.at(*it)]) stack.push_back({at.at(*it), false});
    }
  }
  std::vector<std::unique_ptr<KExpr>> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(p->exprs[i]));
  p->exprs = std::move(sorted);
  for (size_t i = 0; i < n; ++i) p->exprs[i]->id = static_cast<int>(i);
}

}  // namespace

void compute_halves_in_float32(ClusterProgram* p, std::vector<Step>* library_steps,
                               const std::vector<StoredValue>& stored) {
  bool any = false;
  for (const auto& e : p->exprs) any |= is_half(e->dtype);
  if (!any) return;
  const size_t n = p->exprs.size();
  // ArgMax/ArgMin of a half type start from the type's lowest (highest) finite value, as TF's
  // eager reducer does: argmax of float16 [-inf, -65504] is 0, which a float32 start would
  // make 1. The limit is kept before the operand turns float32.
  for (size_t i = 0; i < n; ++i) {
    KExpr* e = p->exprs[i].get();
    if (e->kind != KKind::kArgReduce || !is_half(e->operands[0]->dtype)) continue;
    const double lim = e->operands[0]->dtype == DType::kFloat16
                           ? 65504.0
                           : static_cast<double>(std::numeric_limits<Eigen::bfloat16>::max());
    e->float_attrs.push_back({"start_limit", lim});
  }
  // Computed half values become float32: the arithmetic, data movement and reductions
  // (which so accumulate in float32, as the eager kernels do).
  for (size_t i = 0; i < n; ++i) {
    KExpr* e = p->exprs[i].get();
    if (is_half(e->dtype) && e->kind != KKind::kBuffer && e->kind != KKind::kCast) e->dtype = DType::kFloat32;
  }
  // Readers of a half value in memory read it widened, once per value.
  std::map<KExpr*, KExpr*> widened;
  for (size_t i = 0; i < n; ++i) {
    KExpr* e = p->exprs[i].get();
    for (KExpr*& o : e->operands) {
      if (!half_in_memory(o)) continue;
      KExpr*& w = widened[o];
      if (!w) w = make_cast(p, DType::kFloat32, o);
      o = w;
    }
  }
  // Values handed over as a half type are rounded once, where they are stored.
  std::map<std::pair<KExpr*, DType>, KExpr*> narrowed;
  auto narrow = [&](KExpr* v, DType to) {
    if (!is_half(to) || v->dtype == to) return v;
    KExpr*& c = narrowed[{v, to}];
    if (!c) c = make_cast(p, to, v);
    return c;
  };
  for (const StoredValue& s : stored) *s.value = narrow(*s.value, s.dtype);
  for (Step& s : *library_steps)
    for (size_t i = 0; i < s.args.size(); ++i) {
      const Output& in = s.node->inputs[i];
      s.args[i] = narrow(s.args[i], in.node->outputs[in.index].dtype);
    }
  sort_and_renumber(p, *library_steps);
}

}  // namespace jf
