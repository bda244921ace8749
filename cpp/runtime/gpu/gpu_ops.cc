// The single-op kernel cache behind eager GPU execution.
#include "runtime/gpu/gpu_ops.h"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>

#include "codegen/kernel_ir.h"
#include "core/variables.h"
#include "runtime/gpu/gpu_cluster.h"

namespace jf {

namespace {

// A built op, or a remembered "no GPU kernel" (cluster == nullptr). build() returns no entry
// at all when the inputs at hand cannot be inferred, so nothing is remembered for the key.
struct Entry {
  std::shared_ptr<Graph> graph;  // owns the nodes the program points at
  std::shared_ptr<CompiledCluster> cluster;
  std::vector<int> feed;  // per program input: the op input it comes from
};

std::mutex g_mu;
std::map<std::string, std::shared_ptr<Entry>>* g_entries =
    new std::map<std::string, std::shared_ptr<Entry>>();
std::atomic<int64_t> g_compilations{0}, g_hits{0}, g_fallbacks{0};

// What the kernel depends on: attrs, dtypes, ranks, which dims are 1 (broadcasting), and
// the values of shape inputs. Other dims are runtime parameters.
// Built with plain appends: every eager GPU op (and every op of a GPU function not compiled)
// makes one, so string streams would cost more than the launch.
std::string signature(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device) {
  std::string k;
  k.reserve(64);
  k.append(def.name).append("|gpu").append(std::to_string(device));
  for (const auto& kv : attrs.items())
    k.append("|").append(kv.first).append("=").append(attr_to_string(kv.second));
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    k.append("|").append(dtype_name(t.dtype())).append(":");
    if (is_shape_input(def.id, i, in.size())) {
      for (int64_t v : t.to_int64s()) k.append(std::to_string(v)).append(",");
      k.append("r").append(std::to_string(t.rank()));
    } else {
      for (int64_t d : t.shape()) k += d == 1 ? '1' : 'n';
    }
  }
  return k;
}

std::shared_ptr<Entry> build(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device,
                             const std::string& key) {
  auto e = std::make_shared<Entry>();
  if (def.flags & (kStateful | kNoKernel)) return e;
  e->graph = std::make_shared<Graph>();
  Graph& g = *e->graph;
  std::vector<Output> ins;
  std::vector<Tensor> views;
  std::map<const Node*, int> input_of;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    Node* n;
    if (is_shape_input(def.id, i, in.size())) {
      Attrs ca;
      ca.set("value", t);
      n = g.add_node(OpId::Const, str_cat("shape", i), {}, ca, {{t.dtype(), t.shape()}});
      views.push_back(t);
    } else {
      n = g.add_node(OpId::Placeholder, str_cat("x", i), {}, Attrs(), {{t.dtype(), t.shape()}});
      g.inputs.push_back(n);
      input_of[n] = static_cast<int>(i);
      views.push_back(Tensor(t.dtype(), t.shape(), nullptr));
    }
    ins.push_back({n, 0});
  }
  std::vector<TensorSpec> specs;
  try {
    specs = infer_specs(def, views, attrs);
  } catch (const Error&) {
    // Bad shapes (the CPU kernel then raises the user's error), or inference needs values a
    // kernel would not have (ArgMax's dimension): the CPU runs it, and nothing is cached.
    return nullptr;
  }
  Node* op = g.add_node(def.id, def.name, ins, attrs, specs);
  for (int k = 0; k < static_cast<int>(op->outputs.size()); ++k) g.outputs.push_back({op, k});
  std::string why;
  if (!can_emit(*op, &why)) return e;
  auto program = lower_cluster(g, {op}, &why);
  if (!program) return e;
  for (const Output& o : program->inputs) e->feed.push_back(input_of.at(o.node));
  auto cc = std::make_shared<CompiledCluster>();
  cc->name = def.name;
  cc->op_names = {def.name};
  cc->program = std::move(program);
  char label[32];
  std::snprintf(label, sizeof(label), "jf_gpu_op_%016zx", std::hash<std::string>()(key));
  try {
    compile_for_gpu(*cc, device, label);
  } catch (const Error& err) {
    if (err.kind() != ErrorKind::kUnimplemented) throw;
    return e;  // e.g. a softmax step: no GPU routine
  }
  e->cluster = std::move(cc);
  g_compilations.fetch_add(1);
  return e;
}

