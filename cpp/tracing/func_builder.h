// Builds one graph (a jf.function body or a cond/while branch): placeholders for the
// arguments, the traced ops, then outputs; values captured from enclosing graphs become
// extra trailing inputs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tracing/trace_context.h"

namespace jf {

class FuncBuilder {
 public:
  // nested: a branch/body of the graph being traced now (captures allowed).
  explicit FuncBuilder(bool nested);
  ~FuncBuilder();
  void enter();
  void exit();
  Tensor placeholder(DType dt, const Shape& shape, const std::string& name);
  // Sets the outputs and the input list (arguments, then captures). Returns the graph.
  std::shared_ptr<Graph> finish(const std::vector<Tensor>& outputs);
  const std::vector<Tensor>& capture_values() const { return capture_values_; }
  // After finish: captures an outer value as one more trailing input; returns its Placeholder.
  Output add_capture(const Tensor& t);
  TraceState& state() { return state_; }

 private:
  TraceState state_;
  std::vector<Node*> args_;
  std::vector<Tensor> capture_values_;
  bool entered_ = false;
};

// Temporarily leaves every trace (TF's init_scope): ops run eagerly until resumed.
class TracePause {
 public:
  TracePause();
  ~TracePause();

 private:
  std::vector<TraceState*> saved_;
};

// Evaluates a symbolic value that depends on no placeholder (TF lifts such variable
// initializers out of the function): runs its producers eagerly.
Tensor evaluate_lifted(const Tensor& t);

// jf.cond / jf.while_loop as graph nodes over finished branch graphs.
std::vector<Tensor> make_if(const Tensor& pred, FuncBuilder& then_b, std::shared_ptr<Graph> then_g,
                            FuncBuilder& else_b, std::shared_ptr<Graph> else_g, const std::string* name);
std::vector<Tensor> make_while(const std::vector<Tensor>& loop_vars, FuncBuilder& cond_b,
                               std::shared_ptr<Graph> cond_g, FuncBuilder& body_b,
                               std::shared_ptr<Graph> body_g, int64_t maximum_iterations,
                               const std::string* name, const std::vector<Shape>& invariants = {});

}  // namespace jf
