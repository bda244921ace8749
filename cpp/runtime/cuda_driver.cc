// Minimal driver loader: the entry points needed to find devices, resolved with dlsym.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "support/errors.h"

namespace jf {
namespace {

using CUresult = int;
struct Api {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(int*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
};

Api g_api;
CudaStatus g_status;

std::string error_name(CUresult r) {
  const char* n = nullptr;
  if (g_api.cuGetErrorName && g_api.cuGetErrorName(r, &n) == 0 && n) return n;
  return "CUDA error " + std::to_string(r);
}

template <class F>
bool resolve(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!*fn) g_status.error = std::string("libcuda.so.1 has no symbol ") + name;
  return *fn != nullptr;
}

void load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    g_status.error = std::string("the CUDA driver could not be loaded (") + (e ? e : "libcuda.so.1") +
                     "); install the NVIDIA driver to use a GPU";
    return;
  }
  if (!resolve(lib, "cuInit", &g_api.cuInit) || !resolve(lib, "cuDeviceGetCount", &g_api.cuDeviceGetCount) ||
      !resolve(lib, "cuDeviceGet", &g_api.cuDeviceGet) ||
      !resolve(lib, "cuDeviceGetName", &g_api.cuDeviceGetName) ||
      !resolve(lib, "cuDriverGetVersion", &g_api.cuDriverGetVersion) ||
      !resolve(lib, "cuGetErrorName", &g_api.cuGetErrorName))
    return;
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

std::string cuda_device_name(int i) {
  const CudaStatus& s = cuda_status();
  if (!s.available) throw_runtime("no GPU: ", s.error);
  int dev = 0;
  CUresult r = g_api.cuDeviceGet(&dev, i);
  if (r != 0) throw_runtime("cuDeviceGet(", i, ") failed: ", error_name(r));
  char name[256] = {0};
  r = g_api.cuDeviceGetName(name, sizeof(name), dev);
  if (r != 0) throw_runtime("cuDeviceGetName failed: ", error_name(r));
  return name;
}

}  // namespace jf
