// A stand-in CUDA driver for testing the GPU runtime on machines without a GPU: the driver
// API entry points jitflow calls, with device memory in host memory, "cubin" that carries
// its PTX, and kernel launches recorded instead of run (tests read the record through the
// fake_cuda_* functions). Loaded through $JITFLOW_CUDA_DRIVER.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidPtx = 218, kNotFound = 500,
              kNotSupported = 801, kCaptureUnsupported = 900;
constexpr size_t kMemoryLimit = size_t(1) << 30;

struct Launch {
  std::string kernel;
  unsigned grid, block;
  int64_t total;
  uint64_t bufs, params;            // the tables' addresses: device memory, or `tables` below
  std::vector<uint64_t> tables[2];  // tables passed by value, copied at the launch
};

struct State {
  std::mutex mu;
  std::vector<Launch> launches;
  int allocs = 0, frees = 0, links = 0;
  // Copies by direction (0: host to device, 1: device to host, 2: on the device), their
  // bytes, and stream synchronizations: what a step costs besides its launches.
  int64_t copies[3] = {0, 0, 0}, copy_bytes[3] = {0, 0, 0}, syncs = 0;
  size_t in_use = 0;
  std::map<uint64_t, size_t> blocks;
  // CUDA graphs, when a test turns them on (off, stream capture is refused as by a driver
  // without it): launches made while capturing go into the graph, and a graph launch records
  // them again, as a replay runs them.
  bool graphs = false;
  std::vector<Launch>* capturing = nullptr;
  int64_t graph_launches = 0;
};
State& state() {
  static State* s = new State();
  return *s;
}

struct LinkState {
  std::string ptx, cubin;
};
// A kernel: its name and, per table parameter, its size in bytes when it is passed by
// value (`.param .align 8 .b8 k_param_0[N]`), 0 when it is a pointer (`.param .u64`).
struct Function {
  std::string name;
  size_t table_bytes[2] = {0, 0};
};
struct Module {
  std::string ptx;
  std::map<std::string, Function*> functions;
};

void parse_params(const std::string& ptx, size_t entry, Function* f) {
  size_t end = ptx.find(')', entry);
  size_t at = entry;
  for (int k = 0; k < 2; ++k) {
    at = ptx.find(".param", at);
    if (at == std::string::npos || at > end) return;
    size_t line_end = std::min(ptx.find('\n', at), end);
    std::string decl = ptx.substr(at, line_end - at);
    size_t lb = decl.find('[');
    if (decl.find(".b8") != std::string::npos && lb != std::string::npos)
      f->table_bytes[k] = std::strtoull(decl.c_str() + lb + 1, nullptr, 10);
    at = line_end;
  }
}

}  // namespace

