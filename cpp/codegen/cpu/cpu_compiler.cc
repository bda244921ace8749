// CPU code generation and loading (LLVM 16: new pass manager, legacy codegen, ORC LLJIT).
#include "codegen/cpu/cpu_compiler.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/IRCompileLayer.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "codegen/compile_cache.h"
#include "codegen/cpu/cpu_loops.h"
#include "codegen/cpu/half_routines.h"
#include "codegen/cpu/jit_memory.h"
#include "codegen/elemental.h"
#include "codegen/llvm_pipeline.h"
#include "support/stats.h"

namespace jf {
namespace {

std::atomic<int64_t> g_objects_loaded{0};
std::atomic<int64_t> g_upgrades{0}, g_upgrade_failures{0};

// One loaded object: its JIT library and step functions. Removing the library frees the code.
struct Loaded {
  llvm::orc::ExecutionSession* es = nullptr;
  llvm::orc::JITDylib* jd = nullptr;
  std::vector<StepFn> fns;
  // A quickly generated object (see compile_cpu): per step, the pointer its entry calls
  // through, and the fully generated code that pointer is switched to once it is ready.
  std::vector<std::atomic<void*>*> slots;
  std::shared_ptr<Loaded> upgraded;
  // Set once the slots point at the fully generated code: a quick object's small products
  // are stubs until then (add_small_dot_stubs).
  std::atomic<bool> full_code{false};
  // false for an upgrade: a cluster's code counts once, whichever tier runs (and never
  // twice for a moment, as a reader of the count could see).
  const bool counted;
  explicit Loaded(bool count) : counted(count) {
    if (counted) ++g_objects_loaded;
  }
  ~Loaded() {
    if (jd)
      if (auto e = es->removeJITDylib(*jd)) llvm::consumeError(std::move(e));
    if (counted) --g_objects_loaded;
  }
};

struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::TargetMachine> tm_quick;  // the same target, no code generator optimization
  const llvm::Target* target = nullptr;
  std::string triple, cpu, features;
  bool avx2 = false;           // the target has AVX2: libmvec's AVX2 variants may be called
  bool fma = false;            // llvm.fmuladd becomes one fused instruction (small_dot_reference)
  unsigned vector_bytes = 16;  // the widest vector registers: 64 with AVX-512, 32 with AVX
  std::mutex mu;
  // cache key -> the loaded code while some cluster uses it (weak: the clusters own it)
  std::unordered_map<std::string, std::weak_ptr<Loaded>> loaded;
  int64_t dylibs = 0;
};

// JITFLOW_CPU=<LLVM CPU name> (haswell, x86-64-v2, ...) compiles for that CPU instead of the
// host's, so the tests can check on one machine the code an older one (AVX2, SSE4) would run.
// The CPU must be one LLVM knows, and its instruction sets must be the host's too: code for a
// newer CPU would die of an illegal instruction.
void check_cpu_override(const llvm::Target& target, const std::string& triple, const std::string& cpu,
                        const llvm::StringMap<bool>& host_features) {
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target.createMCSubtargetInfo(triple, cpu, ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    throw_invalid("JITFLOW_CPU=", cpu, " is not a CPU LLVM knows for ", triple,
                  " (try haswell or x86-64-v2)");
  std::string missing;
  for (const auto& f : host_features)  // the instruction sets LLVM detects, on or off here
    if (!f.second && sti->checkFeatures("+" + f.first().str()))
      missing += (missing.empty() ? "" : ", ") + f.first().str();
  if (!missing.empty())
    throw_invalid("JITFLOW_CPU=", cpu, " needs instructions this CPU (", llvm::sys::getHostCPUName().str(),
                  ") lacks: ", missing);
}

// LLJIT's IR compile layer, which nothing here uses (modules are compiled to objects first).
struct NoIRCompiler : llvm::orc::IRCompileLayer::IRCompiler {
  NoIRCompiler() : IRCompiler(llvm::orc::IRSymbolMapper::ManglingOptions()) {}
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module&) override {
    return llvm::make_error<llvm::StringError>("jitflow's JIT links object code only",
                                               llvm::inconvertibleErrorCode());
  }
};

Jit& jit() {
  static Jit* j = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // MachineLICM hoists only into the preheader of a loop nest's outermost loop, and by
    // default not from an inner loop that may not run there: a vectorized exp in a row loop
    // then reloads its dozen constants from the constant pool on every vector. Those loads
    // cannot fault, so hoisting them is safe; a 4096x1024 softmax runs 20% faster.
    if (auto it = llvm::cl::getRegisteredOptions().find("avoid-speculation");
        it != llvm::cl::getRegisteredOptions().end())
      it->second->addOccurrence(0, "avoid-speculation", "false");
    // glibc's vector math library: LLVM maps vectorized exp/log/sin/cos/pow onto it.
    llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
    auto* jj = new Jit();
    jj->triple = llvm::sys::getProcessTriple();
    std::string err;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(jj->triple, err);
    if (!target) throw_runtime("LLVM: no target for ", jj->triple, ": ", err);
    llvm::StringMap<bool> host_features;
    if (!llvm::sys::getHostCPUFeatures(host_features)) host_features.clear();
    if (const char* cpu = std::getenv("JITFLOW_CPU"); cpu && *cpu) {
      jj->cpu = cpu;  // that CPU's own features (the cache key has its name)
      check_cpu_override(*target, jj->triple, jj->cpu, host_features);
    } else {
      jj->cpu = llvm::sys::getHostCPUName().str();
      std::string fs;
      for (auto& kv : host_features)
        fs += (fs.empty() ? "" : ",") + std::string(kv.second ? "+" : "-") + kv.first().str();
      jj->features = fs;
    }
    llvm::TargetOptions opts;
    jj->target = target;
    jj->tm.reset(target->createTargetMachine(jj->triple, jj->cpu, jj->features, opts, llvm::Reloc::PIC_,
                                             std::nullopt, llvm::CodeGenOpt::Aggressive));
    const llvm::MCSubtargetInfo* sti = jj->tm->getMCSubtargetInfo();
    jj->avx2 = sti->checkFeatures("+avx2");
    jj->fma = sti->checkFeatures("+fma");
    jj->vector_bytes = sti->checkFeatures("+avx512f") ? 64 : sti->checkFeatures("+avx") ? 32 : 16;
    // Each object in one mapping (jit_memory.h), freed with the object. The JIT only links
    // object code compiled here: it gets the target's data layout rather than deriving it,
    // and no IR compiler or initializer platform (LLJIT's defaults made a target machine and
    // a platform library: a third of a millisecond of a disk-cache hit's first call).
    llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(jj->triple)};
    jtmb.setCPU(jj->cpu);
    auto lj = llvm::orc::LLJITBuilder()
                  .setJITTargetMachineBuilder(std::move(jtmb))
                  .setDataLayout(jj->tm->createDataLayout())
                  .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                  .setCompileFunctionCreator(
                      [](llvm::orc::JITTargetMachineBuilder)
                          -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                        return std::make_unique<NoIRCompiler>();
                      })
                  .setObjectLinkingLayerCreator(
                      [](llvm::orc::ExecutionSession& es,
                         const llvm::Triple&) -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                        return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                            es, [] { return make_contiguous_memory_manager(); });
                      })
                  .create();
    if (!lj) throw_runtime("LLVM: cannot create LLJIT: ", llvm::toString(lj.takeError()));
    jj->lljit = std::move(*lj);
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jj->lljit->getDataLayout().getGlobalPrefix());
    if (!gen) throw_runtime("LLVM: ", llvm::toString(gen.takeError()));
    jj->lljit->getMainJITDylib().addGenerator(std::move(*gen));
    define_half_routines(*jj->lljit);
    return jj;
  }();
  return *j;
}

