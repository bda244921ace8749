// The CUDA driver, loaded at run time (dlopen of libcuda.so.1) so jitflow imports and runs on
// machines without a GPU; every call's result is checked and reported by name.
#pragma once
#include <string>

namespace jf {

struct CudaStatus {
  bool available = false;
  int device_count = 0;
  int driver_version = 0;
  std::string error;  // why it is unavailable (dlopen message, or the failing call's name)
};

// Loads and initializes the driver once; never throws.
const CudaStatus& cuda_status();
// The name of device `i` (throws when unavailable).
std::string cuda_device_name(int i);

}  // namespace jf
