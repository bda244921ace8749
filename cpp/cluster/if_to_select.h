// If-conversion for compilation: an If in compiled code whose two branches are small,
// side-effect free and cannot fail at run time becomes both branches inline and one
// SelectV2 per output, so it fuses into the cluster around it (and a loop step holding it
// can run whole) instead of splitting the compiled code at an executor branch.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cluster/mark_for_compilation.h"

namespace jf {

struct IfConversion {
  std::string if_name;                 // the If's name in the graph it was in
  std::vector<std::string> new_nodes;  // its inlined branch nodes and selects, as named now
};

// The graph with every qualifying If converted (If branches are converted first, so a
// nested If can qualify its parent), or nullptr when none qualifies. `done` lists the
// converted Ifs of `g` itself.
std::shared_ptr<Graph> convert_ifs_to_selects(const Graph& g, const ClusterOptions& opts,
                                              const CanEmitFn& can_emit, std::vector<IfConversion>* done);

// Why this If stays an executor branch under `opts` ("" when it converts).
std::string if_conversion_refusal(const Node& n, const ClusterOptions& opts, const CanEmitFn& can_emit);

}  // namespace jf