void dump_module(const llvm::Module& m, const std::string& label, const char* stage) {
  const char* dir = std::getenv("JITFLOW_DUMP");
  if (!dir || !*dir) return;
  std::error_code ec;
  llvm::raw_fd_ostream os(std::string(dir) + "/" + label + "." + stage + ".ll", ec);
  if (!ec) m.print(os, nullptr);
}

// Calls to the records' libm functions (ops.def's math column) get their glibc libmvec
// vector variants where libmvec has them, so the loop vectorizer can use them (LLVM 16's
// libmvec table covers only exp/log/sin/cos/pow, which are emitted as intrinsics).
void add_vector_variants(llvm::Module& m, bool avx2) {
  for (int op = 0; op < num_ops(); ++op) {
    const OpDef& def = op_def(static_cast<OpId>(op));
    if (!*def.math) continue;
    const int arity = def.num_inputs;
    for (bool f32 : {true, false}) {
      std::string scalar = std::string(def.math) + (f32 ? "f" : "");
      llvm::Function* f = m.getFunction(scalar);
      if (!f) continue;
      int lanes_sse = f32 ? 4 : 2, lanes_avx = f32 ? 8 : 4;
      std::vector<std::pair<char, int>> isas = {{'b', lanes_sse}};
      if (avx2) isas.push_back({'d', lanes_avx});
      std::vector<std::string> names;
      const std::string args(arity, 'v');
      for (auto [isa, lanes] : isas) {
        std::string vname = std::string("_ZGV") + isa + "N" + std::to_string(lanes) + args + "_" + scalar;
        if (!llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(vname)) continue;  // not in this libmvec
        auto* vty = llvm::FixedVectorType::get(f->getReturnType(), lanes);
        std::vector<llvm::Type*> params(arity, vty);
        auto vf = m.getOrInsertFunction(vname, llvm::FunctionType::get(vty, params, false));
        // Keep the declaration alive until the vectorizer looks for it (GlobalDCE runs first).
        llvm::appendToCompilerUsed(m, {llvm::cast<llvm::GlobalValue>(vf.getCallee())});
        names.push_back(std::string("_ZGV_LLVM_N") + std::to_string(lanes) + args + "_" + scalar + "(" +
                        vname + ")");
      }
      if (names.empty()) continue;
      for (llvm::User* u : f->users())
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(u)) llvm::VFABI::setVectorVariantNames(call, names);
    }
  }
}

