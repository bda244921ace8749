// The CUDA driver, loaded at run time (dlopen of libcuda.so.1, or $JITFLOW_CUDA_DRIVER) so
// jitflow imports and runs on machines without a GPU; every call's result is checked and
// reported by the call's name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace jf {

struct CudaStatus {
  bool available = false;
  int device_count = 0;
  int driver_version = 0;
  std::string library;  // the driver library that was opened
  std::string error;    // why it is unavailable (dlopen message, or the failing call's name)
};

// Loads and initializes the driver once; never throws.
const CudaStatus& cuda_status();
// The name of device `i` (throws when unavailable).
std::string cuda_device_name(int i);

// The driver entry points the GPU runtime calls (types as in cuda.h, handles opaque).
using CUresult = int;
using CUdeviceptr = uint64_t;
struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDeviceGetName)(char*, int, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, int);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr*, void*, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, size_t, void*);
  CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, size_t, void*);
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, void*);
  CUresult (*cuStreamCreate)(void**, unsigned);
  CUresult (*cuStreamSynchronize)(void*);
  CUresult (*cuStreamDestroy_v2)(void*);
  CUresult (*cuLinkCreate_v2)(unsigned, int*, void**, void**);
  CUresult (*cuLinkAddData_v2)(void*, int, void*, size_t, const char*, unsigned, int*, void**);
  CUresult (*cuLinkComplete)(void*, void**, size_t*);
  CUresult (*cuLinkDestroy)(void*);
  CUresult (*cuModuleLoadData)(void**, const void*);
  CUresult (*cuModuleUnload)(void*);
  CUresult (*cuModuleGetFunction)(void**, void*, const char*);
  CUresult (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             void*, void**, void**);
  // Optional, null where the driver lacks them (gpu_graph.cc then launches kernel by kernel):
  // stream capture into a CUDA graph and its replay.
  CUresult (*cuStreamBeginCapture_v2)(void*, int);
  CUresult (*cuStreamEndCapture)(void*, void**);
  CUresult (*cuGraphInstantiateWithFlags)(void**, void*, unsigned long long);
  CUresult (*cuGraphLaunch)(void*, void*);
  CUresult (*cuGraphExecDestroy)(void*);
  CUresult (*cuGraphDestroy)(void*);
};

// The loaded entry points; throws jf::Error (naming what is missing) without a usable GPU.
const CudaApi& cuda_api();
// Throws jf::Error "<call> failed: CUDA_ERROR_..." unless r is CUDA_SUCCESS.
void cuda_check(CUresult r, const char* call);
// A device attribute (cuDeviceGetAttribute), e.g. 16 = multiprocessor count.
int cuda_device_attribute(int device, int attribute);
// The compute capability as major * 10 + minor (80 for sm_80).
int cuda_compute_capability(int device);

}  // namespace jf
