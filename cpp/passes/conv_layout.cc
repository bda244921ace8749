// Chains of convolutions kept in oneDNN's blocked activation layout: where every reader of a
// float32 NHWC convolution's or pool's output is another such convolution or pool, in the same
// compile scope, the producer writes oneDNN's blocked layout (nChw8c / nChw16c) and the
// readers read it, so the value is never reordered; the chain's first input and last output
// are reordered from and to TF's layout by the convolutions and pools themselves
// (kernels/conv_ops.cc, pool_ops.cc).
// Only where oneDNN prefers a blocked layout on this CPU, and only for channel counts that
// fill its blocks, so the blocked value has the byte size of the TF-shaped tensor holding it.
#include <cstdlib>
#include <cstring>
#include <map>

#include "ir/conv_geom.h"
#include "passes/passes.h"
#include "passes/scope.h"

namespace jf {
namespace {

// A float32 NHWC 2-D convolution, ungrouped, its dims known (but the batch), with no residual
// post-op (its operand would have to be blocked too); or such a max or average pool.
bool chain_member(const Node& n) {
  const bool pool = n.op == OpId::MaxPool || n.op == OpId::AvgPool;
  if (n.op != OpId::Conv2D && n.op != OpId::FusedConv2D && !pool) return false;
  if (n.outputs[0].dtype != DType::kFloat32 || !n.control_inputs.empty()) return false;
  if (n.attrs.get<std::string>("data_format", "NHWC") != "NHWC") return false;
  if (pool) {  // oneDNN's pooling for SAME and VALID windows (kernels/pool_ops.cc)
    const std::string pad = n.attrs.get<std::string>("padding", "");
    const Shape& x = spec_of(n.inputs[0]).shape;
    if (n.inputs.size() != 1 || (pad != "SAME" && pad != "VALID") || x.rank() != 4) return false;
    for (int d = 1; d < 4; ++d)
      if (x[d] <= 0 || n.outputs[0].shape[d] <= 0) return false;
    return true;
  }
  if (n.op == OpId::FusedConv2D)
    for (const std::string& o : n.attrs.get<std::vector<std::string>>("fused_ops", {}))
      if (o == "Add") return false;
  const Shape& x = spec_of(n.inputs[0]).shape;
  const Shape& f = spec_of(n.inputs[1]).shape;
  if (x.rank() != 4 || f.rank() != 4 || f[2] != x[3]) return false;
  for (int d = 1; d < 4; ++d)
    if (x[d] <= 0 || f[d - 1] <= 0 || n.outputs[0].shape[d] <= 0) return false;
  return f[3] > 0;
}

}  // namespace

void conv_blocked_layout(Graph& g) {
  bool any = false;
  for (const auto& n : g.nodes()) any = any || n->op == OpId::Conv2D || n->op == OpId::FusedConv2D;
  if (!any) return;
  // JITFLOW_CONV_BLOCKED=0 keeps every value in TF's layout (to measure what the chains gain).
  if (const char* v = std::getenv("JITFLOW_CONV_BLOCKED"); v && std::strcmp(v, "0") == 0) return;
  const int64_t block = conv_blocked_block();
  if (block <= 0) return;
  std::map<std::pair<Node*, int>, std::vector<std::pair<Node*, int>>> readers;
  std::map<Node*, int> pinned;
  for (const auto& n : g.nodes()) {
    for (size_t i = 0; i < n->inputs.size(); ++i)
      readers[{n->inputs[i].node, n->inputs[i].index}].push_back({n.get(), static_cast<int>(i)});
    for (Node* c : n->control_inputs) pinned[c]++;
  }
  for (const Output& o : g.outputs) pinned[o.node]++;
  for (const auto& n : g.nodes()) {
    Node* p = n.get();
    if (!chain_member(*p) || pinned.count(p) || p->outputs[0].shape[3] % block != 0) continue;
    auto it = readers.find({p, 0});
    if (it == readers.end()) continue;
    bool all = true;
    for (auto [r, i] : it->second) all = all && i == 0 && chain_member(*r) && same_scope(*p, *r);
    if (!all) continue;
    p->attrs.set("_blocked_out", true);
    for (auto [r, i] : it->second) r->attrs.set("_blocked_in", true);
  }
}

}  // namespace jf