extern "C" {

int cuInit(unsigned) { return kSuccess; }
int cuDriverGetVersion(int* v) { return *v = 13000, kSuccess; }
int cuDeviceGetCount(int* n) { return *n = 1, kSuccess; }
int cuDeviceGet(int* d, int i) { return i == 0 ? (*d = 0, kSuccess) : kInvalidValue; }
int cuDeviceGetName(char* name, int len, int) {
  std::strncpy(name, "jitflow fake GPU", len);
  return kSuccess;
}
int cuDeviceGetAttribute(int* v, int attr, int) {
  *v = attr == 16 ? 4 : attr == 75 ? 8 : attr == 76 ? 0 : 0;  // 4 SMs, compute capability 8.0
  return kSuccess;
}
int cuGetErrorName(int r, const char** s) {
  *s = r == kOutOfMemory  ? "CUDA_ERROR_OUT_OF_MEMORY"
       : r == kInvalidPtx ? "CUDA_ERROR_INVALID_PTX"
       : r == kNotFound   ? "CUDA_ERROR_NOT_FOUND"
                          : "CUDA_ERROR_INVALID_VALUE";
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** ctx, int) { return *ctx = &state(), kSuccess; }
int cuCtxSetCurrent(void*) { return kSuccess; }

int cuMemAlloc_v2(uint64_t* p, size_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.in_use + bytes > kMemoryLimit) return kOutOfMemory;
  void* m = std::malloc(bytes);
  *p = reinterpret_cast<uint64_t>(m);
  s.blocks[*p] = bytes;
  s.in_use += bytes;
  s.allocs++;
  return kSuccess;
}
int cuMemFree_v2(uint64_t p) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.blocks.find(p);
  if (it == s.blocks.end()) return kInvalidValue;
  s.in_use -= it->second;
  s.blocks.erase(it);
  s.frees++;
  std::free(reinterpret_cast<void*>(p));
  return kSuccess;
}
// Page-locked host memory the device maps: host memory here, its device address the same.
int cuMemHostAlloc(void** p, size_t bytes, unsigned) {
  *p = std::calloc(1, bytes);
  return *p ? kSuccess : kOutOfMemory;
}
int cuMemHostGetDevicePointer_v2(uint64_t* d, void* p, unsigned) {
  return *d = reinterpret_cast<uint64_t>(p), kSuccess;
}
int cuMemFreeHost(void* p) { return std::free(p), kSuccess; }

namespace {
void count_copy(int kind, size_t n) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().copies[kind]++;
  state().copy_bytes[kind] += static_cast<int64_t>(n);
}
}  // namespace
int cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t n, void*) {
  count_copy(0, n);
  return std::memcpy(reinterpret_cast<void*>(dst), src, n), kSuccess;
}
int cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t n, void*) {
  count_copy(1, n);
  return std::memcpy(dst, reinterpret_cast<const void*>(src), n), kSuccess;
}
int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void*) {
  count_copy(2, n);
  return std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n), kSuccess;
}
int cuStreamCreate(void** s, unsigned) { return *s = &state(), kSuccess; }
int cuStreamSynchronize(void*) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().capturing) return kCaptureUnsupported;
  state().syncs++;
  return kSuccess;
}
int cuStreamBeginCapture_v2(void*, int) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().graphs) return kNotSupported;
  if (state().capturing) return kInvalidValue;
  state().capturing = new std::vector<Launch>();
  return kSuccess;
}
int cuStreamEndCapture(void*, void** graph) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().capturing) return kInvalidValue;
  *graph = state().capturing;
  state().capturing = nullptr;
  return kSuccess;
}
int cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long) {
  *exec = new std::vector<Launch>(*static_cast<std::vector<Launch>*>(graph));
  return kSuccess;
}
int cuGraphDestroy(void* graph) { return delete static_cast<std::vector<Launch>*>(graph), kSuccess; }
int cuGraphExecDestroy(void* exec) { return delete static_cast<std::vector<Launch>*>(exec), kSuccess; }
int cuGraphLaunch(void* exec, void*) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().capturing) return kCaptureUnsupported;
  state().graph_launches++;
  for (const Launch& l : *static_cast<std::vector<Launch>*>(exec)) {
    state().launches.push_back(l);
    Launch& kept = state().launches.back();
    if (!l.tables[0].empty()) kept.bufs = reinterpret_cast<uint64_t>(kept.tables[0].data());
    if (!l.tables[1].empty()) kept.params = reinterpret_cast<uint64_t>(kept.tables[1].data());
  }
  return kSuccess;
}
int cuStreamDestroy_v2(void*) { return kSuccess; }

