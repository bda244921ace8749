// Nested structures: the traversal's helpers, TreeDef and nest_flatten.
#include "python/nest.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <unordered_map>

#include "core/tensor.h"
#include "support/errors.h"

namespace jf::py_bridge {

PyTypeObject* tensor_type() {
  static PyTypeObject* t = reinterpret_cast<PyTypeObject*>(py::type::of<Tensor>().ptr());
  return t;
}

bool is_ndarray(PyObject* o) { return py::isinstance<py::array>(o); }

namespace {
bool is_numpy_object(PyObject* o) {
  if (is_ndarray(o)) return true;
  py::object module = py::getattr(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__module__", py::none());
  return PyUnicode_Check(module.ptr()) && PyUnicode_CompareWithASCIIString(module.ptr(), "numpy") == 0;
}
}  // namespace

NodeKind classify_output(PyObject* o) {
  if (PyObject_TypeCheck(o, tensor_type()) || PyObject_HasAttrString(o, "__jf_tensor__"))
    return NodeKind::kLeaf;
  // TF returns a traced function's Python numbers (and bools) as tensors.
  if (PyLong_Check(o) || PyFloat_Check(o)) return NodeKind::kLeaf;
  NodeKind k = container_kind(o);
  if (k != NodeKind::kOther) return k;
  return is_numpy_object(o) ? NodeKind::kLeaf : NodeKind::kOther;
}

void NestPath::fail() const {
  std::vector<PyObject*> seen(path, path + depth);
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())
    throw py::value_error(
        "cannot flatten a nested structure that contains itself (a list, dict or tuple that refers to "
        "itself)");
  PyErr_Format(PyExc_RecursionError, "cannot flatten a nested structure deeper than %d levels",
               kMaxNestDepth);
  throw py::error_already_set();
}

DictKeys::DictKeys(PyObject* dict) {
  insertion = py::reinterpret_steal<py::list>(PyDict_Keys(dict));
  if (!insertion) throw py::error_already_set();
  sorted = py::reinterpret_steal<py::list>(PySequence_List(insertion.ptr()));
  if (!sorted || PyList_Sort(sorted.ptr()) != 0) throw py::error_already_set();
}

py::object dict_value(PyObject* dict, PyObject* key) {
  PyObject* v = PyDict_GetItemWithError(dict, key);
  if (!v) {
    if (PyErr_Occurred()) throw py::error_already_set();
    throw py::value_error("a dict changed while its nested structure was flattened");
  }
  return py::reinterpret_borrow<py::object>(v);
}

namespace {

// Builds the TreeDef and the flat leaf list.
struct TreeBuilder {
  LeafRule rule;
  PyTypeObject* spec_type = nullptr;
  py::list leaves;
  TreeDef root;
  std::vector<TreeDef*> open;  // the containers being filled, innermost last

  NodeKind classify(PyObject* o) const {
    if (rule == LeafRule::kOutputs) return classify_output(o);
    NodeKind k = classify_input(o);
    if (k == NodeKind::kOther && spec_type && PyObject_TypeCheck(o, spec_type)) return NodeKind::kLeaf;
    return k;
  }
  TreeDef& add(NodeKind kind) {
    TreeDef* n = open.empty() ? &root : &open.back()->kids.emplace_back();
    n->kind = kind;
    return *n;
  }
  void close() {
    TreeDef* n = open.back();
    open.pop_back();
    for (const TreeDef& k : n->kids) n->num_leaves += k.num_leaves;
  }
  void leaf(PyObject* o) {
    TreeDef& n = add(NodeKind::kLeaf);
    n.leaf = static_cast<int>(PyList_GET_SIZE(leaves.ptr()));
    n.num_leaves = 1;
    leaves.append(o);
  }
  void other(PyObject* o) { add(NodeKind::kOther).obj = py::reinterpret_borrow<py::object>(o); }
  void begin_seq(PyObject* o, NodeKind kind) {
    TreeDef& n = add(kind);
    if (kind == NodeKind::kNamedTuple)
      n.obj = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(o)));
    n.kids.reserve(PySequence_Fast_GET_SIZE(o));
    open.push_back(&n);
  }
  void end_seq(PyObject*, NodeKind, Py_ssize_t) { close(); }
  void begin_dict(PyObject*, const DictKeys& keys) {
    TreeDef& n = add(NodeKind::kDict);
    n.obj = keys.sorted;
    Py_ssize_t size = PyList_GET_SIZE(keys.sorted.ptr());
    n.kids.reserve(size);
    // Outputs rebuild their dicts in insertion order (inputs in sorted order, as keyed).
    if (rule == LeafRule::kOutputs) {
      std::unordered_map<PyObject*, int> index;
      for (Py_ssize_t i = 0; i < size; ++i)
        index[PyList_GET_ITEM(keys.sorted.ptr(), i)] = static_cast<int>(i);
      bool sorted = true;
      for (Py_ssize_t j = 0; j < size; ++j) {
        n.order.push_back(index.at(PyList_GET_ITEM(keys.insertion.ptr(), j)));
        sorted = sorted && n.order.back() == j;
      }
      if (sorted) n.order.clear();
    }
    open.push_back(&n);
  }
  void dict_key(PyObject*, NestPath&) {}
  void end_dict(PyObject*) { close(); }
};

