// The GPU runtime (driver loading, device, allocator, copies, module loading with the cubin
// cache, launches) against the stand-in driver of fake_cuda.cc: what can be checked
// without a GPU. Kernels are recorded by the fake driver, not run.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../static_params.h"
#include "codegen/compile_cache.h"
#include "codegen/kernel_ir.h"
#include "codegen/nvptx/nvptx_compiler.h"
#include "runtime/gpu/gpu_launch.h"

namespace jf {
namespace {

// Before anything loads the driver: the fake one, and a fresh compile cache (removed at exit).
std::string g_cache_dir;
const bool kEnv = [] {
  setenv("JITFLOW_CUDA_DRIVER", JF_FAKE_CUDA_PATH, 0);
  char dir[] = "/tmp/jf_gpu_cache_XXXXXX";
  g_cache_dir = mkdtemp(dir);
  setenv("JITFLOW_CACHE_DIR", g_cache_dir.c_str(), 1);
  std::atexit([] { std::filesystem::remove_all(g_cache_dir); });
  return true;
}();

template <class F>
F fake(const char* name) {
  void* lib = dlopen(JF_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen(JF_FAKE_CUDA_PATH, RTLD_NOW);
  return reinterpret_cast<F>(dlsym(lib, name));
}
int fake_count(const char* name) { return fake<int (*)()>(name)(); }
int64_t fake_count64(const char* name, int kind) { return fake<int64_t (*)(int)>(name)(kind); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// y = reduce_sum(tanh(x), axis=1) for x [rows, 300]: one elementwise-fused reduction step;
// and exp(x) returned too: an elementwise step.
struct Program {
  Graph g;
  std::unique_ptr<ClusterProgram> p;
  explicit Program(int64_t rows) {
    Node* x = g.add_node(OpId::Placeholder, "x", {}, Attrs(), {{DType::kFloat32, Shape{rows, 300}}});
    g.inputs = {x};
    Attrs axes;
    axes.set("value", Tensor::from_int64s({1}, DType::kInt32));
    Node* ax = g.add_node(OpId::Const, "axes", {}, axes, {{DType::kInt32, Shape{1}}});
    Node* t = g.add_node(OpId::Tanh, "t", {{x, 0}}, Attrs(), {{DType::kFloat32, Shape{rows, 300}}});
    Node* s = g.add_node(OpId::Sum, "s", {{t, 0}, {ax, 0}}, Attrs(), {{DType::kFloat32, Shape{rows}}});
    Node* e = g.add_node(OpId::Exp, "e", {{x, 0}}, Attrs(), {{DType::kFloat32, Shape{rows, 300}}});
    g.outputs = {{s, 0}, {e, 0}};
    std::string why;
    p = lower_cluster(g, {ax, t, s, e}, &why);
    EXPECT_TRUE(p) << why;
  }
};

TEST(GpuRuntime, DriverIsLoadedFromTheEnvironmentAndDescribesItsDevice) {
  const CudaStatus& s = cuda_status();
  ASSERT_TRUE(s.available) << s.error;
  EXPECT_EQ(s.library, JF_FAKE_CUDA_PATH);
  EXPECT_EQ(s.device_count, 1);
  EXPECT_EQ(s.driver_version, 13000);
  EXPECT_EQ(cuda_device_name(0), "jitflow fake GPU");
  EXPECT_EQ(GpuDevice::get(0).multiprocessors(), 4);
  EXPECT_EQ(cubin_target(GpuDevice::get(0)), "cubin|sm_80|driver 13000");
  EXPECT_NE(message_of([] { GpuDevice::get(1); }).find("/GPU:1 does not exist"), std::string::npos);
}

TEST(GpuRuntime, AllocatorReusesFreedBlocksOfTheSizeClass) {
  GpuDevice& d = GpuDevice::get(0);
  d.empty_cache();
  auto before = d.stats();
  int driver_before = fake_count("fake_cuda_allocations");
  CUdeviceptr a = d.allocate(1000);  // class 1024
  d.release(a, 1000);
  CUdeviceptr b = d.allocate(900);  // same class: the cached block
  EXPECT_EQ(a, b);
  CUdeviceptr c = d.allocate(5000);  // class 8192: a new driver allocation
  EXPECT_NE(c, a);
  auto after = d.stats();
  EXPECT_EQ(after.driver_allocations - before.driver_allocations, 2);
  EXPECT_EQ(after.cache_hits - before.cache_hits, 1);
  EXPECT_EQ(fake_count("fake_cuda_allocations") - driver_before, 2);
  EXPECT_EQ(after.bytes_in_use - before.bytes_in_use, 1024 + 8192);
  d.release(b, 900);
  d.release(c, 5000);
  EXPECT_EQ(d.stats().bytes_cached, 1024 + 8192);
  int frees_before = fake_count("fake_cuda_frees");
  d.empty_cache();
  EXPECT_EQ(fake_count("fake_cuda_frees") - frees_before, 2);
  EXPECT_EQ(d.stats().bytes_cached, 0);
}

TEST(GpuRuntime, DriverErrorsNameTheCall) {
  GpuDevice& d = GpuDevice::get(0);
  std::string m = message_of([&] { d.allocate(size_t(2) << 30); });  // over the fake's 1 GiB
  EXPECT_NE(m.find("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << m;
  m = message_of([&] { GpuModule::load(d, "not ptx"); });
  EXPECT_NE(m.find("cuLinkAddData failed: CUDA_ERROR_INVALID_PTX"), std::string::npos) << m;
}

TEST(GpuRuntime, CopiesRoundTrip) {
  GpuDevice& d = GpuDevice::get(0);
  std::vector<float> src(1000), back(1000, 0.0f);
  for (int i = 0; i < 1000; ++i) src[i] = 0.5f * i;
  CUdeviceptr a = d.allocate(4000), b = d.allocate(4000);
  d.copy_to_device(a, src.data(), 4000);
  d.copy_on_device(b, a, 4000);
  d.copy_to_host(back.data(), b, 4000);
  EXPECT_EQ(back, src);
  d.release(a, 4000);
  d.release(b, 4000);
}

TEST(GpuRuntime, ModulesLinkOnceAndKeepTheirCubin) {
  GpuDevice& d = GpuDevice::get(0);
  Program prog(8);
  PtxModule ptx = emit_ptx(*prog.p, "gpu_runtime_test", "sm_80");
  int links = fake_count("fake_cuda_links");
  auto m = GpuModule::load(d, ptx.ptx);
  EXPECT_EQ(fake_count("fake_cuda_links") - links, 1);
  EXPECT_FALSE(m->cubin_from_disk());
  for (const std::string& k : ptx.kernels) EXPECT_NE(m->function(k), nullptr);
  EXPECT_EQ(GpuModule::load(d, ptx.ptx), m);  // the same module, no second link
  EXPECT_EQ(fake_count("fake_cuda_links") - links, 1);
  std::string cubin;  // the disk cache holds the cubin under PTX + compute capability + driver
  ASSERT_TRUE(disk_cache_load(compile_cache_key(ptx.ptx, cubin_target(d)), &cubin));
  EXPECT_EQ(cubin.rfind("FAKECUBIN\n", 0), 0u);
  std::string msg = message_of([&] { m->function("no_such_kernel"); });
  EXPECT_NE(msg.find("cuModuleGetFunction(no_such_kernel) failed: CUDA_ERROR_NOT_FOUND"), std::string::npos);
}

TEST(GpuRuntime, LaunchDimensions) {
  Program prog(8);
  const Step *red = nullptr, *ew = nullptr;
  for (const Step& s : prog.p->steps) (s.root->kind == KKind::kReduce ? red : ew) = &s;
  ASSERT_TRUE(red && ew);
  LaunchDims e = launch_dims(*ew, 2400, 1, 4);
  EXPECT_EQ(e.block, 256u);
  EXPECT_EQ(e.grid, 10u);                                          // ceil(2400 / 256)
  EXPECT_EQ(launch_dims(*ew, int64_t(1) << 30, 1, 4).grid, 128u);  // 32 blocks per SM, grid-stride
  LaunchDims r = launch_dims(*red, 8, 300, 4);
  EXPECT_EQ(r.grid, 8u);                              // a block per output
  EXPECT_EQ(r.block, 256u);                           // capped
  EXPECT_EQ(launch_dims(*red, 8, 20, 4).block, 32u);  // a warp for a short extent
  EXPECT_EQ(launch_dims(*red, 1000, 20, 4).grid, 128u);
}

TEST(GpuRuntime, ProgramLaunchesEveryLoopStepWithItsTablesByValue) {
  GpuDevice& d = GpuDevice::get(0);
  Program prog(8);
  const ClusterProgram& p = *prog.p;
  PtxModule ptx = emit_ptx(p, "gpu_runtime_launch", "sm_80");
  ASSERT_TRUE(ptx.tables_by_value);  // a few buffers and dims fit the parameter space
  auto m = GpuModule::load(d, ptx.ptx);
  std::vector<CUdeviceptr> bufs(p.num_buffers + 1, 0);  // and the status word
  for (int b = 0; b < p.num_buffers; ++b) bufs[b] = d.allocate(8 * 300 * 4);
  bufs[p.num_buffers] = 0x5700;
  int64_t copies = fake_count64("fake_cuda_copies", 0);
  std::vector<int64_t> params = static_params(p);
  std::vector<int64_t> totals, extents;
  for (const Step& s : p.steps) {
    bool red = s.root->kind == KKind::kReduce;
    totals.push_back(red ? 8 : 2400);
    extents.push_back(red ? 300 : 1);
  }
  fake<void (*)()>("fake_cuda_clear_launches")();
  launch_program(d, *m, p, ptx.kernels, ptx.tables_by_value, bufs, params, totals, extents);
  EXPECT_EQ(fake_count64("fake_cuda_copies", 0), copies);  // no table went through device memory
  auto launch =
      fake<const char* (*)(int, unsigned*, unsigned*, int64_t*, uint64_t*, uint64_t*)>("fake_cuda_launch");
  ASSERT_EQ(fake_count("fake_cuda_launch_count"), static_cast<int>(p.steps.size()));
  for (size_t k = 0; k < p.steps.size(); ++k) {
    unsigned grid, block;
    int64_t total;
    uint64_t dbufs, dparams;
    EXPECT_EQ(std::string(launch(k, &grid, &block, &total, &dbufs, &dparams)), ptx.kernels[k]);
    LaunchDims want = launch_dims(p.steps[k], totals[k], extents[k], 4);
    EXPECT_EQ(grid, want.grid);
    EXPECT_EQ(block, want.block);
    EXPECT_EQ(total, totals[k]);
    // The stand-in keeps a copy of each table passed by value.
    EXPECT_EQ(std::vector<uint64_t>(reinterpret_cast<uint64_t*>(dbufs),
                                    reinterpret_cast<uint64_t*>(dbufs) + bufs.size()),
              std::vector<uint64_t>(bufs.begin(), bufs.end()));
    EXPECT_EQ(std::vector<int64_t>(reinterpret_cast<int64_t*>(dparams),
                                   reinterpret_cast<int64_t*>(dparams) + params.size()),
              params);
  }
  for (int b = 0; b < p.num_buffers; ++b) d.release(bufs[b], 8 * 300 * 4);
}

TEST(GpuRuntime, LibraryStepsGoToTheLibraryCallbackInOrder) {
  Graph g;
  Node* a = g.add_node(OpId::Placeholder, "a", {}, Attrs(), {{DType::kFloat32, Shape{4, 4}}});
  g.inputs = {a};
  Node* mm = g.add_node(OpId::MatMul, "mm", {{a, 0}, {a, 0}}, Attrs(), {{DType::kFloat32, Shape{4, 4}}});
  Node* t = g.add_node(OpId::Tanh, "t", {{mm, 0}}, Attrs(), {{DType::kFloat32, Shape{4, 4}}});
  g.outputs = {{t, 0}};
  std::string why;
  auto p = lower_cluster(g, {mm, t}, &why);
  ASSERT_TRUE(p) << why;
  ASSERT_EQ(p->steps.size(), 2u);
  GpuDevice& d = GpuDevice::get(0);
  PtxModule ptx = emit_ptx(*p, "gpu_runtime_library", "sm_80");
  ASSERT_EQ(ptx.kernels.size(), 1u);  // the tanh loop; the matmul is a library step
  auto m = GpuModule::load(d, ptx.ptx);
  std::vector<CUdeviceptr> bufs(p->num_buffers + 1, 0);
  std::vector<int64_t> params(p->num_params, 4), totals(p->steps.size(), 16), extents(p->steps.size(), 1);
  std::string msg = message_of(
      [&] { launch_program(d, *m, *p, ptx.kernels, ptx.tables_by_value, bufs, params, totals, extents); });
  EXPECT_NE(msg.find("mm (MatMul): no GPU library routine"), std::string::npos) << msg;

  fake<void (*)()>("fake_cuda_clear_launches")();
  std::vector<size_t> library_steps;
  int launches_before_library = -1;
  launch_program(d, *m, *p, ptx.kernels, ptx.tables_by_value, bufs, params, totals, extents, [&](size_t k) {
    library_steps.push_back(k);
    launches_before_library = fake_count("fake_cuda_launch_count");
  });
  EXPECT_EQ(library_steps, std::vector<size_t>{0});
  EXPECT_EQ(launches_before_library, 0);
  ASSERT_EQ(fake_count("fake_cuda_launch_count"), 1);
  unsigned grid, block;
  int64_t total;
  uint64_t kb, kp;
  auto launch =
      fake<const char* (*)(int, unsigned*, unsigned*, int64_t*, uint64_t*, uint64_t*)>("fake_cuda_launch");
  EXPECT_EQ(std::string(launch(0, &grid, &block, &total, &kb, &kp)), ptx.kernels[0]);
  EXPECT_EQ(total, 16);
}

}  // namespace
}  // namespace jf
