// The JIT pass: clusters the optimized graph, lowers and compiles each cluster, and builds
// the graph that runs (each compiled cluster replaced by one XlaLaunch node).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace jf {

struct JitOptions {
  bool auto_jit = false;        // jf.config.optimizer.set_jit(True)
  bool whole_function = false;  // jf.function(jit_compile=True)
  int gpu_device = -1;          // >= 0: the function is placed on /GPU:<n>; clusters compile to PTX
};

struct ClusterSummary {
  std::string name, scope, backend;
  std::vector<std::string> ops;
  bool from_cache = false;
  double compile_seconds = 0;
};

struct CompiledCluster;

struct JitReport {
  std::vector<std::shared_ptr<CompiledCluster>> compiled;  // in cluster order
  std::vector<ClusterSummary> clusters;
  std::map<std::string, std::string> op_cluster;  // op name -> cluster name (compiled ops)
  std::map<std::string, std::string> op_reason;   // op name -> why it runs eagerly
  std::vector<std::string> warnings;              // compilation failures (best effort)
};

// Global auto-clustering switch (jf.config.optimizer.set_jit).
void set_auto_jit(bool on);
bool auto_jit();

// Returns the graph to execute (== `optimized` when nothing compiles). `optimized` must
// outlive the result: compiled clusters refer to its nodes.
std::shared_ptr<Graph> apply_jit(const std::shared_ptr<Graph>& optimized, const JitOptions& opts,
                                 const std::string& label, JitReport* report);

}  // namespace jf
