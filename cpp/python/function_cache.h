// The jf.function call path in C++: the signature key of a call's Python arguments, the
// cache of concrete functions per key, and the output structure rebuilt around results. A
// cached call never enters Python tracing code.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "python/nest.h"
#include "runtime/function.h"

namespace jf::py_bridge {
namespace py = pybind11;

// Signature key and tensor leaves, in nest.h's order (depth first, dict keys sorted).
struct Flat {
  std::string key;
  std::vector<Tensor> leaves;
  std::vector<py::object> keepalive;  // objects keyed by identity stay alive with the entry
  // jf.Variable arguments are keyed by spec: their ids (each variable once, in order) and
  // their part of the key (an entry serves another call only if these parts are equal).
  std::vector<int64_t> var_ids;
  std::string var_key;
};
Flat flatten_inputs(py::handle args, py::handle kwargs);
// jitflow.variables.Variable (set by bind_function.cc): its instances are keyed by spec.
PyObject*& variable_type();

struct CacheEntry {
  std::shared_ptr<ConcreteFunction> fn;
  std::shared_ptr<TreeDef> out;  // the structure of the outputs
  std::vector<py::object> keepalive;
  std::vector<int64_t> var_ids;  // the variables it was traced with (Flat::var_ids)
  std::string var_key;
};

class FunctionCache {
 public:
  // trace(args, kwargs, flat) is called on a miss, flat as has_flat takes it; it registers the traced
  // function with add(). A general entry (input_signature or relaxed shapes) serves any matching input.
  FunctionCache(py::object python_fn, py::object trace);
  py::object call(py::handle args, py::handle kwargs);
  // Installs call() as tp_call of the bound type (a CPython slot, no pybind11 dispatch).
  static void setup_type(PyHeapTypeObject* type);
  void add(const std::string& key, std::shared_ptr<ConcreteFunction> fn, std::shared_ptr<TreeDef> outputs,
           bool general, std::vector<py::object> keepalive, std::vector<int64_t> var_ids,
           const std::string& var_key);
  size_t size() const { return exact_.size(); }
  void clear();
  // Whether a traced function already serves these inputs, given as flatten_inputs returns
  // them (key, leaves, keepalive, var_ids, var_key): a caller that waited for another
  // thread's trace checks this before tracing the same signature again.
  bool has_flat(py::tuple flat);
  // The cycle collector's view (tp_traverse) and its way out of a cycle (tp_clear).
  int traverse(visitproc visit, void* arg);
  void clear_references();

 private:
  // The entry serving f: its exact key, else a general entry that accepts it (then
  // remembered under the key). Null on a miss.
  std::shared_ptr<CacheEntry> find(Flat& f);

  py::object python_fn_, trace_;
  std::unordered_map<std::string, std::shared_ptr<CacheEntry>> exact_;
  std::vector<std::shared_ptr<CacheEntry>> general_;
};

void set_run_functions_eagerly(bool on);
bool run_functions_eagerly();

// While a GradientTape records, a call goes to this Python function, (function, args,
// kwargs) -> outputs, which runs it through call_recorded() and records it as one op.
void set_taped_call(py::object fn);
// The call itself, bypassing the taped route (for that Python function).
py::object call_recorded(py::handle function, py::handle args, py::handle kwargs);

}  // namespace jf::py_bridge
