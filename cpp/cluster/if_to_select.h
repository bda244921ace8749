// If-conversion for compilation: an If in compiled code whose two branches are small,
// side-effect free and cannot fail at run time becomes both branches inline and one
// SelectV2 per output, so it fuses into the cluster around it (and a loop step holding it
// can run whole) instead of splitting the compiled code at an executor branch. Other Ifs
// whose branches compile are inlined with guards: only the taken branch runs.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/mark_for_compilation.h"

namespace jf {

struct IfConversion {
  std::string if_name;                 // the If's name in the graph it was in
  std::vector<std::string> new_nodes;  // its inlined branch nodes and selects, as named now
  std::vector<std::string> selects;    // per output: the select computing it ("": a value passed through)
};

// The graph with every qualifying If converted (If branches are converted first, so a
// nested If can qualify its parent), or nullptr when none qualifies. `done` lists the
// converted Ifs of `g` itself.
std::shared_ptr<Graph> convert_ifs_to_selects(const Graph& g, const ClusterOptions& opts,
                                              const CanEmitFn& can_emit, std::vector<IfConversion>* done);

// Why this If stays an executor branch under `opts` ("" when it converts).
std::string if_conversion_refusal(const Node& n, const ClusterOptions& opts, const CanEmitFn& can_emit);

// Guarded inlining, for an If that does not convert: its branches may hold matrix products
// of any size, run-time checks (gathers, integer division, check_numerics) and any op that
// compiles without side effects. Both are copied into the graph with each node marked by
// the If, and one select per output; the cluster then runs only the taken branch's steps
// (kernel_ir.h: Step::guard), so the untaken one costs nothing and raises nothing. The
// JIT pass clusters such an If as one node and inlines it afterwards, so its branches can
// never be split from the selects.
std::string guarded_if_refusal(const Node& n, const ClusterOptions& opts, const CanEmitFn& can_emit);

// The graph with the named Ifs inlined with guards; `done` lists them and their new nodes.
std::shared_ptr<Graph> inline_guarded_ifs(const Graph& g, const std::set<std::string>& names,
                                          std::vector<IfConversion>* done);

// The Ifs clustered as one node each (guarded_if_refusal), inlined with guarded branches.
struct GuardedIfs {
  std::set<std::string> names;
  std::map<std::string, IfConversion> by_name;
  std::vector<std::vector<std::string>> of_cluster;  // per cluster, the Ifs inlined into it
};

// `a` with the clustered Ifs inlined (or `a` itself when none is), the clusters' members
// moved to it: the graph the JIT pass lowers the clusters from, and bases the executed
// graph on.
std::shared_ptr<Graph> inline_clustered_ifs(const std::shared_ptr<Graph>& a, ClusteringResult* cr,
                                            GuardedIfs* g);

// An If inlined into a cluster that did not compile stays an executor branch (its nodes, run
// eagerly, would compute both branches): `a` with only the other Ifs inlined, and each select
// of a failed If an Identity of its output, so the compiled clusters reading it find it by name.
std::shared_ptr<Graph> restore_failed_ifs(const Graph& a, const GuardedIfs& g,
                                          const std::set<std::string>& failed);

}  // namespace jf
