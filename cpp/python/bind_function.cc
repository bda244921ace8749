// Binds the jf.function call path (FunctionCache) and concrete-function construction.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/function_cache.h"
#include "python/nest.h"
#include "runtime/placement.h"
#include "support/stats.h"

namespace jf::py_bridge {

namespace {
bool same_tree(const TreeDef& a, py::handle b) {
  return py::isinstance<TreeDef>(b) && a == b.cast<const TreeDef&>();
}
}  // namespace

void bind_function(py::module_& m) {
  // The call is the type's tp_call slot, not a bound __call__: a cached call then skips
  // pybind11's argument dispatch (about half of the per-call overhead).
  py::class_<FunctionCache>(m, "FunctionCache", py::custom_type_setup(&FunctionCache::setup_type))
      .def(py::init<py::object, py::object>())
      .def("add", &FunctionCache::add, py::arg("key"), py::arg("fn"), py::arg("outputs"), py::arg("general"),
           py::arg("keepalive"), py::arg("var_ids") = std::vector<int64_t>(),
           py::arg("var_key") = std::string())
      .def("clear", &FunctionCache::clear)
      .def("has_flat", &FunctionCache::has_flat, py::arg("flat"))
      .def_property_readonly("size", &FunctionCache::size);
  m.def("set_variable_type", [](py::type t) { variable_type() = t.inc_ref().ptr(); });
  m.def("flatten_inputs", [](py::handle args, py::handle kwargs) {
    Flat f = flatten_inputs(args, kwargs);
    return py::make_tuple(py::bytes(f.key), f.leaves, f.keepalive, f.var_ids, py::bytes(f.var_key));
  });
  // Nested structures (nest.h): the one traversal, for jf.function's Python side, jf.nest and
  // autodiff.
  py::class_<TreeDef, std::shared_ptr<TreeDef>>(m, "TreeDef")
      .def_readonly("num_leaves", &TreeDef::num_leaves)
      .def("unflatten", &TreeDef::unflatten, py::arg("leaves"))
      .def("paths", &TreeDef::paths)
      .def(
          "difference",
          [](const TreeDef& a, const TreeDef& b, bool check_types) -> py::object {
            std::vector<int> path;
            const char* reason = nullptr;
            if (!a.difference(b, check_types, &path, &reason)) return py::none();
            return py::make_tuple(py::tuple(py::cast(path)), reason);
          },
          py::arg("other"), py::arg("check_types") = true,
          "None if other nests alike, else (child indices to the first difference, why: 'nesting', "
          "'type', 'keys' or 'length'), in tf.nest.assert_same_structure's order.")
      .def("__eq__", &same_tree)
      .def("__ne__", [](const TreeDef& a, py::handle b) { return !same_tree(a, b); })
      .def("__repr__", [](const TreeDef& t) { return "TreeDef(" + t.repr() + ")"; })
      .attr("__hash__") = py::none();
  m.def(
      "nest_flatten",
      [](py::handle structure, bool outputs, py::handle spec_type, py::handle rule) {
        auto [leaves, tree] = nest_flatten(structure, leaf_rule_from(rule, outputs, spec_type), spec_type);
        return py::make_tuple(leaves, tree);
      },
      py::arg("structure"), py::arg("outputs") = false, py::arg("spec_type") = py::none(),
      py::arg("rule") = py::none(),
      "(leaves, TreeDef) of a nested structure, in the signature key's order. Leaves: Tensors and numpy "
      "arrays, and instances of spec_type; with outputs=True, Tensors, objects with __jf_tensor__, Python "
      "numbers and numpy objects (mappings then rebuild in their own key order); rule='nest': every "
      "non-container (tf.nest). rule may also name the others: 'inputs', 'specs', 'outputs'.");
  m.def(
      "nest_is_nested",
      [](py::handle x) { return container_kind(x.ptr()) != NodeKind::kOther && !is_composite(x.ptr()); },
      py::arg("structure"), "Whether nest's traversal descends into x (tf.nest.is_nested).");
  m.def(
      "nest_children",
      [](py::handle x) -> py::object {
        NodeKind k = container_kind(x.ptr());
        if (k == NodeKind::kOther) return py::none();
        return nest_children(x.ptr(), k);
      },
      py::arg("structure"), "The children of a container in the traversal's order; None for a leaf.");
  m.def(
      "make_concrete_function",
      [](std::shared_ptr<Graph> g, const std::string& name, bool jit_compile, int gpu_device) {
        if (!g) throw py::type_error("make_concrete_function: graph must be a Graph, not None");
        stats().traces.fetch_add(1);
        JitOptions o;
        o.auto_jit = auto_jit();
        o.whole_function = jit_compile;
        o.gpu_device = gpu_device;
        py::gil_scoped_release release;
        return std::make_shared<ConcreteFunction>(std::move(g), name, o);
      },
      py::arg("graph"), py::arg("name"), py::arg("jit_compile") = false, py::arg("gpu_device") = -1);
  // Where a call with these tensor leaves is placed: the GPU index, or -1 for the CPU.
  m.def("function_placement", [](const std::vector<Tensor>& leaves) {
    Device d = call_placement(leaves);
    return d.type == DeviceType::kGPU ? d.index : -1;
  });
  m.def("set_auto_jit", &set_auto_jit);
  m.def("auto_jit", &auto_jit);
  m.def("set_run_functions_eagerly", &set_run_functions_eagerly);
  m.def("set_taped_call", &set_taped_call);
  m.def("call_recorded", &call_recorded);
  m.def("functions_run_eagerly", &run_functions_eagerly);
}

}  // namespace jf::py_bridge
