// The single-op kernel cache behind eager GPU execution.
#include "runtime/gpu/gpu_ops.h"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>

#include "codegen/kernel_ir.h"
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
std::string signature(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device) {
  std::string k = str_cat(def.name, "|gpu", device);
  for (const auto& kv : attrs.items()) k += str_cat("|", kv.first, "=", attr_to_string(kv.second));
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    k += str_cat("|", dtype_name(t.dtype()), ":");
    if (is_shape_input(def.id, i, in.size())) {
      for (int64_t v : t.to_int64s()) k += str_cat(v, ",");
      k += str_cat("r", t.rank());
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

}  // namespace

bool gpu_run_op(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs, int device,
                std::vector<Tensor>* out) {
  std::string key = signature(def, in, attrs, device);
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_entries->find(key);
    if (it != g_entries->end()) e = it->second;
  }
  if (e) {
    g_hits.fetch_add(1);
  } else {
    e = build(def, in, attrs, device, key);  // outside the lock: compiling takes milliseconds
    if (e) {
      std::lock_guard<std::mutex> lock(g_mu);
      g_entries->emplace(key, e);
    }
  }
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