void optimize(llvm::Module& m, llvm::TargetMachine* tm, PipelineKind kind) {
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  // LLVM's libmvec table lists the AVX2 variants whatever the target: a loop vectorized 8 floats
  // wide on an SSE-only CPU (one reading half types) would call them with the wrong registers.
  if (tm->getMCSubtargetInfo()->checkFeatures("+avx2"))
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                            llvm::Triple(m.getTargetTriple()));
  run_pipeline(m, tm, &tlii, kind);
}

// A loop step iterating at most this many times (output elements times the elements each
// folds) gets the small pipeline: O2's interleaved vector loop (16 lanes times up to 4)
// would hardly run, its vectorized remainder doing the work.
constexpr int64_t kSmallStepIterations = 128;

// The value of a parameter slot known from the graph's static shapes, or -1 when it is not
// (an unknown dim, or a slice bound).
int64_t static_slot(const ClusterProgram& p, int slot) {
  const ParamFill& f = p.fills[slot];
  const int nin = static_cast<int>(p.inputs.size());
  switch (f.kind) {
    case ParamFill::kInputDim:
      if (f.a < nin) {
        const Shape& s = p.inputs[f.a].node->outputs[p.inputs[f.a].index].shape;
        return f.b < s.rank() ? s[f.b] : -1;
      }
      return p.constants[f.a - nin].shape()[f.b];
    case ParamFill::kNodeDim: {
      const Shape& s = p.members[f.a]->outputs[f.b].shape;
      return f.c < s.rank() ? s[f.c] : -1;
    }
    default:
      return -1;
  }
}

