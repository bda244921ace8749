// What a bug report needs from the C++ side (jf.config.info()): the oneDNN linked in, what
// the eager kernels were compiled for and run, and the compile cache's directory.
#include <dnnl.h>

#include <string>

#include "codegen/compile_cache.h"
#include "kernels/simd/table.h"
#include "python/bindings.h"

namespace jf::py_bridge {

void bind_info(py::module_& m) {
  m.def("onednn_version", [] {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  });
  // "avx512", "avx2", the portable baseline ("x86-64-v2") or "native"; raises for a
  // JITFLOW_EAGER_ISA this CPU or build cannot honour.
  m.def("eager_isa", [] { return std::string(simd::eager_isa()); });
  m.def("eager_isa_variants", [] { return std::string(simd::eager_isa_variants()); });
  m.def("disk_cache_dir", &disk_cache_dir);
}

}  // namespace jf::py_bridge
