// The driver loader: every entry point the runtime uses, resolved with dlsym once. A missing
// library, symbol or failing cuInit leaves the driver unavailable with the reason recorded.
#include "runtime/gpu/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "support/errors.h"

namespace jf {
namespace {

CudaApi g_api{};
CudaStatus g_status;

std::string error_name(CUresult r) {
  const char* n = nullptr;
  if (g_api.cuGetErrorName && g_api.cuGetErrorName(r, &n) == 0 && n) return n;
  return "CUDA error " + std::to_string(r);
}

template <class F>
bool resolve(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!*fn) g_status.error = g_status.library + " has no symbol " + name;
  return *fn != nullptr;
}

bool resolve_all(void* lib) {
#define JF_RESOLVE(name) resolve(lib, #name, &g_api.name)
  return JF_RESOLVE(cuInit) && JF_RESOLVE(cuDriverGetVersion) && JF_RESOLVE(cuDeviceGetCount) &&
         JF_RESOLVE(cuDeviceGet) && JF_RESOLVE(cuDeviceGetName) && JF_RESOLVE(cuDeviceGetAttribute) &&
         JF_RESOLVE(cuGetErrorName) && JF_RESOLVE(cuDevicePrimaryCtxRetain) && JF_RESOLVE(cuCtxSetCurrent) &&
         JF_RESOLVE(cuMemAlloc_v2) && JF_RESOLVE(cuMemFree_v2) && JF_RESOLVE(cuMemHostAlloc) &&
         JF_RESOLVE(cuMemHostGetDevicePointer_v2) && JF_RESOLVE(cuMemFreeHost) &&
         JF_RESOLVE(cuMemcpyHtoDAsync_v2) && JF_RESOLVE(cuMemcpyDtoHAsync_v2) &&
         JF_RESOLVE(cuMemcpyDtoDAsync_v2) && JF_RESOLVE(cuStreamCreate) && JF_RESOLVE(cuStreamSynchronize) &&
         JF_RESOLVE(cuStreamDestroy_v2) && JF_RESOLVE(cuLinkCreate_v2) && JF_RESOLVE(cuLinkAddData_v2) &&
         JF_RESOLVE(cuLinkComplete) && JF_RESOLVE(cuLinkDestroy) && JF_RESOLVE(cuModuleLoadData) &&
         JF_RESOLVE(cuModuleUnload) && JF_RESOLVE(cuModuleGetFunction) && JF_RESOLVE(cuLaunchKernel);
#undef JF_RESOLVE
}

void load() {
  // $JITFLOW_CUDA_DRIVER names another driver library (a test double, or a driver installed
  // outside the loader's path).
  const char* env = std::getenv("JITFLOW_CUDA_DRIVER");
  g_status.library = env && *env ? env : "libcuda.so.1";
  void* lib = dlopen(g_status.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    g_status.error = "the CUDA driver could not be loaded (" + std::string(e ? e : g_status.library) +
                     "); install the NVIDIA driver to use a GPU";
    return;
  }
  if (!resolve_all(lib)) return;
    // The optional entry points stay null where the driver lacks them.
#define JF_RESOLVE_OPTIONAL(name) g_api.name = reinterpret_cast<decltype(g_api.name)>(dlsym(lib, #name))
  JF_RESOLVE_OPTIONAL(cuStreamBeginCapture_v2);
  JF_RESOLVE_OPTIONAL(cuStreamEndCapture);
  JF_RESOLVE_OPTIONAL(cuGraphInstantiateWithFlags);
  JF_RESOLVE_OPTIONAL(cuGraphLaunch);
  JF_RESOLVE_OPTIONAL(cuGraphExecDestroy);
  JF_RESOLVE_OPTIONAL(cuGraphDestroy);
#undef JF_RESOLVE_OPTIONAL
  CUresult r = g_api.cuInit(0);
  if (r != 0) {
    g_status.error = "cuInit failed: " + error_name(r);
    return;
  }
  g_api.cuDriverGetVersion(&g_status.driver_version);
  r = g_api.cuDeviceGetCount(&g_status.device_count);
  if (r != 0) {
    g_status.error = "cuDeviceGetCount failed: " + error_name(r);
    return;
  }
  if (g_status.device_count == 0) {
    g_status.error = "the CUDA driver reports no GPU";
    return;
  }
  g_status.available = true;
}

}  // namespace

const CudaStatus& cuda_status() {
  static std::once_flag once;
  std::call_once(once, load);
  return g_status;
}

const CudaApi& cuda_api() {
  const CudaStatus& s = cuda_status();
  if (!s.available) throw_runtime("no GPU: ", s.error);
  return g_api;
}

void cuda_check(CUresult r, const char* call) {
  if (r != 0) throw_runtime(call, " failed: ", error_name(r));
}

int cuda_device_attribute(int device, int attribute) {
  const CudaApi& api = cuda_api();
  int dev = 0, v = 0;
  cuda_check(api.cuDeviceGet(&dev, device), "cuDeviceGet");
  cuda_check(api.cuDeviceGetAttribute(&v, attribute, dev), "cuDeviceGetAttribute");
  return v;
}

int cuda_compute_capability(int device) {
  constexpr int kMajor = 75, kMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
  return cuda_device_attribute(device, kMajor) * 10 + cuda_device_attribute(device, kMinor);
}

std::string cuda_device_name(int i) {
  const CudaApi& api = cuda_api();
  int dev = 0;
  cuda_check(api.cuDeviceGet(&dev, i), "cuDeviceGet");
  char name[256] = {0};
  cuda_check(api.cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
  return name;
}

}  // namespace jf
