// A concrete function: one traced graph for one input signature, its optimized copy and
// execution plan. Calls check inputs against the signature, then run the plan.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/jit_pass.h"
#include "runtime/executor.h"

namespace jf {

class ConcreteFunction {
 public:
  ConcreteFunction(std::shared_ptr<Graph> traced, std::string name, const JitOptions& jit = JitOptions());
  const std::string& name() const { return name_; }
  const std::shared_ptr<Graph>& graph() const { return graph_; }
  const std::shared_ptr<Graph>& optimized_graph() const { return optimized_; }
  const std::shared_ptr<Graph>& executed_graph() const { return executed_; }
  const JitReport& jit_report() const { return jit_report_; }
  const std::vector<TensorSpec>& input_specs() const { return input_specs_; }
  Device device() const { return device_; }
  // True when `inputs` fit the signature (dtype equal, rank equal, known dims equal).
  bool accepts(const std::vector<Tensor>& inputs) const;
  // True when a call with `inputs` here (device scope, input devices) would place the
  // function where this one was placed; jf.function traces again otherwise.
  bool placed_for(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> call(std::vector<Tensor> inputs) const;
  // For inputs already known to fit (the signature cache matched them): no check.
  std::vector<Tensor> call_matched(std::vector<Tensor> inputs) const {
    return run_plan(*plan_, std::move(inputs));
  }
  // Mean seconds per run of the plan over `iters` runs in a C++ loop (benchmarks: the time
  // of the graph without any Python call overhead).
  double time_runs(const std::vector<Tensor>& inputs, int iters) const;

 private:
  std::string name_;
  std::shared_ptr<Graph> graph_;
  std::shared_ptr<Graph> optimized_;  // after the passes (compiled clusters point into it)
  std::shared_ptr<Graph> executed_;   // with XlaLaunch nodes in place of clusters
  JitReport jit_report_;
  std::shared_ptr<Plan> plan_;
  std::vector<TensorSpec> input_specs_;
  Device device_;
};

}  // namespace jf
