// The executor: an execution plan per optimized graph (value slots, release points from
// liveness, precomputed output specs when shapes are static) and the loop that runs it on
// eager kernels, from C++, with no Python involved.
#pragma once
#include <memory>
#include <vector>

#include "ir/graph.h"
#include "runtime/parked.h"

namespace jf {

// What one run of a plan needs besides its inputs, kept between runs so that a run of
// small tensors allocates nothing: value slots, scratch vectors, and per output slot the
// buffer it held last time (see OpCall::recycle).
struct Arena {
  explicit Arena(int num_slots) : slots(num_slots), recycle(num_slots) {}
  std::vector<Tensor> slots;
  std::vector<BufferPtr> recycle;
  std::vector<Tensor> ins, outs, spare;
  // After a run (or an exception): drops the values, keeping `recycle`.
  void clear() {
    for (Tensor& t : slots) t.reset();
    ins.clear();
    outs.clear();
  }
};

struct Plan {
  std::shared_ptr<Graph> graph;
  std::vector<Node*> order;
  int num_slots = 0;
  std::vector<int> first_slot;             // per node id
  std::vector<std::vector<int>> in_slots;  // per step
  std::vector<std::vector<int>> release;   // per step: slots dead after it
  std::vector<std::vector<char>> move_in;  // per step input: last use, so move, not copy
  std::vector<int> input_slots, output_slots;
  std::vector<char> output_move;               // the output's last read of its slot: move it out
  std::vector<std::pair<int, Tensor>> consts;  // slots holding Const values
  bool static_shapes = true;                   // all specs known: skip inference at run time
  std::vector<std::vector<std::shared_ptr<Plan>>> sub_plans;  // per step (If/While)
  // Where the function was placed: on a GPU every op goes through run_placed (GPU kernels,
  // soft placement) and clusters are GPU clusters; on the CPU, device inputs are copied in.
  Device device;
  Parked<Arena> arena;
};

std::shared_ptr<Plan> build_plan(std::shared_ptr<Graph> optimized, Device device = Device{});
// Runs the plan; inputs must match the graph's placeholders (checked by the caller).
std::vector<Tensor> run_plan(const Plan& plan, std::vector<Tensor> inputs);

}  // namespace jf
