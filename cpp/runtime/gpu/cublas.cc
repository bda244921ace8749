// The cuBLAS loader and the row-major GEMM mapping on top of its column-major API.
#include "runtime/gpu/cublas.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "core/broadcast.h"
#include "runtime/gpu/gpu_buffer.h"
#include "support/errors.h"

namespace jf {
namespace {

using Status = int;
using Handle = void*;
template <class T>
using GemmStridedBatched = Status (*)(Handle, int, int, int, int, int, const T*, const T*, int, long long,
                                      const T*, int, long long, const T*, T*, int, long long, int);
struct Cublas {
  Status (*create)(Handle*) = nullptr;
  Status (*set_stream)(Handle, void*) = nullptr;
  const char* (*status_name)(Status) = nullptr;              // absent before cuBLAS 11.4
  Status (*set_math_mode)(Handle, int) = nullptr;            // optional: without it, float32 stays float32
  Status (*set_workspace)(Handle, void*, size_t) = nullptr;  // optional (cuBLAS 11.4 on)
  GemmStridedBatched<float> sgemm = nullptr;
  GemmStridedBatched<double> dgemm = nullptr;
  std::string error, library;
};

const Cublas& cublas() {
  static Cublas* c = [] {
    auto* c = new Cublas();
    const char* env = std::getenv("JITFLOW_CUBLAS");
    void* lib = nullptr;
    for (const char* name : {env && *env ? env : "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
        c->library = name;
        break;
      }
      if (env && *env) break;  // an explicit library is the only one tried
    }
    if (!lib) {
      const char* e = dlerror();
      c->error = std::string("cuBLAS could not be loaded (") + (e ? e : "libcublas.so") + ")";
      return c;
    }
    auto sym = [&](const char* name, auto* fn) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, name));
      if (!*fn && c->error.empty()) c->error = c->library + " has no symbol " + name;
    };
    sym("cublasCreate_v2", &c->create);
    sym("cublasSetStream_v2", &c->set_stream);
    sym("cublasSgemmStridedBatched", &c->sgemm);
    sym("cublasDgemmStridedBatched", &c->dgemm);
    c->status_name = reinterpret_cast<const char* (*)(Status)>(dlsym(lib, "cublasGetStatusName"));
    c->set_math_mode = reinterpret_cast<Status (*)(Handle, int)>(dlsym(lib, "cublasSetMathMode"));
    c->set_workspace =
        reinterpret_cast<Status (*)(Handle, void*, size_t)>(dlsym(lib, "cublasSetWorkspace_v2"));
    return c;
  }();
  return *c;
}

void check(Status s, const char* call) {
  if (s == 0) return;
  const Cublas& c = cublas();
  std::string name = c.status_name ? c.status_name(s) : "CUBLAS_STATUS " + std::to_string(s);
  throw_runtime(call, " failed: ", name);
}

// TF's default: float32 GEMMs may round their inputs to TensorFloat-32 (tensor cores).
std::atomic<bool> g_tf32{true};
constexpr int kDefaultMath = 0, kTf32TensorOpMath = 3;  // cublasMath_t

// One handle per device, bound to the device's stream so GEMMs order with the kernels, its
// math mode following the TensorFloat-32 switch.
Handle handle_for(GpuDevice& d) {
  static std::mutex mu;
  static auto* handles = new std::map<int, std::pair<Handle, int>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& [h, mode] = (*handles)[d.index()];
  const Cublas& c = cublas();
  if (!h) {
    if (!c.error.empty()) throw_runtime("GPU matmul needs cuBLAS: ", c.error);
    d.make_current();
    Handle fresh = nullptr;  // kept only once it is bound to the stream
    check(c.create(&fresh), "cublasCreate");
    check(c.set_stream(fresh, d.stream()), "cublasSetStream");
    // A workspace of our own, from the pool and kept: GEMMs captured into a CUDA graph
    // (gpu_graph.cc) must not allocate one while the stream is capturing. 32 MiB is what
    // cuBLAS asks for on Hopper.
    if (c.set_workspace) {
      constexpr size_t kWorkspace = size_t(32) << 20;
      check(c.set_workspace(fresh, reinterpret_cast<void*>(d.allocate(kWorkspace)), kWorkspace),
            "cublasSetWorkspace");
    }
    h = fresh;
    mode = -1;  // not set yet: set below
  }
  const int want = g_tf32.load() ? kTf32TensorOpMath : kDefaultMath;
  if (mode != want && c.set_math_mode) {
    check(c.set_math_mode(h, want), "cublasSetMathMode");
    mode = want;
  }
  return h;
}