int cuLinkCreate_v2(unsigned, int*, void**, void** out) { return *out = new LinkState(), kSuccess; }
int cuLinkAddData_v2(void* st, int type, void* data, size_t size, const char*, unsigned, int*, void**) {
  std::string text(static_cast<const char*>(data), strnlen(static_cast<const char*>(data), size));
  if (type != 1 || text.find(".version") == std::string::npos || text.find(".target") == std::string::npos)
    return kInvalidPtx;
  static_cast<LinkState*>(st)->ptx = text;
  return kSuccess;
}
int cuLinkComplete(void* st, void** cubin, size_t* size) {
  auto* l = static_cast<LinkState*>(st);
  l->cubin = "FAKECUBIN\n" + l->ptx;
  *cubin = l->cubin.data();
  *size = l->cubin.size() + 1;
  std::lock_guard<std::mutex> lock(state().mu);
  state().links++;
  return kSuccess;
}
int cuLinkDestroy(void* st) { return delete static_cast<LinkState*>(st), kSuccess; }

int cuModuleLoadData(void** m, const void* image) {
  std::string text(static_cast<const char*>(image));
  if (text.rfind("FAKECUBIN\n", 0) != 0) return kInvalidValue;
  *m = new Module{text.substr(10), {}};
  return kSuccess;
}
int cuModuleUnload(void* m) { return delete static_cast<Module*>(m), kSuccess; }
int cuModuleGetFunction(void** f, void* mod, const char* name) {
  auto* m = static_cast<Module*>(mod);
  size_t entry = m->ptx.find(std::string(".entry ") + name + "(");
  if (entry == std::string::npos) return kNotFound;
  auto& slot = m->functions[name];
  if (!slot) {
    slot = new Function{name};
    parse_params(m->ptx, entry, slot);
  }
  *f = slot;
  return kSuccess;
}
int cuLaunchKernel(void* f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned, void*,
                   void** args, void**) {
  const auto* fn = static_cast<const Function*>(f);
  Launch l{fn->name, gx, bx, *static_cast<int64_t*>(args[2]), 0, 0, {}};
  uint64_t* addr[2] = {&l.bufs, &l.params};
  for (int k = 0; k < 2; ++k) {
    if (fn->table_bytes[k]) {
      const auto* t = static_cast<const uint64_t*>(args[k]);
      l.tables[k].assign(t, t + fn->table_bytes[k] / 8);
    } else {
      *addr[k] = *static_cast<uint64_t*>(args[k]);
    }
  }
  std::lock_guard<std::mutex> lock(state().mu);
  std::vector<Launch>& into = state().capturing ? *state().capturing : state().launches;
  into.push_back(std::move(l));
  Launch& kept = into.back();
  // Moving a Launch keeps its tables' storage, so these addresses outlive later launches.
  if (fn->table_bytes[0]) kept.bufs = reinterpret_cast<uint64_t>(kept.tables[0].data());
  if (fn->table_bytes[1]) kept.params = reinterpret_cast<uint64_t>(kept.tables[1].data());
  return kSuccess;
}

// ---- for the tests ----------------------------------------------------------------------
int fake_cuda_launch_count() { return static_cast<int>(state().launches.size()); }
// The tables' addresses (host copies of tables passed by value) stay valid until
// fake_cuda_clear_launches.
const char* fake_cuda_launch(int i, unsigned* grid, unsigned* block, int64_t* total, uint64_t* bufs,
                             uint64_t* params) {
  const Launch& l = state().launches.at(i);
  *grid = l.grid, *block = l.block, *total = l.total, *bufs = l.bufs, *params = l.params;
  return l.kernel.c_str();
}
int fake_cuda_allocations() { return state().allocs; }
int fake_cuda_frees() { return state().frees; }
int fake_cuda_links() { return state().links; }
void fake_cuda_clear_launches() { state().launches.clear(); }
// kind 0: host to device, 1: device to host, 2: device to device.
int64_t fake_cuda_copies(int kind) { return state().copies[kind]; }
int64_t fake_cuda_copy_bytes(int kind) { return state().copy_bytes[kind]; }
int64_t fake_cuda_synchronizations() { return state().syncs; }
void fake_cuda_enable_graphs(int on) { state().graphs = on != 0; }
int64_t fake_cuda_graph_launches() { return state().graph_launches; }

}  // extern "C"