// Which pipeline the program's kernels get. The kernels serve every size with the same rank
// and broadcast pattern, so the choice is part of the cache key: a later call at a size
// whose graph shapes are larger or unknown compiles its own fully optimized kernels.
// JITFLOW_LLVM_PIPELINE=full or small overrides the choice (tests check both compile alike).
PipelineKind choose_pipeline(const ClusterProgram& p) {
  if (const char* o = std::getenv("JITFLOW_LLVM_PIPELINE"); o && *o) {
    if (std::string(o) == "small") return PipelineKind::kSmall;
    if (std::string(o) == "full") return PipelineKind::kFull;
  }
  std::vector<int64_t> params(p.num_params, 1);
  for (int s = 0; s < p.num_params; ++s) {
    params[s] = static_slot(p, s);
    if (params[s] < 0 && p.fills[s].kind != ParamFill::kSliceStart &&
        p.fills[s].kind != ParamFill::kSliceStride && p.fills[s].kind != ParamFill::kSplitStart)
      return PipelineKind::kFull;  // a dim known only at run time
  }
  for (const Step& s : p.steps) {
    if (s.kind == Step::kLibrary) continue;
    if (s.kind != Step::kLoop) return PipelineKind::kFull;  // row groups: rows of any width
    int64_t n = 1;
    for (int d : s.root->dims) n *= d < 0 ? 1 : params[d];
    if (n * reduced_extent(s, params.data()) > kSmallStepIterations) return PipelineKind::kFull;
  }
  return PipelineKind::kSmall;
}

// Each object goes into its own JITDylib (resolving the process's symbols through the main
// one), so an object that does not load is dropped whole, the recompiled one that replaces it
// can define the same names, and the code is freed when its last cluster goes.
std::shared_ptr<Loaded> load(Jit& j, const std::vector<bool>& kernel_steps, const std::string& obj,
                             const std::string& prefix, bool quick = false, bool counted = true) {
  llvm::orc::ExecutionSession& es = j.lljit->getExecutionSession();
  auto jd = es.createJITDylib(prefix + "_" + std::to_string(j.dylibs++));
  if (!jd) throw_runtime("LLVM: ", llvm::toString(jd.takeError()));
  jd->addToLinkOrder(j.lljit->getMainJITDylib());
  auto code = std::make_shared<Loaded>(counted);
  code->es = &es;
  code->jd = &*jd;
  auto fail = [&](llvm::Error err) { throw_runtime("LLVM: ", llvm::toString(std::move(err))); };
  if (auto err = j.lljit->addObjectFile(*jd, llvm::MemoryBuffer::getMemBufferCopy(obj, prefix)))
    fail(std::move(err));
  code->fns.assign(kernel_steps.size(), nullptr);
  if (quick) code->slots.assign(kernel_steps.size(), nullptr);
  for (size_t k = 0; k < kernel_steps.size(); ++k) {
    if (!kernel_steps[k]) continue;
    auto sym = j.lljit->lookup(*jd, prefix + "_step" + std::to_string(k));
    if (!sym) fail(sym.takeError());
    code->fns[k] = sym->toPtr<StepFn>();
    if (!quick) continue;
    auto slot = j.lljit->lookup(*jd, prefix + "_step" + std::to_string(k) + ".impl");
    if (!slot) fail(slot.takeError());
    code->slots[k] = slot->toPtr<std::atomic<void*>*>();
  }
  return code;
}

// Per step whether the object has its entry, then the loop driver's when it has one.
std::vector<bool> kernel_steps_of(const ClusterProgram& p) {
  std::vector<bool> out(p.steps.size());
  for (size_t k = 0; k < p.steps.size(); ++k)
    out[k] = p.steps[k].kind != Step::kLibrary || is_small_dot_step(p.steps[k]);
  if (has_loop_driver(p)) out.push_back(true);
  return out;
}

