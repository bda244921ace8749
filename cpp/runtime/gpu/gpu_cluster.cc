// GPU cluster execution: the same parameter preparation as on the CPU, device buffers for
// every materialized value, the loop kernels launched in order and matmuls on cuBLAS.
#include "runtime/gpu/gpu_cluster.h"

#include "codegen/nvptx/nvptx_compiler.h"
#include "runtime/gpu/cublas.h"
#include "runtime/gpu/gpu_buffer.h"
#include "runtime/gpu/gpu_launch.h"
#include "runtime/placement.h"
#include "support/stats.h"

namespace jf {

namespace {
bool is_matmul(const Node* n) { return n->op == OpId::MatMul || n->op == OpId::BatchMatMulV2; }

// Which buffers a kernel or library step reads (inputs the kernels never read are shape
// values: they stay on the host, where shape inference reads them).
std::vector<char> buffers_read(const ClusterProgram& p) {
  std::vector<char> read(p.num_buffers, 0);
  for (const auto& e : p.exprs)
    if (e->kind == KKind::kBuffer && e->buffer >= 0) read[e->buffer] = 1;
  return read;
}
}  // namespace

std::string gpu_arch(int device) {
  int cc = cuda_compute_capability(device);
  for (int a : {90, 80, 75, 70})
    if (cc >= a) return "sm_" + std::to_string(a);
  return "sm_60";
}

void compile_for_gpu(CompiledCluster& cc, int device, const std::string& label) {
  const ClusterProgram& p = *cc.program;
  for (const Step& s : p.steps) {
    if (s.kind != Step::kLibrary) continue;
    DType dt = s.node->outputs[0].dtype;
    if (!is_matmul(s.node) || (dt != DType::kFloat32 && dt != DType::kFloat64))
      throw_unimplemented(s.node->name, " (", s.node->type(), " on ", dtype_name(dt),
                          "): no GPU routine (the GPU runs float32/float64 matmuls on cuBLAS)");
  }
  GpuDevice& d = GpuDevice::get(device);
  PtxModule ptx = emit_ptx(p, label, gpu_arch(device));
  cc.gpu_module = GpuModule::load(d, ptx.ptx);
  cc.gpu_kernels = ptx.kernels;
  cc.gpu_device = device;
}

std::vector<Tensor> CompiledCluster::run_gpu(const std::vector<Tensor>& inputs) const {
  const ClusterProgram& p = *program;
  const Device dev{DeviceType::kGPU, gpu_device};
  GpuDevice& device = GpuDevice::get(gpu_device);
  std::vector<char> read = buffers_read(p);
  std::vector<Tensor> in(inputs);
  for (size_t i = 0; i < in.size(); ++i) in[i] = in[i].to_device(read[i] ? dev : Device{});
  Prepared pr;
  // Another size-1 (broadcast) pattern than traced: GPU clusters have no specializations yet.
  if (!prepare(in, &pr))
    return fall_back(in, "a broadcast pattern other than traced (no GPU specialization yet)");
  stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
  int nin = static_cast<int>(in.size());
  {
    std::lock_guard<std::mutex> lock(gpu_mu_);
    if (gpu_constants_.empty())
      for (const Tensor& c : p.constants) gpu_constants_.push_back(c.to_device(dev));
  }
  std::vector<Tensor> bufs(p.num_buffers);
  std::vector<CUdeviceptr> ptrs(p.num_buffers, 0);
  for (int i = 0; i < nin; ++i) bufs[i] = in[i];
  for (size_t c = 0; c < p.constants.size(); ++c) bufs[nin + c] = gpu_constants_[c];
  for (int b = 0; b < p.num_buffers; ++b) {
    if (!bufs[b].defined() && p.buffer_expr[b]) {
      const Shape& s = pr.buffer_shapes[b];
      DType dt = p.buffer_expr[b]->dtype;
      bufs[b] = Tensor(dt, s, allocate_gpu_buffer(gpu_device, s.num_elements() * dtype_size(dt)));
    }
    if (bufs[b].defined() && !bufs[b].on_host()) ptrs[b] = device_ptr(bufs[b]);
  }
  std::vector<int64_t> totals, extents;
  for (const Step& s : p.steps) {
    totals.push_back(pr.buffer_shapes[s.root->buffer].num_elements());
    extents.push_back(reduced_extent(s, pr.params.data()));
  }
  auto library = [&](size_t k) {
    const Step& s = p.steps[k];
    auto view = [&](const KExpr* e) { return bufs[e->buffer].reshaped(pr.buffer_shapes[e->buffer]); };
    bool mm = s.node->op == OpId::MatMul;
    bool ta = s.node->attrs.get<bool>(mm ? "transpose_a" : "adj_x", false);
    bool tb = s.node->attrs.get<bool>(mm ? "transpose_b" : "adj_y", false);
    gpu_matmul(device, view(s.args[0]), view(s.args[1]), ta, tb, view(s.root));
  };
  // The run-time checks' status word (kernel_ir.h: CheckKind), zeroed, after the buffers.
  GpuDevice::Block status_word(device, sizeof(int64_t));
  int64_t status = 0;
  device.copy_to_device(status_word.ptr, &status, sizeof status);
  ptrs.push_back(status_word.ptr);
  launch_program(device, *gpu_module, p, gpu_kernels, ptrs, pr.params, totals, extents, library);
  device.copy_to_host(&status, status_word.ptr, sizeof status);
  if (status) raise_check(status);
  std::vector<Tensor> out;
  for (const KExpr* e : p.output_exprs) out.push_back(bufs[e->buffer]);
  return out;
}

}  // namespace jf
