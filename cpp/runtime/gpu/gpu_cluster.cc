// GPU cluster execution: the same parameter preparation as on the CPU, device buffers from
// the device's caching pool, the loop kernels launched in order and matmuls on cuBLAS, all
// queued on the device's one stream. A run neither copies nor waits: the kernels take their
// buffer and parameter tables as launch parameters, the run-time checks report through a
// mapped status word read at the next synchronization, and the launch plan (kernels, grid
// and block sizes) is kept until the input shapes change.
#include "runtime/gpu/gpu_cluster.h"

#include "codegen/nvptx/nvptx_compiler.h"
#include "runtime/gpu/cublas.h"
#include "runtime/gpu/gpu_buffer.h"
#include "runtime/gpu/gpu_graph.h"
#include "runtime/gpu/gpu_launch.h"
#include "runtime/placement.h"
#include "support/stats.h"

namespace jf {

struct GpuRunState {
  std::mutex mu;
  bool tables_by_value = false;
  std::vector<char> read;         // per input: a kernel or matmul reads it (else a host shape value)
  std::vector<Tensor> constants;  // the program's constants on the device, from the first run
  std::shared_ptr<GpuDevice::StatusWord> status;
  LaunchPlan plan;  // for plan.totals and plan.extents
  bool planned = false;
  std::vector<CUdeviceptr> ptrs;  // the buffer table: one per buffer, then the status word
  GraphCache graphs;              // runs replayed as CUDA graphs
};

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
  // Row reductions and the elementwise work around them run as one kernel per row group.
  fuse_row_groups(cc.program.get());
  // A scale of a GEMM's product (0.1 * gradient) is the GEMM's alpha.
  fold_gemm_scales(cc.program.get());
  PtxModule ptx = emit_ptx(p, label, gpu_arch(device));
  cc.gpu_module = GpuModule::load(d, ptx.ptx);
  cc.gpu_kernels = ptx.kernels;
  cc.gpu_device = device;
  auto state = std::make_shared<GpuRunState>();
  state->tables_by_value = ptx.tables_by_value;
  state->read = buffers_read(p);
  state->read.resize(p.inputs.size());
  cc.gpu_state = std::move(state);
}