// ---- Two tiers for small kernels ----------------------------------------------------------
// The code generator's optimizations (instruction selection, register allocation,
// scheduling) are most of an LSTM cell kernel's compile time, and most of a cold first
// call's. A small-pipeline kernel is therefore loaded first as generated without them, from
// the same optimized IR, and a background thread generates it again fully; each step's entry
// then switches to that code. Both come from one IR (fused multiply-adds are decided by the
// IR's fmuladd, whatever the code generator's level), so results are the same before and
// after the switch. The disk cache gets the fully generated object only.

// Small products in a tiered compile: the quick object has an empty entry for each (never
// called: the runner runs those products on small_dot_reference until CpuKernels::full_code
// says the full code is in), and the upgrade compiles their code in a module of its own, linked into the
// full one. Their optimization and code generation cost about a fifth of an LSTM cell's
// first call.
void add_small_dot_stubs(llvm::Module& m, const ClusterProgram& p, const std::string& prefix) {
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (!is_small_dot_step(p.steps[k])) continue;
    llvm::IRBuilder<> b(m.getContext());
    begin_range_function(m, b, prefix + "_step" + std::to_string(k));
    b.CreateRetVoid();
  }
}

struct DotStep {
  size_t k;
  DType dtype;
  DotForm form;
};

std::vector<DotStep> small_dot_steps(const ClusterProgram& p) {
  std::vector<DotStep> out;
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (is_small_dot_step(p.steps[k])) out.push_back({k, p.steps[k].root->dtype, p.steps[k].dot});
  return out;
}

// Step k's entry calling the module's function for its form (element type, transposes),
// emitted with the first step of that form.
void emit_dot_step(llvm::Module& m, const DotStep& d, const std::string& prefix, unsigned vector_bytes) {
  const std::string body = prefix + "_dot_" + dtype_name(d.dtype) + (d.form.transpose_a ? "_ta" : "") +
                           (d.form.transpose_b ? "_tb" : "");
  if (!m.getFunction(body)) emit_small_dot(m, d.dtype, d.form, body, vector_bytes);
  emit_forward(m, prefix + "_step" + std::to_string(d.k), body);
}

// An IR module's functions renamed to <name>.t1, each called from <name> through the
// pointer <name>.impl (initialized to it), which the upgrade later points elsewhere.
void add_switchable_entries(llvm::Module& m, const std::vector<std::string>& names) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(ctx);
  for (const std::string& name : names) {
    llvm::Function* body = m.getFunction(name);
    if (!body) throw_runtime("LLVM: no kernel ", name, " to make switchable");
    body->setName(name + ".t1");
    auto* slot =
        new llvm::GlobalVariable(m, ptr, false, llvm::GlobalValue::ExternalLinkage, body, name + ".impl");
    slot->setAlignment(llvm::Align(8));
    llvm::Function* entry =
        llvm::Function::Create(body->getFunctionType(), llvm::GlobalValue::ExternalLinkage, name, m);
    entry->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    llvm::LoadInst* target = b.CreateLoad(ptr, slot);
    target->setAtomic(llvm::AtomicOrdering::Acquire);
    target->setAlignment(llvm::Align(8));
    std::vector<llvm::Value*> args;
    for (llvm::Argument& a : entry->args()) args.push_back(&a);
    b.CreateCall(body->getFunctionType(), target, args)->setTailCall();
    b.CreateRetVoid();
  }
}

struct UpgradeJob {
  // Weak: the worker must not keep code alive that no cluster uses (the in-memory cache would
  // then serve it to a new compile only while the job waits).
  std::weak_ptr<Loaded> quick;
  std::string bitcode, key, prefix;
  std::vector<bool> kernel_steps;
  std::string cache_dir;      // where the full object is stored ("" for nowhere)
  std::vector<DotStep> dots;  // small products: compiled here (add_small_dot_stubs)
  unsigned vector_bytes = 16;
};

