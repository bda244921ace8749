// PTX loaded on a GPU. The driver's JIT linker (cuLink*) turns the PTX into cubin for the
// device, and the cubin goes into the on-disk compile cache keyed by the PTX, the device's
// compute capability and the driver version, so later processes load cubin directly.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/gpu/gpu_device.h"

namespace jf {

class GpuModule {
 public:
  // The module for this PTX on this device (memory cache, then disk cache, then cuLink).
  static std::shared_ptr<GpuModule> load(GpuDevice& device, const std::string& ptx);
  ~GpuModule();
  void* function(const std::string& name);  // cuModuleGetFunction, cached
  bool cubin_from_disk() const { return cubin_from_disk_; }
  static int64_t links();  // cuLinkComplete calls so far (for tests and stats)

 private:
  GpuModule() = default;
  GpuDevice* device_ = nullptr;
  void* module_ = nullptr;
  bool cubin_from_disk_ = false;
  std::mutex mu_;
  std::map<std::string, void*> functions_;
};

// The cubin cache key's target part: "cubin|sm_<major><minor>|driver <version>".
std::string cubin_target(GpuDevice& device);

}  // namespace jf
