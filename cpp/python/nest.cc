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

PyTypeObject*& string_tensor_type() {
  static PyTypeObject* t = nullptr;  // a strong reference, never released
  return t;
}

namespace {
bool is_numpy_object(PyObject* o) {
  if (is_ndarray(o)) return true;
  py::object module = py::getattr(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__module__", py::none());
  return PyUnicode_Check(module.ptr()) && PyUnicode_CompareWithASCIIString(module.ptr(), "numpy") == 0;
}

PyObject* interned(const char* name) {
  PyObject* s = PyUnicode_InternFromString(name);  // kept for the process
  if (!s) throw py::error_already_set();
  return s;
}

// An attribute of the type or its bases: the type's attribute cache, no exception on a miss.
bool type_has(PyTypeObject* t, PyObject* name) { return _PyType_Lookup(t, name) != nullptr; }

// A module attribute imported once and kept for the process.
PyObject* imported(const char* module, const char* name, PyObject*& slot) {
  if (!slot) slot = py::object(py::module_::import(module).attr(name)).release().ptr();
  return slot;
}

PyTypeObject* mapping_view_type() {
  static PyObject* t = nullptr;
  return reinterpret_cast<PyTypeObject*>(imported("collections.abc", "MappingView", t));
}

PyTypeObject* defaultdict_type() {
  static PyObject* t = nullptr;
  return reinterpret_cast<PyTypeObject*>(imported("collections", "defaultdict", t));
}

bool is_mapping_view(PyObject* o) {
  return PyDictKeys_Check(o) || PyDictValues_Check(o) || PyDictItems_Check(o) ||
         PyType_IsSubtype(Py_TYPE(o), mapping_view_type());
}
}  // namespace

bool is_composite(PyObject* o) {
  static PyObject* const name = interned("__jf_composite__");
  return type_has(Py_TYPE(o), name);
}

bool is_spec_leaf(PyObject* o) {
  static PyObject* const name = interned("__jf_spec_leaf__");
  return type_has(Py_TYPE(o), name);
}

NodeKind other_container_kind(PyObject* o) {
  static PyObject* const attrs_name = interned("__attrs_attrs__");
  static PyObject* const fields_name = interned("_fields");
  static PyObject* const atom_name = interned("__jf_nest_atom__");
  PyTypeObject* t = Py_TYPE(o);
  const unsigned long flags = t->tp_flags;
  // Numbers, str and bytes are never nested (bytearray has no collection flag either).
  if (flags & (Py_TPFLAGS_LONG_SUBCLASS | Py_TPFLAGS_UNICODE_SUBCLASS | Py_TPFLAGS_BYTES_SUBCLASS) ||
      PyByteArray_Check(o))
    return NodeKind::kOther;
  NodeKind k;
  if (flags & Py_TPFLAGS_MAPPING)
    k = NodeKind::kMapping;
  else if (is_mapping_view(o))
    k = NodeKind::kMappingView;
  else if (type_has(t, attrs_name))
    k = NodeKind::kAttrs;
  else if (flags & Py_TPFLAGS_SEQUENCE) {
    // numpy 2.5 marks ndarray as a sequence; an array is one value, never a nest of its rows.
    if (is_ndarray(o)) return NodeKind::kOther;
    k = PyTuple_Check(o) && type_has(t, fields_name) ? NodeKind::kNamedTuple : NodeKind::kSequence;
  } else
    return NodeKind::kOther;
  // jf.TensorShape is a tuple but one value to nest, as TF's TensorShape is.
  return type_has(t, atom_name) ? NodeKind::kOther : k;
}

NodeKind classify_output(PyObject* o) {
  if (PyObject_TypeCheck(o, tensor_type()) || is_string_tensor(o) ||
      PyObject_HasAttrString(o, "__jf_tensor__"))
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
        "cannot flatten a nested structure that contains itself (a container that refers to itself)");
  PyErr_Format(PyExc_RecursionError, "cannot flatten a nested structure deeper than %d levels",
               kMaxNestDepth);
  throw py::error_already_set();
}