// One worker thread, started on first use. At exit and before a fork it finishes its queue,
// so the disk cache gets the full code of a short-lived process, no thread holds the JIT's
// locks across a fork, and no compile runs while LLVM's globals are destroyed.
class Upgrader {
 public:
  void submit(UpgradeJob job) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
    if (!running_) {
      running_ = true;
      std::thread([this] { work(); }).detach();
    }
    if (!hooks_) {
      hooks_ = true;
      std::atexit([] { upgrader().drain(); });
      pthread_atfork([] { upgrader().before_fork(); }, [] { upgrader().after_fork(false); },
                     [] { upgrader().after_fork(true); });
    }
    wake_.notify_one();
  }
  void drain() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }
  static Upgrader& upgrader() {
    static auto* u = new Upgrader();  // leaked: the worker may outlive static destruction
    return *u;
  }

 private:
  void before_fork() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
    lock.release();  // held across the fork, released in both processes
  }
  void after_fork(bool child) {
    if (child) running_ = false;  // the child has no worker; the next submit starts one
    mu_.unlock();
  }
  void work() {
    std::unique_ptr<llvm::TargetMachine> tm;
    for (;;) {
      UpgradeJob job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      try {
        Jit& j = jit();
        // Its own target machine: one is not safe to generate code with from two threads.
        if (!tm)
          tm.reset(j.target->createTargetMachine(j.triple, j.cpu, j.features, llvm::TargetOptions(),
                                                 llvm::Reloc::PIC_, std::nullopt,
                                                 llvm::CodeGenOpt::Aggressive));
        upgrade(j, *tm, job);
        g_upgrades.fetch_add(1);
      } catch (...) {  // the quick code keeps running: it computes the same values
        g_upgrade_failures.fetch_add(1);
      }
      job = UpgradeJob();
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }
  static void upgrade(Jit& j, llvm::TargetMachine& tm, UpgradeJob& job) {
    // The full object is stored even when no cluster uses the quick code any more: the next
    // process loads it.
    llvm::LLVMContext ctx;
    auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(job.bitcode, job.prefix), ctx);
    if (!m) throw_runtime("LLVM: ", llvm::toString(m.takeError()));
    if (!job.dots.empty()) {
      auto dots = std::make_unique<llvm::Module>(job.prefix + "_dots", ctx);
      dots->setTargetTriple((*m)->getTargetTriple());
      dots->setDataLayout((*m)->getDataLayout());
      for (const DotStep& d : job.dots) emit_dot_step(*dots, d, job.prefix, job.vector_bytes);
      optimize(*dots, &tm, PipelineKind::kSmall);
      if (llvm::Linker::linkModules(**m, std::move(dots)))
        throw_runtime("LLVM: the small products' module does not link");
    }
    std::string obj = emit_module(**m, &tm, false);
    disk_cache_store_in(job.cache_dir, job.key, obj);
    // Under the JIT's lock, as compile_cpu's lookups: the quick code is either still used
    // (and switched) or released here, never kept alive by this thread alone.
    std::lock_guard<std::mutex> lock(j.mu);
    std::shared_ptr<Loaded> quick = job.quick.lock();
    if (!quick) return;
    std::shared_ptr<Loaded> full = load(j, job.kernel_steps, obj, job.prefix, false, false);
    for (size_t k = 0; k < full->fns.size(); ++k)
      if (full->fns[k])
        quick->slots[k]->store(reinterpret_cast<void*>(full->fns[k]), std::memory_order_release);
    quick->upgraded = std::move(full);
    quick->full_code.store(true, std::memory_order_release);
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<UpgradeJob> queue_;
  bool running_ = false, busy_ = false, hooks_ = false;
};

