// Sibling fusion over kernel IR. Lowering gives every materialized value its own loop;
// values of one shape that read the same inputs (Adam's m, v and parameter updates all
// read the gradient, and the parameter update reads the new m and v) then stream those
// inputs from memory once per loop. Merging them into one loop reads each input once and
// passes earlier results in registers. A step joins an earlier loop only when it needs
// nothing computed between the two and reads that loop's values at its own index.
#include <map>
#include <set>

#include "codegen/kernel_ir.h"
#include "codegen/slot_classes.h"

namespace jf {
namespace {

constexpr size_t kMaxRootsPerLoop = 8;  // bounds register pressure in the fused body

// The stored values `top` reads (cluster inputs, constants, materialized values), each with
// whether every read is at top's own index (only same-shape elementwise ops on the way). A
// walk from an explicit stack: a fused chain of 20,000 ops is as deep.
std::map<const KExpr*, bool> collect_reads(const KExpr* top, SlotClasses& sc) {
  std::map<const KExpr*, bool> reads;
  std::set<std::pair<const KExpr*, bool>> seen;
  std::vector<std::pair<const KExpr*, bool>> todo{{top, true}};
  while (!todo.empty()) {
    auto [e, at_own_index] = todo.back();
    todo.pop_back();
    if (e != top && (e->kind == KKind::kBuffer || e->materialized)) {
      auto [it, fresh] = reads.emplace(e, at_own_index);
      if (!fresh) it->second = it->second && at_own_index;
      continue;
    }
    if (!seen.insert({e, at_own_index}).second) continue;
    bool same = at_own_index && is_elementwise(e->kind);
    for (const KExpr* o : e->operands) todo.push_back({o, same && sc.same_dims(o, e)});
  }
  return reads;
}

bool fusible_loop(const Step& s) { return s.kind == Step::kLoop && s.root->kind != KKind::kReduce; }

}  // namespace

void fuse_sibling_loops(ClusterProgram* p) {
  SlotClasses sc(*p);
  std::map<const KExpr*, size_t> step_of;  // materialized value -> index of the step computing it
  std::vector<Step> out;
  for (const Step& s : p->steps) {
    bool joined = false;
    if (fusible_loop(s)) {
      const std::map<const KExpr*, bool> reads = collect_reads(s.root, sc);
      for (size_t g = 0; g < out.size() && !joined; ++g) {
        Step& loop = out[g];
        if (!fusible_loop(loop) || loop.siblings.size() + 1 >= kMaxRootsPerLoop ||
            !sc.same_dims(loop.root, s.root) || loop.guard != s.guard || loop.guard_when != s.guard_when)
          continue;
        bool ok = true;
        for (auto [value, at_own_index] : reads) {
          auto it = step_of.find(value);
          if (it == step_of.end() || it->second < g) continue;  // ready before this loop
          if (it->second == g && at_own_index) continue;        // computed by it, same element
          ok = false;
          break;
        }
        if (!ok) continue;
        loop.siblings.push_back(s.root);
        step_of[s.root] = g;
        joined = true;
      }
    }
    if (joined) continue;
    step_of[s.root] = out.size();
    out.push_back(s);
  }
  p->steps = std::move(out);
}

}  // namespace jf
