// The CPU backend: wraps each loop step's elemental IR in a loop over a range of output
// elements, optimizes the module with LLVM's O2 pipeline for the host CPU (vector math
// through glibc's libmvec), and loads the object code with ORC's LLJIT.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"

namespace jf {

// Computes output elements [begin, end) of one step.
using StepFn = void (*)(char** bufs, const int64_t* params, int64_t begin, int64_t end);

struct CpuKernels {
  std::vector<StepFn> fns;  // per step; nullptr for library steps but small products
  // Quickly generated code (compile_cpu): set once the fully generated code is in. Until then
  // a small product's entry is a stub, and its step runs small_dot_reference. Null: the code
  // is final.
  const std::atomic<bool>* full_code = nullptr;
  bool small_dots_ready() const { return !full_code || full_code->load(std::memory_order_acquire); }
  // Keeps the code behind fns loaded. Clusters with the same kernels share it (the compile
  // cache); the JIT frees the code with the last of them.
  std::shared_ptr<const void> code;
  bool from_cache = false;  // memory or disk cache hit: nothing was compiled
  double compile_seconds = 0;
};

// Compiles (or fetches from the compile cache) the loop steps of a program. Throws
// jf::Error on failure; JITFLOW_FAIL_COMPILE=1 injects a failure (for tests).
CpuKernels compile_cpu(const ClusterProgram& p, const std::string& label);

// A small product (is_small_dot_step) computed in C++ with the rounding of its compiled code:
// each element a sequence of multiply-adds over k, fused where the target fuses them. It runs
// while a tiered cluster waits for that code, so the values do not change when it arrives.
// params: kernel_ir.h's DotParam.
void small_dot_reference(char** bufs, const int64_t* params, DType dtype, DotForm form);

std::string cpu_target_description();  // triple, CPU name and features (cache key part)
// Sets the JIT up on a thread of its own, once, so a trace that will compile overlaps it.
void cpu_jit_prepare();
int64_t cpu_code_objects_loaded();  // objects in the JIT now (each freed with its last user)
// Small kernels run first as quickly generated code, switched to fully generated code by a
// background thread (compile_cpu): how many switches were made, how many failed (the quick
// code then stays), and waiting until the queued ones are done.
int64_t cpu_tier_upgrades();
int64_t cpu_tier_upgrade_failures();
void cpu_wait_for_upgrades();

}  // namespace jf