// JITFLOW_TIERED=0 generates small kernels fully before their first run; =quick keeps the
// quick code and never switches (tests compare the two tiers with these).
enum class Tiers { kBoth, kFullOnly, kQuickOnly };
Tiers tiers() {
  const char* t = std::getenv("JITFLOW_TIERED");
  if (t && std::string(t) == "0") return Tiers::kFullOnly;
  if (t && std::string(t) == "quick") return Tiers::kQuickOnly;
  return Tiers::kBoth;
}

CpuKernels kernels_of(std::shared_ptr<Loaded> code, bool from_cache) {
  CpuKernels out;
  out.fns = code->fns;
  if (!code->slots.empty()) out.full_code = &code->full_code;
  out.code = std::move(code);
  out.from_cache = from_cache;
  return out;
}

}  // namespace

// The JIT's set-up (LLVM's target, the ORC session, libmvec) takes about 0.7 ms, a quarter of
// a small function's first compiled call with a warm disk cache. Started on a thread of its
// own when tracing begins, it runs while Python traces; the first compile then finds it done,
// or waits for the rest of it (jit() is a function-local static). A failed set-up is left to
// that compile, which raises its error. Joined at exit and before a fork, so no thread is
// inside LLVM then.
void cpu_jit_prepare() {
  struct WarmUp {
    std::mutex mu;
    std::thread thread;
    void join() {
      std::lock_guard<std::mutex> lock(mu);
      if (thread.joinable()) thread.join();
    }
  };
  static WarmUp* w = new WarmUp();
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit([] { w->join(); });
    pthread_atfork([] { w->join(); }, nullptr, nullptr);
    std::lock_guard<std::mutex> lock(w->mu);
    w->thread = std::thread([] {
      try {
        jit();
      } catch (...) {
      }
    });
  });
}

int64_t cpu_code_objects_loaded() { return g_objects_loaded.load(); }
int64_t cpu_tier_upgrades() { return g_upgrades.load(); }
int64_t cpu_tier_upgrade_failures() { return g_upgrade_failures.load(); }
void cpu_wait_for_upgrades() { Upgrader::upgrader().drain(); }

namespace {
template <class T>
void reference_dot(char** bufs, const int64_t* params, DotForm form, bool fused) {
  const int64_t m = params[kDotM], n = params[kDotN], depth = params[kDotK];
  const T* a = reinterpret_cast<const T*>(bufs[params[kDotA]]);
  const T* b = reinterpret_cast<const T*>(bufs[params[kDotB]]);
  T* c = reinterpret_cast<T*>(bufs[params[kDotC]]);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t kk = 0; kk < depth; ++kk) {
        const T x = a[form.transpose_a ? kk * m + i : i * depth + kk];
        const T y = b[form.transpose_b ? j * depth + kk : kk * n + j];
        if (fused) {
          acc = std::fma(x, y, acc);
        } else {
          const volatile T p = x * y;  // rounded on its own, as an unfused multiply-add
          acc = p + acc;
        }
      }
      c[i * n + j] = acc;
    }
}
}  // namespace

void small_dot_reference(char** bufs, const int64_t* params, DType dtype, DotForm form) {
  const bool fused = jit().fma;
  if (dtype == DType::kFloat64)
    reference_dot<double>(bufs, params, form, fused);
  else
    reference_dot<float>(bufs, params, form, fused);
}

std::string cpu_target_description() {
  Jit& j = jit();
  return j.triple + "|" + j.cpu + "|" + j.features;
}