void collect_paths(const TreeDef& t, std::vector<py::object>& prefix, py::list& out) {
  switch (t.kind) {
    case NodeKind::kLeaf: {
      py::tuple p(prefix.size());
      for (size_t i = 0; i < prefix.size(); ++i) p[i] = prefix[i];
      out.append(p);
      return;
    }
    case NodeKind::kOther:
      return;
    default:
      for (size_t i = 0; i < t.kids.size(); ++i) {
        prefix.push_back(t.kind == NodeKind::kDict
                             ? py::reinterpret_borrow<py::object>(PyList_GET_ITEM(t.obj.ptr(), i))
                             : py::int_(i));
        collect_paths(t.kids[i], prefix, out);
        prefix.pop_back();
      }
  }
}

bool equal_objects(const py::object& a, const py::object& b) {
  if (a.ptr() == b.ptr()) return true;
  if (!a || !b) return false;
  // Tensors and variables compare elementwise (an answer per element, not a bool): the same
  // object only.
  for (PyObject* o : {a.ptr(), b.ptr()})
    if (PyObject_TypeCheck(o, tensor_type()) || PyObject_HasAttrString(o, "__jf_tensor__")) return false;
  int r = PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_EQ);
  if (r < 0) PyErr_Clear();
  return r == 1;
}

}  // namespace

std::pair<py::list, std::shared_ptr<TreeDef>> nest_flatten(py::handle structure, LeafRule rule,
                                                           py::handle spec_type) {
  TreeBuilder b;
  b.rule = rule;
  if (rule == LeafRule::kSpecs && spec_type && !spec_type.is_none()) {
    if (!PyType_Check(spec_type.ptr())) throw py::type_error("nest_flatten: spec_type must be a type");
    b.spec_type = reinterpret_cast<PyTypeObject*>(spec_type.ptr());
  }
  auto path = std::make_unique<NestPath>();
  walk_nest(structure.ptr(), b, *path);
  auto tree = std::make_shared<TreeDef>(std::move(b.root));
  return {std::move(b.leaves), std::move(tree)};
}

py::object TreeDef::unflatten(py::handle leaves) const {
  py::sequence seq = py::reinterpret_borrow<py::sequence>(leaves);
  py::list values(seq);
  if (static_cast<int>(values.size()) != num_leaves)
    throw py::value_error(
        str_cat("unflatten: the structure has ", num_leaves, " leaves, got ", values.size(), " values"));
  return build([&](int i) { return py::reinterpret_borrow<py::object>(PyList_GET_ITEM(values.ptr(), i)); });
}

py::list TreeDef::paths() const {
  py::list out;
  std::vector<py::object> prefix;
  collect_paths(*this, prefix, out);
  return out;
}

std::string TreeDef::repr() const {
  auto items = [&](const char* open, const char* close) {
    std::string s = open;
    for (size_t i = 0; i < kids.size(); ++i) s += (i ? ", " : "") + kids[i].repr();
    if (kind != NodeKind::kList && kids.size() == 1) s += ",";
    return s + close;
  };
  switch (kind) {
    case NodeKind::kLeaf:
      return "*";
    case NodeKind::kTuple:
      return items("(", ")");
    case NodeKind::kNamedTuple:
      return py::str(obj.attr("__name__")).cast<std::string>() + items("(", ")");
    case NodeKind::kList:
      return items("[", "]");
    case NodeKind::kDict: {
      std::string s = "{";
      for (size_t j = 0; j < kids.size(); ++j) {
        size_t i = order.empty() ? j : order[j];
        s += (j ? ", " : "") + py::repr(PyList_GET_ITEM(obj.ptr(), i)).cast<std::string>() + ": " +
             kids[i].repr();
      }
      return s + "}";
    }
    default:
      return py::repr(obj).cast<std::string>();
  }
}

bool TreeDef::operator==(const TreeDef& o) const {
  if (kind != o.kind || kids.size() != o.kids.size() || num_leaves != o.num_leaves) return false;
  if (kind == NodeKind::kLeaf) return leaf == o.leaf;
  if (kind == NodeKind::kDict || kind == NodeKind::kNamedTuple || kind == NodeKind::kOther)
    if (!equal_objects(obj, o.obj)) return false;
  for (size_t i = 0; i < kids.size(); ++i)
    if (!(kids[i] == o.kids[i])) return false;
  return true;
}

}  // namespace jf::py_bridge
