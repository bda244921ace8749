// Parameter slots known equal at run time (lowering's equal_slots, checked before a run), as
// classes: the fusion passes ask whether two values have the same dims.
#pragma once
#include <numeric>
#include <vector>

#include "codegen/kernel_ir.h"

namespace jf {

class SlotClasses {
 public:
  explicit SlotClasses(const ClusterProgram& p) : parent_(p.num_params) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (auto [a, b] : p.equal_slots) parent_[find(a)] = find(b);
  }
  int find(int s) { return parent_[s] == s ? s : parent_[s] = find(parent_[s]); }
  // Records that two slots are equal by construction (no run-time check needed).
  void unite(int a, int b) {
    if (a >= 0 && b >= 0) parent_[find(a)] = find(b);
  }
  // Both a static 1, or slots of one class.
  bool same_slot(int x, int y) { return (x < 0) == (y < 0) && (x < 0 || find(x) == find(y)); }
  // Same rank and, per dim, both a static 1 or slots of one class.
  bool same_dims(const KExpr* a, const KExpr* b) {
    if (a->rank() != b->rank()) return false;
    for (int d = 0; d < a->rank(); ++d)
      if (!same_slot(a->dims[d], b->dims[d])) return false;
    return true;
  }

 private:
  std::vector<int> parent_;
};

}  // namespace jf