// The built kernel for these inputs (or a remembered "no kernel"); null when none can be
// built for them.
std::shared_ptr<Entry> entry_for(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                                 int device) {
  std::string key = signature(def, in, attrs, device);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_entries->find(key);
    if (it != g_entries->end()) {
      g_hits.fetch_add(1);
      return it->second;
    }
  }
  auto e = build(def, in, attrs, device, key);  // outside the lock: compiling takes milliseconds
  if (e) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_entries->emplace(key, e);
  }
  return e;
}

// assign_add / assign_sub of a variable on this GPU: the AddV2 / Sub kernel writes the sum
// into the variable's own buffer when nothing else holds it (an earlier read would see the
// change otherwise), else into a fresh one; a dtype without a GPU kernel is computed on the
// host and copied back. False, with nothing changed, when the variable lives elsewhere or
// the shapes differ (the CPU kernel then raises TF's error).
bool update_variable_on_gpu(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device) {
  const int64_t id = attrs.get<int64_t>("var_id", 0);
  const Device dev{DeviceType::kGPU, device};
  {
    Tensor now = read_variable(id);
    if (now.device() != dev || in.size() != 1 || in[0].shape() != now.shape() || in[0].dtype() != now.dtype())
      return false;
  }
  const OpDef& op = op_def(def.id == OpId::AssignAddVariableOp ? OpId::AddV2 : OpId::Sub);
  update_variable(
      id,
      [&](const Tensor& cur) {
        std::vector<Tensor> args = {cur, in[0].to_device(dev)};
        std::shared_ptr<Entry> e = entry_for(op, args, Attrs(), device);
        if (!e || !e->cluster)
          return run_kernel(op, {cur.to_device(Device{}), in[0].to_device(Device{})}, Attrs())[0];
        // Held by the variable, `cur` and `args` (three references) and no one else.
        Tensor into = cur.buffer().use_count() == 3 ? cur : Tensor();
        std::vector<Tensor> feed;
        for (int i : e->feed) feed.push_back(args[i]);
        args.clear();
        return e->cluster->run_gpu(feed, {into})[0];
      },
      def.name);
  return true;
}

// Whether variable `attrs.var_id` lives on /GPU:<device>.
bool variable_on(const Attrs& attrs, int device) {
  return read_variable(attrs.get<int64_t>("var_id", 0)).device() == Device{DeviceType::kGPU, device};
}

}  // namespace

bool gpu_run_op(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device,
                std::vector<Tensor>* out) {
  // Variables on this GPU are read, assigned and updated there: their kernels take device
  // tensors as they are (a read returns the variable's tensor; an assignment stores one).
  if (def.id == OpId::AssignAddVariableOp || def.id == OpId::AssignSubVariableOp) {
    if (update_variable_on_gpu(def, in, attrs, device)) {
      out->clear();
      return true;
    }
    g_fallbacks.fetch_add(1);
    return false;
  }
  if ((def.id == OpId::ReadVariableOp || def.id == OpId::AssignVariableOp) && variable_on(attrs, device)) {
    *out = run_kernel(def, in, attrs);
    return true;
  }
  std::shared_ptr<Entry> e = entry_for(def, in, attrs, device);
  if (!e || !e->cluster) {
    g_fallbacks.fetch_add(1);
    return false;
  }
  std::vector<Tensor> feed;
  for (int i : e->feed) feed.push_back(in[i]);
  *out = e->cluster->run(feed);
  return true;
}

GpuOpStats gpu_op_stats() {
  GpuOpStats s;
  s.compilations = g_compilations.load();
  s.cache_hits = g_hits.load();
  s.cpu_fallbacks = g_fallbacks.load();
  return s;
}

}  // namespace jf
