// LLVM 16: the new pass manager for optimization, the legacy one for code emission.
#include "codegen/llvm_pipeline.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include "support/errors.h"

namespace jf {

// The small pipeline: CSE (the elemental IR recomputes shared operand indices), hoisting the
// loop-invariant parameter loads and index arithmetic, InstCombine to fold the index
// arithmetic the emitters write generically (multiplications by 1, adds of 0), loop
// rotation (the vectorizer folds a loop's tail into masked vectors only in rotated form),
// and the loop vectorizer without interleaving. O2's other loop and inter-procedural passes
// find nothing in one kernel loop nest but cost as much compile time as the vectorizer.
constexpr const char* kSmallPipeline =
    "function(early-cse<memssa>,simplifycfg,loop-mssa(licm),instcombine,loop-simplify,lcssa,"
    "loop(loop-rotate),loop-vectorize<interleave-forced-only>,instcombine,simplifycfg)";

void run_pipeline(llvm::Module& m, llvm::TargetMachine* tm, const llvm::TargetLibraryInfoImpl* tlii,
                  PipelineKind kind) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  // Kernels are loops: the loop vectorizer does the work; SLP adds compile time, not speed.
  pto.SLPVectorization = false;
  llvm::PassBuilder pb(tm, pto);
  if (tlii) fam.registerPass([&] { return llvm::TargetLibraryAnalysis(*tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  if (kind == PipelineKind::kSmall) {
    // The row loops fold their tails into masked vectors (emit_loop_step), so the widest
    // vectors pay: a row of 10 (an LSTM cell's units) is one masked vector of AVX-512's 16
    // floats, where before the fold it was one vector of 8 and 2 elements one by one.
    const bool avx512 = tm && tm->getMCSubtargetInfo()->checkFeatures("+avx512f");
    for (llvm::Function& f : m)
      if (!f.isDeclaration()) f.addFnAttr("prefer-vector-width", avx512 ? "512" : "256");
    llvm::ModulePassManager mpm;
    if (auto err = pb.parsePassPipeline(mpm, kSmallPipeline))
      throw_runtime("LLVM: the small pipeline does not parse: ", llvm::toString(std::move(err)));
    mpm.run(m, mam);
    return;
  }
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
}

std::string emit_module(llvm::Module& m, llvm::TargetMachine* tm, bool assembly) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, assembly ? llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile))
    throw_runtime("LLVM: the target cannot emit ", assembly ? "assembly" : "object files");
  pm.run(m);
  return std::string(buf.data(), buf.size());
}

}  // namespace jf