DictKeys::DictKeys(PyObject* mapping, NodeKind kind) {
  // A Mapping's keys are what iterating it gives (as `sorted(mapping)` reads them).
  insertion = py::reinterpret_steal<py::list>(kind == NodeKind::kDict ? PyDict_Keys(mapping)
                                                                      : PySequence_List(mapping));
  if (!insertion) throw py::error_already_set();
  sorted = py::reinterpret_steal<py::list>(PySequence_List(insertion.ptr()));
  if (!sorted || PyList_Sort(sorted.ptr()) != 0) throw py::error_already_set();
}

py::object mapping_value(PyObject* mapping, NodeKind kind, PyObject* key) {
  if (kind != NodeKind::kDict) {
    PyObject* v = PyObject_GetItem(mapping, key);  // the Mapping's own __getitem__
    if (!v) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(v);
  }
  PyObject* v = PyDict_GetItemWithError(mapping, key);
  if (!v) {
    if (PyErr_Occurred()) throw py::error_already_set();
    throw py::value_error("a dict changed while its nested structure was flattened");
  }
  return py::reinterpret_borrow<py::object>(v);
}

py::object default_factory(PyObject* mapping) {
  if (!PyObject_TypeCheck(mapping, defaultdict_type())) return py::object();
  return py::getattr(mapping, "default_factory");
}

