// Concrete functions: optimize once at construction, then run the cached plan per call.
#include "runtime/function.h"

#include <chrono>

#include "passes/passes.h"
#include "runtime/cluster_runner.h"
#include "runtime/placement.h"
#include "support/stats.h"

namespace jf {

ConcreteFunction::ConcreteFunction(std::shared_ptr<Graph> traced, std::string name, const JitOptions& jit)
    : name_(std::move(name)), graph_(std::move(traced)) {
  for (Node* in : graph_->inputs) input_specs_.push_back(in->outputs[0]);
  optimized_ = optimize(*graph_, name_);
  if (jit.whole_function) jit_report_.dropped_asserts = drop_asserts(*optimized_);
  executed_ = apply_jit(optimized_, jit, name_, compile_cluster, &jit_report_);
  const std::vector<std::string>& dropped = jit_report_.dropped_asserts;
  if (!dropped.empty())
    warn(str_cat("jitflow: jit_compile=True: ", name_, " does not check its assertion '", dropped[0], "'",
                 dropped.size() > 1 ? str_cat(" (and ", dropped.size() - 1, " more)") : std::string(),
                 ": TF's XLA compiles Assert to nothing, and so does jitflow"));
  if (jit.gpu_device >= 0) device_ = Device{DeviceType::kGPU, jit.gpu_device};
  plan_ = build_plan(executed_, device_);
}

bool ConcreteFunction::accepts(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != input_specs_.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& s = input_specs_[i];
    const Tensor& t = inputs[i];
    if (t.dtype() != s.dtype || t.rank() != s.shape.rank()) return false;
    for (int d = 0; d < t.rank(); ++d)
      if (s.shape[d] >= 0 && s.shape[d] != t.shape()[d]) return false;
  }
  return true;
}

bool ConcreteFunction::placed_for(const std::vector<Tensor>& inputs) const {
  return call_placement(inputs) == device_;
}

std::vector<Tensor> ConcreteFunction::call(std::vector<Tensor> inputs) const {
  if (!accepts(inputs)) {
    std::string want, got;
    for (const TensorSpec& s : input_specs_)
      want += str_cat(want.empty() ? "" : ", ", dtype_name(s.dtype), s.shape.str());
    for (const Tensor& t : inputs) got += str_cat(got.empty() ? "" : ", ", t.desc());
    // TF's words for an input of another dtype (its function call's kernel check)
    for (size_t i = 0; i < inputs.size() && i < input_specs_.size(); ++i)
      if (inputs[i].dtype() != input_specs_[i].dtype)
        throw_invalid("cannot compute ", name_, " as input #", i, "(zero-based) was expected to be a ",
                      dtype_name(input_specs_[i].dtype), " tensor but is a ", dtype_name(inputs[i].dtype()),
                      " tensor: inputs (", got, ") do not match the traced signature (", want, ")");
    throw_invalid(name_, ": inputs (", got, ") do not match the traced signature (", want, ")");
  }
  return run_plan(*plan_, std::move(inputs));
}

double ConcreteFunction::time_runs(const std::vector<Tensor>& inputs, int iters) const {
  if (!accepts(inputs)) throw_invalid(name_, ": inputs do not match the traced signature");
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) run_plan(*plan_, inputs);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace jf
