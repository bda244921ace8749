// A stand-in CUDA driver for testing the GPU runtime on machines without a GPU: the driver
// API entry points jitflow calls, with device memory in host memory, "cubin" that carries
// its PTX, and kernel launches recorded instead of run (tests read the record through the
// fake_cuda_* functions). Loaded through $JITFLOW_CUDA_DRIVER.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidPtx = 218, kNotFound = 500;
constexpr size_t kMemoryLimit = size_t(1) << 30;

struct Launch {
  std::string kernel;
  unsigned grid, block;
  int64_t total;
  uint64_t bufs, params;
};

struct State {
  std::mutex mu;
  std::vector<Launch> launches;
  int allocs = 0, frees = 0, links = 0;
  size_t in_use = 0;
  std::map<uint64_t, size_t> blocks;
};
State& state() {
  static State* s = new State();
  return *s;
}

struct LinkState {
  std::string ptx, cubin;
};
struct Module {
  std::string ptx;
  std::map<std::string, std::string*> functions;
};

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
int cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t n, void*) {
  return std::memcpy(reinterpret_cast<void*>(dst), src, n), kSuccess;
}
int cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t n, void*) {
  return std::memcpy(dst, reinterpret_cast<const void*>(src), n), kSuccess;
}
int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void*) {
  return std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n), kSuccess;
}
int cuStreamCreate(void** s, unsigned) { return *s = &state(), kSuccess; }
int cuStreamSynchronize(void*) { return kSuccess; }
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
  if (m->ptx.find(std::string(".entry ") + name + "(") == std::string::npos) return kNotFound;
  auto& slot = m->functions[name];
  if (!slot) slot = new std::string(name);
  *f = slot;
  return kSuccess;
}
int cuLaunchKernel(void* f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned, void*,
                   void** args, void**) {
  Launch l{*static_cast<std::string*>(f),
           gx,
           bx,
           *static_cast<int64_t*>(args[2]),
           *static_cast<uint64_t*>(args[0]),
           *static_cast<uint64_t*>(args[1])};
  std::lock_guard<std::mutex> lock(state().mu);
  state().launches.push_back(l);
  return kSuccess;
}

// ---- for the tests ----------------------------------------------------------------------
int fake_cuda_launch_count() { return static_cast<int>(state().launches.size()); }
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

}  // extern "C"
