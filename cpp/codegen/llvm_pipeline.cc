// LLVM 16: the new pass manager for optimization, the legacy one for code emission.
#include "codegen/llvm_pipeline.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include "support/errors.h"

namespace jf {

void run_pipeline(llvm::Module& m, llvm::TargetMachine* tm, const llvm::TargetLibraryInfoImpl* tlii) {
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