py::list container_items(PyObject* o, NodeKind kind) {
  if (kind != NodeKind::kAttrs) {
    PyObject* items = PySequence_List(o);  // as list(o): the type's own iteration
    if (!items) throw py::error_already_set();
    return py::reinterpret_steal<py::list>(items);
  }
  py::list items;
  for (py::handle field : py::getattr(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__attrs_attrs__"))
    items.append(py::getattr(o, field.attr("name")));
  return items;
}

py::list nest_children(PyObject* o, NodeKind kind) {
  if (is_mapping(kind)) {
    DictKeys keys(o, kind);
    py::list values;
    for (py::handle key : keys.sorted) values.append(mapping_value(o, kind, key.ptr()));
    return values;
  }
  if (kind == NodeKind::kTuple || kind == NodeKind::kList || kind == NodeKind::kNamedTuple) {
    py::list items;  // the items in place, as walk_nest reads them
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); ++i) items.append(PySequence_Fast_GET_ITEM(o, i));
    return items;
  }
  return container_items(o, kind);
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
    switch (rule) {
      case LeafRule::kNest:
      case LeafRule::kNestExpand: {
        NodeKind k = container_kind(o);
        if (k == NodeKind::kAttrs && rule == LeafRule::kNest && is_composite(o)) return NodeKind::kLeaf;
        return k == NodeKind::kOther ? NodeKind::kLeaf : k;
      }
      case LeafRule::kOutputs:
        return classify_output(o);
      default: {
        NodeKind k = classify_input(o);
        if (k == NodeKind::kOther && spec_type && PyObject_TypeCheck(o, spec_type)) return NodeKind::kLeaf;
        return k;
      }
    }
  }
  TreeDef& add(NodeKind kind, PyObject* o) {
    TreeDef* n = open.empty() ? &root : &open.back()->kids.emplace_back();
    n->kind = kind;
    if (kind > NodeKind::kDict)
      n->type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(o)));
    return *n;
  }
  void close() {
    TreeDef* n = open.back();
    open.pop_back();
    for (const TreeDef& k : n->kids) n->num_leaves += k.num_leaves;
  }
  void leaf(PyObject* o) {
    TreeDef& n = add(NodeKind::kLeaf, o);
    n.leaf = static_cast<int>(PyList_GET_SIZE(leaves.ptr()));
    n.num_leaves = 1;
    leaves.append(o);
  }
  void other(PyObject* o) { add(NodeKind::kOther, o).obj = py::reinterpret_borrow<py::object>(o); }
  void begin_seq(PyObject* o, NodeKind kind) {
    TreeDef& n = add(kind, o);
    if (kind <= NodeKind::kNamedTuple) n.kids.reserve(PySequence_Fast_GET_SIZE(o));
    open.push_back(&n);
  }
  void end_seq(PyObject*, NodeKind, Py_ssize_t) { close(); }
  void begin_dict(PyObject* o, NodeKind kind, const DictKeys& keys) {
    TreeDef& n = add(kind, o);
    n.obj = keys.sorted;
    if (kind == NodeKind::kMapping) n.factory = default_factory(o);
    Py_ssize_t size = PyList_GET_SIZE(keys.sorted.ptr());
    n.kids.reserve(size);
    // kNest and kOutputs rebuild a mapping in its own key order (inputs in sorted order, as
    // keyed: one trace serves every insertion order).
    if (rule == LeafRule::kOutputs || rule == LeafRule::kNest || rule == LeafRule::kNestExpand) {
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
    default: {
      py::list fields;
      if (t.kind == NodeKind::kAttrs)
        for (py::handle field : t.type.attr("__attrs_attrs__")) fields.append(field.attr("name"));
      for (size_t i = 0; i < t.kids.size(); ++i) {
        if (is_mapping(t.kind))
          prefix.push_back(py::reinterpret_borrow<py::object>(PyList_GET_ITEM(t.obj.ptr(), i)));
        else if (t.kind == NodeKind::kAttrs && i < fields.size())
          prefix.push_back(fields[i]);
        else
          prefix.push_back(py::int_(i));
        collect_paths(t.kids[i], prefix, out);
        prefix.pop_back();
      }
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

// Two namedtuple types tf.nest takes for one: the same name and fields.
bool same_namedtuple_types(PyObject* a, PyObject* b) {
  return equal_objects(py::getattr(a, "__name__"), py::getattr(b, "__name__")) &&
         equal_objects(py::getattr(a, "_fields", py::none()), py::getattr(b, "_fields", py::none()));
}

bool same_key_sets(PyObject* a, PyObject* b) {
  py::object sa = py::reinterpret_steal<py::object>(PySet_New(a));
  if (!sa) throw py::error_already_set();
  py::object sb = py::reinterpret_steal<py::object>(PySet_New(b));
  if (!sb) throw py::error_already_set();
  int r = PyObject_RichCompareBool(sa.ptr(), sb.ptr(), Py_EQ);
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

}  // namespace

LeafRule leaf_rule_from(py::handle rule, bool outputs, py::handle spec_type) {
  if (rule.is_none())
    return outputs ? LeafRule::kOutputs : spec_type.is_none() ? LeafRule::kInputs : LeafRule::kSpecs;
  if (!PyUnicode_Check(rule.ptr()))
    throw py::type_error(
        "nest_flatten: rule must be a str ('nest', 'nest_expand', 'inputs', 'specs' or 'outputs'), got " +
        py::repr(rule).cast<std::string>());
  std::string name = rule.cast<std::string>();
  LeafRule r;
  if (name == "nest")
    r = LeafRule::kNest;
  else if (name == "nest_expand")
    r = LeafRule::kNestExpand;
  else if (name == "inputs")
    r = LeafRule::kInputs;
  else if (name == "specs")
    r = LeafRule::kSpecs;
  else if (name == "outputs")
    r = LeafRule::kOutputs;
  else
    throw py::value_error("nest_flatten: unknown rule '" + name +
                          "' (expected 'nest', 'nest_expand', 'inputs', 'specs' or 'outputs')");
  if ((outputs && r != LeafRule::kOutputs) || (!spec_type.is_none() && r != LeafRule::kSpecs))
    throw py::value_error("nest_flatten: outputs and spec_type conflict with rule='" + name + "'");
  if (r == LeafRule::kSpecs && spec_type.is_none())
    throw py::value_error("nest_flatten: rule='specs' needs a spec_type");
  return r;
}

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

py::object rebuild_container(const TreeDef& t, py::list values) {
  PyObject* type = t.type.ptr();
  switch (t.kind) {
    case NodeKind::kNamedTuple:
    case NodeKind::kAttrs: {
      py::tuple args = py::reinterpret_steal<py::tuple>(PyList_AsTuple(values.ptr()));
      if (!args) throw py::error_already_set();
      return t.type(*args);
    }
    case NodeKind::kMappingView:
      return std::move(values);
    case NodeKind::kMapping: {
      py::list items(t.kids.size());
      for (size_t j = 0; j < t.kids.size(); ++j) {
        size_t i = t.order.empty() ? j : t.order[j];
        PyList_SET_ITEM(items.ptr(), j,
                        py::make_tuple(py::reinterpret_borrow<py::object>(PyList_GET_ITEM(t.obj.ptr(), i)),
                                       py::reinterpret_borrow<py::object>(PyList_GET_ITEM(values.ptr(), i)))
                            .release()
                            .ptr());
      }
      return t.factory ? t.type(t.factory, items) : t.type(items);
    }
    default: {  // kSequence
      PyObject* r = PyObject_CallOneArg(type, values.ptr());
      if (r) return py::reinterpret_steal<py::object>(r);
      // A Sequence type that is not built from a list (range, ...) comes back as a list; a
      // list or tuple subclass must be.
      auto* tp = reinterpret_cast<PyTypeObject*>(type);
      if (!PyErr_ExceptionMatches(PyExc_TypeError) || PyType_IsSubtype(tp, &PyList_Type) ||
          PyType_IsSubtype(tp, &PyTuple_Type))
        throw py::error_already_set();
      PyErr_Clear();
      return std::move(values);
    }
  }
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
    if (kind == NodeKind::kTuple && kids.size() == 1) s += ",";
    return s + close;
  };
  auto type_name = [&] { return py::str(type.attr("__name__")).cast<std::string>(); };
  switch (kind) {
    case NodeKind::kLeaf:
      return "*";
    case NodeKind::kTuple:
      return items("(", ")");
    case NodeKind::kNamedTuple:
    case NodeKind::kAttrs:
      return type_name() + items("(", ")");
    case NodeKind::kList:
      return items("[", "]");
    case NodeKind::kSequence:
    case NodeKind::kMappingView:
      return type_name() + items("([", "])");
    case NodeKind::kDict:
    case NodeKind::kMapping: {
      std::string s = kind == NodeKind::kDict ? "{" : type_name() + "({";
      for (size_t j = 0; j < kids.size(); ++j) {
        size_t i = order.empty() ? j : order[j];
        s += (j ? ", " : "") + py::repr(PyList_GET_ITEM(obj.ptr(), i)).cast<std::string>() + ": " +
             kids[i].repr();
      }
      return s + (kind == NodeKind::kDict ? "}" : "})");
    }
    default:
      return py::repr(obj).cast<std::string>();
  }
}

bool TreeDef::operator==(const TreeDef& o) const {
  if (kind != o.kind || kids.size() != o.kids.size() || num_leaves != o.num_leaves) return false;
  if (kind == NodeKind::kLeaf) return leaf == o.leaf;
  if (type.ptr() != o.type.ptr() || bool(factory) != bool(o.factory)) return false;
  if (factory && !equal_objects(factory, o.factory)) return false;
  if (is_mapping(kind) || kind == NodeKind::kOther)
    if (!equal_objects(obj, o.obj)) return false;
  for (size_t i = 0; i < kids.size(); ++i)
    if (!(kids[i] == o.kids[i])) return false;
  return true;
}

PyObject* TreeDef::container_type() const {
  switch (kind) {
    case NodeKind::kTuple:
      return reinterpret_cast<PyObject*>(&PyTuple_Type);
    case NodeKind::kList:
      return reinterpret_cast<PyObject*>(&PyList_Type);
    case NodeKind::kDict:
      return reinterpret_cast<PyObject*>(&PyDict_Type);
    default:
      return type.ptr();
  }
}

bool TreeDef::difference(const TreeDef& o, bool check_types, std::vector<int>* path,
                         const char** reason) const {
  // tf.nest's order: nesting, then (check_types) the container types and a mapping's keys,
  // then each pair of children, then their number.
  if (is_container(kind) != is_container(o.kind)) {
    *reason = "nesting";
    return true;
  }
  if (!is_container(kind)) return false;
  if (check_types) {
    PyObject *ta = container_type(), *tb = o.container_type();
    bool both_mappings = is_mapping(kind) && is_mapping(o.kind);
    bool same_namedtuples =
        kind == NodeKind::kNamedTuple && o.kind == NodeKind::kNamedTuple && same_namedtuple_types(ta, tb);
    if (ta != tb && !both_mappings && !same_namedtuples) {
      *reason = "type";
      return true;
    }
    if (both_mappings && !same_key_sets(obj.ptr(), o.obj.ptr())) {
      *reason = "keys";
      return true;
    }
  }
  for (size_t i = 0; i < std::min(kids.size(), o.kids.size()); ++i) {
    path->push_back(static_cast<int>(i));
    if (kids[i].difference(o.kids[i], check_types, path, reason)) return true;
    path->pop_back();
  }
  if (kids.size() != o.kids.size()) {
    *reason = "length";
    return true;
  }
  return false;
}

}  // namespace jf::py_bridge
