// Module loading: PTX -> cubin (driver JIT linker) -> cuModuleLoadData, with the cubin cached.
#include "runtime/gpu/gpu_module.h"

#include <atomic>

#include "codegen/compile_cache.h"
#include "support/errors.h"

namespace jf {
namespace {

constexpr int kJitInputPtx = 1;  // CU_JIT_INPUT_PTX
std::atomic<int64_t> g_links{0};

// The driver's JIT: one PTX input, linked into a cubin for the current context's device.
std::string link_cubin(const std::string& ptx) {
  const CudaApi& api = cuda_api();
  void* state = nullptr;
  cuda_check(api.cuLinkCreate_v2(0, nullptr, nullptr, &state), "cuLinkCreate");
  std::string cubin;
  try {
    std::string text = ptx;  // cuLinkAddData takes a mutable pointer; the PTX must be NUL-ended
    cuda_check(api.cuLinkAddData_v2(state, kJitInputPtx, text.data(), text.size() + 1, "jitflow.ptx", 0,
                                    nullptr, nullptr),
               "cuLinkAddData");
    void* data = nullptr;
    size_t size = 0;
    cuda_check(api.cuLinkComplete(state, &data, &size), "cuLinkComplete");
    g_links.fetch_add(1);
    cubin.assign(static_cast<const char*>(data), size);  // owned by the link state
  } catch (...) {
    api.cuLinkDestroy(state);
    throw;
  }
  cuda_check(api.cuLinkDestroy(state), "cuLinkDestroy");
  return cubin;
}

}  // namespace

std::string cubin_target(GpuDevice& device) {
  return "cubin|sm_" + std::to_string(cuda_compute_capability(device.index())) + "|driver " +
         std::to_string(cuda_status().driver_version);
}

int64_t GpuModule::links() { return g_links.load(); }

std::shared_ptr<GpuModule> GpuModule::load(GpuDevice& device, const std::string& ptx) {
  static std::mutex mu;
  // Modules by key while some cluster or op kernel holds them: the last holder unloads it.
  static auto* loaded = new std::map<std::string, std::weak_ptr<GpuModule>>();
  std::string key = compile_cache_key(ptx, cubin_target(device));
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(key);
  if (it != loaded->end()) {
    if (auto m = it->second.lock()) return m;
    loaded->erase(it);
  }
  device.make_current();
  std::string cubin;
  auto m = std::shared_ptr<GpuModule>(new GpuModule());
  m->device_ = &device;
  m->cubin_from_disk_ = disk_cache_load(key, &cubin);
  if (m->cubin_from_disk_ &&
      cuda_api().cuModuleLoadData(&m->module_, cubin.data()) != 0) {  // 0: CUDA_SUCCESS
    disk_cache_reject(key, "the driver did not load it");             // foreign or damaged: link it again
    m->cubin_from_disk_ = false;
    m->module_ = nullptr;
  }
  if (!m->cubin_from_disk_) {
    cubin = link_cubin(ptx);
    disk_cache_store(key, cubin);
    cuda_check(cuda_api().cuModuleLoadData(&m->module_, cubin.data()), "cuModuleLoadData");
  }
  (*loaded)[key] = m;
  return m;
}

GpuModule::~GpuModule() {
  if (module_ && cuda_status().available) cuda_api().cuModuleUnload(module_);
}

void* GpuModule::function(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(name);
  if (it != functions_.end()) return it->second;
  void* f = nullptr;
  device_->make_current();
  CUresult r = cuda_api().cuModuleGetFunction(&f, module_, name.c_str());
  if (r != 0) cuda_check(r, ("cuModuleGetFunction(" + name + ")").c_str());
  functions_[name] = f;
  return f;
}

}  // namespace jf