// Row-major C (m x n) = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B as
// its first operand and A as its second, with m and n swapped; leading dims are row lengths.
template <class T>
void gemm(GemmStridedBatched<T> fn, Handle h, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
          CUdeviceptr a, int64_t sa, CUdeviceptr b, int64_t sb, CUdeviceptr y, int64_t sy, int64_t batches,
          double alpha) {
  const T scale = static_cast<T>(alpha), zero = 0;
  int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  check(fn(h, tb ? 1 : 0, ta ? 1 : 0, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &scale,
           reinterpret_cast<const T*>(b), ldb, sb, reinterpret_cast<const T*>(a), lda, sa, &zero,
           reinterpret_cast<T*>(y), static_cast<int>(n), sy, static_cast<int>(batches)),
        "cublasGemmStridedBatched");
}

}  // namespace

void set_tensor_float_32(bool enabled) { g_tf32.store(enabled); }
bool tensor_float_32() { return g_tf32.load(); }

bool cublas_available(std::string* why) {
  const Cublas& c = cublas();
  if (why) *why = c.error;
  return c.error.empty();
}

void gpu_matmul(GpuDevice& device, const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& y,
                double alpha) {
  if (y.dtype() != DType::kFloat32 && y.dtype() != DType::kFloat64)
    throw_unimplemented("GPU matmul supports float32 and float64, got ", dtype_name(y.dtype()));
  int ra = a.rank(), rb = b.rank(), ry = y.rank();
  int64_t m = y.shape()[ry - 2], n = y.shape()[ry - 1];
  int64_t k = ta ? a.shape()[ra - 2] : a.shape()[ra - 1];
  for (int64_t d : {m, n, k})
    if (d > INT32_MAX) throw_unimplemented("GPU matmul: dim ", d, " exceeds cuBLAS's 32-bit sizes");
  if (y.num_elements() == 0) return;
  Handle h = handle_for(device);
  const Cublas& c = cublas();
  device.make_current();
  auto run = [&](CUdeviceptr pa, int64_t sa, CUdeviceptr pb, int64_t sb, CUdeviceptr py, int64_t batches) {
    if (y.dtype() == DType::kFloat32)
      gemm<float>(c.sgemm, h, ta, tb, m, n, k, pa, sa, pb, sb, py, m * n, batches, alpha);
    else
      gemm<double>(c.dgemm, h, ta, tb, m, n, k, pa, sa, pb, sb, py, m * n, batches, alpha);
  };
  size_t es = dtype_size(y.dtype());
  CUdeviceptr pa = device_ptr(a), pb = device_ptr(b), py = device_ptr(y);
  Shape bs, ba, bb;
  for (int i = 0; i < ry - 2; ++i) bs.push_back(y.shape()[i]);
  for (int i = 0; i < ra - 2; ++i) ba.push_back(a.shape()[i]);
  for (int i = 0; i < rb - 2; ++i) bb.push_back(b.shape()[i]);
  int64_t batches = bs.num_elements();
  int64_t na = ba.num_elements(), nb = bb.num_elements();
  if (k == 0) {  // an empty contraction is all zeros; cuBLAS is not asked to write them
    std::vector<char> zeros(y.nbytes());
    device.copy_to_device(py, zeros.data(), zeros.size());
    device.synchronize();
    return;
  }
  // Both sides batched alike, or one side a single matrix: one strided-batched call.
  if ((na == 1 || ba == bs) && (nb == 1 || bb == bs)) {
    run(pa, na == 1 ? 0 : m * k, pb, nb == 1 ? 0 : k * n, py, batches);
    return;
  }
  // General batch broadcasting: one call per output matrix.
  BroadcastPlan p = make_broadcast(bs, {ba, bb});
  for (int64_t i = 0; i < batches; ++i) {
    auto [xa, xb] = p.offsets2(i);
    run(pa + xa * m * k * es, 0, pb + xb * k * n * es, 0, py + i * m * n * es, 1);
  }
}

}  // namespace jf
