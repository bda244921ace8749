// The pass pipeline: an ordered table of passes with a dump hook after each.
#include <cstdlib>
#include <fstream>

#include "passes/passes.h"

namespace jf {

namespace {
struct Pass {
  const char* name;
  void (*run)(Graph&);
};
const Pass kPipeline[] = {
    {"dce", dead_code_elimination},       {"cse", common_subexpression_elimination},
    {"constant_fold", constant_folding},  {"dce_after_fold", dead_code_elimination},
    {"shape_inference", shape_inference}, {"fuse_conv", fuse_conv},
    {"conv_layout", conv_blocked_layout},
};

void dump(const Graph& g, const std::string& label, int step, const char* pass) {
  const char* dir = std::getenv("JITFLOW_DUMP");
  if (!dir || !*dir) return;
  char num[8];
  std::snprintf(num, sizeof(num), "%02d", step);
  std::ofstream(std::string(dir) + "/" + label + "." + num + "." + pass + ".txt") << g.to_string();
}
}  // namespace

std::shared_ptr<Graph> optimize(const Graph& g, const std::string& label) {
  std::shared_ptr<Graph> out = g.clone();
  dump(*out, label, 0, "traced");
  int step = 1;
  for (const Pass& p : kPipeline) {
    p.run(*out);
    dump(*out, label, step++, p.name);
  }
  return out;
}

void replace_uses(Graph& g, Output from, Output to) {
  for (const auto& n : g.nodes())
    for (Output& o : n->inputs)
      if (o.node == from.node && o.index == from.index) o = to;
  for (Output& o : g.outputs)
    if (o.node == from.node && o.index == from.index) o = to;
}

}  // namespace jf