CpuKernels compile_cpu(const ClusterProgram& p, const std::string& label) {
  Jit& j = jit();
  std::lock_guard<std::mutex> lock(j.mu);
  const PipelineKind pipeline = choose_pipeline(p);
  std::string key =
      compile_cache_key(p.fingerprint, std::string(pipeline == PipelineKind::kSmall ? "cpu-small|" : "cpu|") +
                                           j.triple + "|" + j.cpu + "|" + j.features);
  auto it = j.loaded.find(key);
  if (it != j.loaded.end()) {
    if (auto code = it->second.lock()) return kernels_of(std::move(code), true);
    j.loaded.erase(it);
  }
  const char* fail = std::getenv("JITFLOW_FAIL_COMPILE");
  if (fail && *fail && std::string(fail) != "0")
    throw_runtime("compilation failure injected by JITFLOW_FAIL_COMPILE");
  std::string prefix = "jf_" + key.substr(0, 16);
  std::string obj;
  if (disk_cache_load(key, &obj)) {
    try {
      auto code = load(j, kernel_steps_of(p), obj, prefix);
      j.loaded[key] = code;
      return kernels_of(std::move(code), true);
    } catch (const Error& e) {  // foreign or damaged object code: compile it again
      disk_cache_reject(key, e.what());
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  llvm::LLVMContext ctx;
  llvm::Module m(prefix, ctx);
  m.setTargetTriple(j.triple);
  m.setDataLayout(j.tm->createDataLayout());
  const Tiers tier = pipeline == PipelineKind::kSmall ? tiers() : Tiers::kFullOnly;
  if (tier == Tiers::kFullOnly)
    for (const DotStep& d : small_dot_steps(p)) emit_dot_step(m, d, prefix, j.vector_bytes);
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kind == Step::kLoop)
      emit_loop_step(m, p.steps[k], prefix + "_step" + std::to_string(k), p.num_buffers,
                     pipeline == PipelineKind::kSmall);
    else if (p.steps[k].kind == Step::kRowGroup)
      emit_row_group_step(m, p.steps[k], prefix + "_step" + std::to_string(k), p.num_buffers);
  if (has_loop_driver(p)) emit_loop_driver(m, p, prefix, prefix + "_step" + std::to_string(p.steps.size()));
  std::string verr;
  llvm::raw_string_ostream vs(verr);
  if (llvm::verifyModule(m, &vs))
    throw Error(ErrorKind::kInternal, "LLVM IR verification failed: " + vs.str());
  add_vector_variants(m, j.avx2);
  dump_module(m, label, "before_opt");
  optimize(m, j.tm.get(), pipeline);
  if (pipeline == PipelineKind::kSmall) stats().small_pipeline_compilations.fetch_add(1);
  dump_module(m, label, "after_opt");
  std::shared_ptr<Loaded> code;
  if (tier != Tiers::kFullOnly) {
    UpgradeJob job{
        {}, "", key, prefix, kernel_steps_of(p), disk_cache_store_dir(), small_dot_steps(p), j.vector_bytes};
    {
      llvm::raw_string_ostream bc(job.bitcode);
      llvm::WriteBitcodeToFile(m, bc);
    }
    std::vector<std::string> names;
    for (size_t k = 0; k < job.kernel_steps.size(); ++k)
      if (job.kernel_steps[k]) names.push_back(prefix + "_step" + std::to_string(k));
    add_small_dot_stubs(m, p, prefix);
    add_switchable_entries(m, names);
    if (!j.tm_quick)  // made on first use: a process whose kernels all come from the disk cache needs none
      j.tm_quick.reset(j.target->createTargetMachine(j.triple, j.cpu, j.features, llvm::TargetOptions(),
                                                     llvm::Reloc::PIC_, std::nullopt,
                                                     llvm::CodeGenOpt::None));
    code = load(j, job.kernel_steps, emit_module(m, j.tm_quick.get(), false), prefix, true);
    job.quick = code;
    if (tier == Tiers::kBoth) Upgrader::upgrader().submit(std::move(job));
  } else {
    obj = emit_module(m, j.tm.get(), false);
    disk_cache_store(key, obj);
    code = load(j, kernel_steps_of(p), obj, prefix);
  }
  j.loaded[key] = code;
  CpuKernels out = kernels_of(std::move(code), false);
  out.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace jf