std::vector<Tensor> CompiledCluster::run_gpu(const std::vector<Tensor>& inputs,
                                             const std::vector<Tensor>& into) const {
  const ClusterProgram& p = *program;
  GpuRunState& gs = *gpu_state;
  const Device dev{DeviceType::kGPU, gpu_device};
  GpuDevice& device = GpuDevice::get(gpu_device);
  std::vector<Tensor> in(inputs);
  for (size_t i = 0; i < in.size(); ++i) in[i] = in[i].to_device(gs.read[i] ? dev : Device{});
  auto lease = state_.take([&] {
    auto* st = new RunState();
    st->recycle.resize(p.num_buffers);
    return st;
  });
  RunState& st = *lease;
  std::string pattern;
  const Prepared* prepared = prepared_for(st, in, &pattern);
  // Another size-1 (broadcast) pattern than traced: GPU clusters have no specializations yet.
  if (!prepared) return fall_back(in, "a broadcast pattern other than traced (no GPU specialization yet)");
  const Prepared& pr = *prepared;
  stats().cluster_runs.fetch_add(1, std::memory_order_relaxed);
  const int nin = static_cast<int>(in.size());
  std::lock_guard<std::mutex> lock(gs.mu);
  if (gs.constants.size() != p.constants.size())
    for (const Tensor& c : p.constants) gs.constants.push_back(c.to_device(dev));
  if (!gs.status) gs.status = device.status_word([this](int64_t code) { raise_check(code); });
  std::vector<Tensor>& bufs = st.bufs;
  bufs.assign(p.num_buffers, Tensor());
  for (int i = 0; i < nin; ++i) bufs[i] = in[i];
  for (size_t c = 0; c < p.constants.size(); ++c) bufs[nin + c] = gs.constants[c];
  // Outputs written in place (a variable's update): only into buffers the run would allocate.
  for (size_t k = 0; k < into.size() && k < p.output_exprs.size(); ++k) {
    const int b = p.output_exprs[k]->buffer;
    const Tensor& t = into[k];
    if (t.defined() && !bufs[b].defined() && t.device() == dev && t.dtype() == p.buffer_expr[b]->dtype &&
        t.shape() == pr.buffer_shapes[b])
      bufs[b] = t;
  }
  gs.ptrs.assign(p.num_buffers + 1, 0);
  for (int b = 0; b < p.num_buffers; ++b) {
    if (!bufs[b].defined() && p.buffer_expr[b]) {
      const Shape& s = pr.buffer_shapes[b];
      DType dt = p.buffer_expr[b]->dtype;
      bufs[b] = Tensor(dt, s, allocate_gpu_buffer(gpu_device, s.num_elements() * dtype_size(dt)));
    }
    if (bufs[b].defined() && !bufs[b].on_host()) gs.ptrs[b] = device_ptr(bufs[b]);
  }
  gs.ptrs[p.num_buffers] = gs.status->device_address;
  // The launch plan holds while every step has the same output count and reduced extent (a
  // row group: rows and row length).
  const int64_t* params = pr.params.data();
  auto total_of = [&](const Step& s) {
    return s.kind == Step::kRowGroup ? row_group_rows(s, params)
                                     : pr.buffer_shapes[s.root->buffer].num_elements();
  };
  auto extent_of = [&](const Step& s) {
    return s.kind == Step::kRowGroup ? params[s.width] : reduced_extent(s, params);
  };
  bool same = gs.planned;
  for (size_t k = 0; same && k < p.steps.size(); ++k)
    same = gs.plan.totals[k] == total_of(p.steps[k]) && gs.plan.extents[k] == extent_of(p.steps[k]);
  if (!same) {
    std::vector<int64_t> totals, extents;
    for (const Step& s : p.steps) {
      totals.push_back(total_of(s));
      extents.push_back(extent_of(s));
    }
    plan_launches(device, *gpu_module, p, gpu_kernels, gs.tables_by_value, totals, extents, &gs.plan);
    gs.planned = true;
  }
  auto library = [&](size_t k) {
    const Step& s = p.steps[k];
    auto view = [&](const KExpr* e) { return bufs[e->buffer].reshaped(pr.buffer_shapes[e->buffer]); };
    // An argument's buffer may hold the value it reshapes: the node's input shape says which.
    auto arg = [&](int i) { return bufs[s.args[i]->buffer].reshaped(pr.step_in_shapes[k][i]); };
    bool mm = s.node->op == OpId::MatMul;
    bool ta = s.node->attrs.get<bool>(mm ? "transpose_a" : "adj_x", false);
    bool tb = s.node->attrs.get<bool>(mm ? "transpose_b" : "adj_y", false);
    gpu_matmul(device, arg(0), arg(1), ta, tb, view(s.root), s.alpha);
  };
  auto launch = [&] { launch_planned(device, p, gs.plan, gs.ptrs, pr.params, library); };
  {
    auto enqueue = device.enqueue_lock();
    // Tables in device memory are copied in per run: such a run is launched as it is, as is
    // a single kernel (a graph launch costs what its launch does). The math mode a GEMM was
    // captured with is part of the key.
    if (gs.plan.tables_by_value && p.steps.size() > 1)
      gs.graphs.run(device, gs.ptrs, pr.params, tensor_float_32(), launch);
    else
      launch();
  }
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kind == Step::kRowGroup && gs.plan.totals[k] > 0)
      stats().row_group_runs.fetch_add(1, std::memory_order_relaxed);
  device.mark_pending(gs.status);
  std::vector<Tensor> out;
  for (const KExpr* e : p.output_exprs) out.push_back(bufs[e->buffer]);
  return out;
}

}  // namespace jf
