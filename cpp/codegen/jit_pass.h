// The JIT pass: clusters the optimized graph, lowers each cluster, has it compiled, and
// builds the graph that runs (each compiled cluster replaced by one XlaLaunch node).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"
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

struct CompiledCluster;  // runtime/cluster_runner.h: what an XlaLaunch node runs

// A lowered cluster, ready to compile.
struct ClusterToCompile {
  std::string name;   // cluster_0, ...
  std::string scope;  // _XlaScope of its members
  std::string label;  // <function>.<cluster>: the dump and compile-cache label
  std::vector<std::string> op_names;
  std::unique_ptr<ClusterProgram> program;
  int gpu_device = -1;  // >= 0: compile for /GPU:<n> (PTX), else for this CPU
  // jit_compile=True: a run that cannot use compiled code raises instead of falling back.
  bool must_compile = false;
};

// A compiled cluster as the pass sees it: `cluster` owns `program`.
struct CompiledClusterRef {
  std::shared_ptr<CompiledCluster> cluster;
  const ClusterProgram* program = nullptr;
  bool from_cache = false;  // nothing was compiled: the memory or disk cache had it
  double compile_seconds = 0;
};

// Compiles a lowered cluster into what an XlaLaunch node runs; throws jf::Error when it
// cannot. The runtime supplies it (runtime/cluster_runner.h: compile_cluster): a compiled
// cluster is a runtime object (a GPU one is loaded on its device, compilations are counted
// in the runtime's stats), so this pass does not depend on the runtime.
using ClusterCompiler = std::function<CompiledClusterRef(ClusterToCompile)>;

struct JitReport {
  std::vector<std::shared_ptr<CompiledCluster>> compiled;  // in cluster order
  std::vector<ClusterSummary> clusters;
  std::map<std::string, std::string> op_cluster;  // op name -> cluster name (compiled ops)
  std::map<std::string, std::string> op_reason;   // op name -> why it runs eagerly
  std::vector<std::string> warnings;              // compilation failures (best effort)
  // jit_compile=True: the Assert ops removed, as TF's XLA does (path/name in the function).
  std::vector<std::string> dropped_asserts;
  // The While loops (by path) that run whole in their step's compiled cluster; op_cluster
  // maps each to that cluster, and op_reason says why another While does not.
  std::vector<std::string> compiled_loops;
  // The Ifs (by path) computed inline: both branches and a select per output, in the
  // clusters around them (cluster/if_to_select.h); op_cluster maps each to its selects' cluster.
  std::vector<std::string> selected_ifs;
  // The Ifs (by path) inlined with guarded branches: the cluster runs only the taken branch's
  // steps (cluster/if_to_select.h); op_cluster maps each, and its branches' ops, to it.
  std::vector<std::string> guarded_ifs;
  // The optimized branch and loop-body graphs: their compiled clusters refer to their nodes.
  std::vector<std::shared_ptr<Graph>> body_graphs;
};

// Global auto-clustering switch (jf.config.optimizer.set_jit).
void set_auto_jit(bool on);
bool auto_jit();

// Returns the graph to execute (== `optimized` when nothing compiles and the function has no
// If/While). If/While subgraphs are optimized and clustered recursively; the executor runs
// the loop or branch and each iteration runs the body's compiled clusters. Report entries of
// body ops are named by path ("while/body/add"). `optimized` must outlive the result:
// compiled clusters refer to its nodes.
std::shared_ptr<Graph> apply_jit(const std::shared_ptr<Graph>& optimized, const JitOptions& opts,
                                 const std::string& label, const ClusterCompiler& compile, JitReport* report);

}  // namespace jf
