// Binds graphs for introspection: Graph, node views (NodeRef, NodeDef, AttrValue) and
// ConcreteFunction.
#include <pybind11/stl.h>

#include "codegen/nvptx/nvptx_compiler.h"
#include "core/variables.h"
#include "python/bindings.h"
#include "python/convert.h"
#include "python/graph_views.h"
#include "runtime/cluster_runner.h"
#include "runtime/function.h"
#include "tracing/trace_context.h"

namespace jf::py_bridge {

namespace {
std::string input_name(const Output& o) {
  return o.index ? o.node->name + ":" + std::to_string(o.index) : o.node->name;
}
py::dict attr_dict(const Node& n) {
  py::dict d;
  for (auto& kv : n.attrs.items()) d[py::str(kv.first)] = AttrRef{kv.second};
  return d;
}
py::list node_inputs(const Node& n) {
  py::list l;
  for (const Output& o : n.inputs) l.append(input_name(o));
  for (Node* c : n.control_inputs) l.append("^" + c->name);
  return l;
}
}  // namespace

void bind_graph(py::module_& m) {
  py::class_<AttrRef>(m, "AttrValue")
      .def_property_readonly("b",
                             [](const AttrRef& a) {
                               auto* v = std::get_if<bool>(&a.value);
                               return v ? *v : false;
                             })
      .def_property_readonly("i",
                             [](const AttrRef& a) {
                               auto* v = std::get_if<int64_t>(&a.value);
                               return v ? *v : 0;
                             })
      .def_property_readonly("f",
                             [](const AttrRef& a) {
                               auto* v = std::get_if<double>(&a.value);
                               return v ? *v : 0.0;
                             })
      .def_property_readonly("s",
                             [](const AttrRef& a) {
                               auto* v = std::get_if<std::string>(&a.value);
                               return py::bytes(v ? *v : std::string());
                             })
      .def_property_readonly("type",
                             [](const AttrRef& a) -> py::object {
                               auto* v = std::get_if<DType>(&a.value);
                               return v ? py::cast(*v) : py::none();
                             })
      .def_property_readonly("value", [](const AttrRef& a) { return attr_to_py(a.value); })
      .def("__repr__", [](const AttrRef& a) { return "AttrValue(" + attr_to_string(a.value) + ")"; });

  py::class_<NodeRef>(m, "NodeDef")
      .def_property_readonly("name", [](const NodeRef& r) { return r.node->name; })
      .def_property_readonly("graph", [](const NodeRef& r) { return r.graph; })
      .def_property_readonly("op", [](const NodeRef& r) { return std::string(r.node->type()); })
      .def_property_readonly("input", [](const NodeRef& r) { return node_inputs(*r.node); })
      .def_property_readonly("attr", [](const NodeRef& r) { return attr_dict(*r.node); })
      .def_property_readonly("source", [](const NodeRef& r) { return r.node->source; })
      .def_property_readonly("num_outputs", [](const NodeRef& r) { return r.node->outputs.size(); })
      .def("output_spec",
           [](const NodeRef& r, int i) {
             const TensorSpec& s = r.node->outputs.at(i);
             std::vector<py::object> dims;
             for (int64_t d : s.shape) dims.push_back(d < 0 ? py::none() : py::object(py::int_(d)));
             return py::make_tuple(s.dtype, py::tuple(py::cast(dims)));
           })
      .def("input_refs",
           [](const NodeRef& r) {
             py::list l;
             for (const Output& o : r.node->inputs)
               l.append(py::make_tuple(NodeRef{r.graph, o.node}, o.index));
             return l;
           })
      .def("control_input_refs",
           [](const NodeRef& r) {
             py::list l;
             for (Node* c : r.node->control_inputs) l.append(NodeRef{r.graph, c});
             return l;
           })
      .def("has_attr", [](const NodeRef& r, const std::string& k) { return r.node->attrs.has(k); })
      .def("get_attr",
           [](const NodeRef& r, const std::string& k) {
             const AttrValue* v = r.node->attrs.find(k);
             if (!v) throw py::value_error("No attr named '" + k + "' in NodeDef " + r.node->name);
             return attr_to_py(*v);
           })
      .def("subgraphs", [](const NodeRef& r) { return r.node->subgraphs; })
      .def("output",
           [](const NodeRef& r, int i) {
             // The symbolic tensor for output i, usable as an op input while tracing this graph.
             if (i < 0 || i >= static_cast<int>(r.node->outputs.size()))
               throw py::index_error("no such output");
             const TensorSpec& s = r.node->outputs[i];
             Tensor t(s.dtype, s.shape, nullptr);
             t.set_sym(std::make_shared<SymbolicValue>(SymbolicValue{r.graph, r.node, i}));
             return t;
           })
      .def("__eq__", [](const NodeRef& a, const NodeRef& b) { return a.node == b.node; })
      .def("__hash__", [](const NodeRef& a) { return std::hash<const void*>()(a.node); })
      .def("__repr__",
           [](const NodeRef& r) { return "<NodeDef " + r.node->name + " op=" + r.node->type() + ">"; });

  py::class_<Tensor> tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def_property_readonly("_node_ref", [](const Tensor& t) -> py::object {
    if (!t.is_symbolic()) return py::none();
    auto g = t.sym()->graph.lock();
    if (!g) return py::none();
    return py::make_tuple(NodeRef{g, t.sym()->node}, t.sym()->index);
  });

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")
      .def("nodes",
           [](std::shared_ptr<Graph> g) {
             py::list l;
             for (const auto& n : g->nodes()) l.append(NodeRef{g, n.get()});
             return l;
           })
      .def("find",
           [](std::shared_ptr<Graph> g, const std::string& name) -> py::object {
             Node* n = g->find(name);
             return n ? py::cast(NodeRef{g, n}) : py::none();
           })
      .def("inputs",
           [](std::shared_ptr<Graph> g) {
             py::list l;
             for (Node* n : g->inputs) l.append(NodeRef{g, n});
             return l;
           })
      .def("outputs",
           [](std::shared_ptr<Graph> g) {
             py::list l;
             for (const Output& o : g->outputs) l.append(py::make_tuple(NodeRef{g, o.node}, o.index));
             return l;
           })
      .def("to_string", &Graph::to_string)
      .def("to_dot", &Graph::to_dot, py::arg("cluster_of") = std::map<std::string, std::string>())
      .def_property_readonly("num_nodes", &Graph::num_nodes);

  py::class_<ConcreteFunction, std::shared_ptr<ConcreteFunction>>(m, "ConcreteFunction")
      .def_property_readonly("name", &ConcreteFunction::name)
      .def_property_readonly("graph", &ConcreteFunction::graph)
      .def_property_readonly("optimized_graph", &ConcreteFunction::optimized_graph)
      .def(
          "call",
          [](const ConcreteFunction& f, std::vector<Tensor> in, const std::vector<int64_t>& traced_vars,
             const std::vector<int64_t>& vars) {
            std::vector<Tensor> out;
            {
              py::gil_scoped_release release;
              VariableBinding bind(&traced_vars, &vars);  // other variables of the same specs (checked there)
              out = f.call(std::move(in));
            }
            return tensors_to_py(out);
          },
          py::arg("inputs"), py::arg("traced_vars") = std::vector<int64_t>(),
          py::arg("vars") = std::vector<int64_t>())
      .def("accepts", &ConcreteFunction::accepts)
      .def_property_readonly("executed_graph", &ConcreteFunction::executed_graph)
      .def_property_readonly(
          "clusters",
          [](const ConcreteFunction& f) {
            py::list l;
            const JitReport& r = f.jit_report();
            for (size_t i = 0; i < r.clusters.size(); ++i) {
              const ClusterSummary& c = r.clusters[i];
              const CompiledCluster& cc = *r.compiled.at(i);
              l.append(py::dict(py::arg("name") = c.name, py::arg("scope") = c.scope, py::arg("ops") = c.ops,
                                py::arg("backend") = c.backend, py::arg("from_cache") = c.from_cache,
                                py::arg("compile_seconds") = c.compile_seconds,
                                py::arg("specializations") = cc.num_specializations(),
                                py::arg("fallbacks") = cc.fallbacks(),
                                py::arg("fallback_reason") = cc.fallback_reason(),
                                py::arg("loop_fallbacks") = cc.loop_fallbacks(),
                                py::arg("loop_fallback_reason") = cc.loop_fallback_reason()));
            }
            return l;
          })
      .def_property_readonly("op_cluster",
                             [](const ConcreteFunction& f) { return f.jit_report().op_cluster; })
      .def_property_readonly("op_reason", [](const ConcreteFunction& f) { return f.jit_report().op_reason; })
      .def_property_readonly("guarded_ifs",
                             [](const ConcreteFunction& f) { return f.jit_report().guarded_ifs; })
      .def("emit_ptx",
           [](const ConcreteFunction& f, const std::string& arch) {
             py::dict out;
             for (const auto& cc : f.jit_report().compiled) {
               PtxModule m;
               {
                 py::gil_scoped_release release;
                 m = emit_ptx(*cc->program, f.name() + "_" + cc->name, arch);
               }
               out[py::str(cc->name)] = py::dict(py::arg("ptx") = m.ptx, py::arg("kernels") = m.kernels,
                                                 py::arg("from_cache") = m.from_cache);
             }
             return out;
           })
      .def_property_readonly("jit_warnings",
                             [](const ConcreteFunction& f) { return f.jit_report().warnings; })
      .def("time_runs", &ConcreteFunction::time_runs, py::call_guard<py::gil_scoped_release>());
}

}  // namespace jf::py_bridge
