// Nested Python structures around leaves: the one traversal behind jf.function's signature
// key (function_cache.cc), its tracing and input_signature checks (function.py, through
// _C.nest_flatten), the packing of its outputs, jf.nest (core/nest.py) and the structures
// autodiff takes and returns (tape.gradient's sources, custom_gradient's results).
//
// Containers, one set of rules for every leaf rule (tf.nest's):
//   tuple, list, dict      the exact types, read in place (the cached call's fast path);
//   namedtuple             a tuple subclass whose type has _fields, rebuilt as its type;
//   mapping                any other collections.abc.Mapping (dict subclasses, OrderedDict,
//                          defaultdict, ...), rebuilt as its type from (key, value) pairs,
//                          a defaultdict with its default_factory;
//   mapping view           dict.keys()/values()/items() and collections.abc.MappingView
//                          subclasses, rebuilt as a list;
//   attrs class            a type with __attrs_attrs__: its fields in declaration order,
//                          rebuilt as type(*fields);
//   sequence               any other collections.abc.Sequence (list and tuple subclasses,
//                          deque, range, ...), rebuilt as type(items), or a list when that
//                          type cannot be built from one (list and tuple subclasses must).
// Never containers: str, bytes, bytearray, and a type with __jf_nest_atom__ (jf.TensorShape,
// one value as TF's TensorShape). Mapping and Sequence are read from the type's collection
// flags (Py_TPFLAGS_MAPPING/SEQUENCE, set by inheriting from or registering with the ABC, as
// Python's own pattern matching reads them), so no ABC isinstance call runs per object.
//
// Order: depth first; sequence items in order; mapping values in sorted key order (as
// `sorted(d)`; keys that do not sort raise TypeError), so mappings that differ only in
// insertion order flatten alike.
// Leaves, by rule (what is not a container):
//   kNest     everything (tf.nest), a composite tensor (a type with __jf_composite__:
//             SparseTensor, RaggedTensor) included, as tf.nest without expand_composites.
//   kNestExpand  the same, but a composite tensor opens into its component tensors
//             (expand_composites=True; function arguments and results always open them).
//   kInputs   Tensors (and subclasses) and numpy arrays: the leaves of the signature key.
//   kSpecs    the same, and instances of a given type (jf.TensorSpec).
//   kOutputs  Tensors, objects with __jf_tensor__ (jf.Variable), Python ints, floats and
//             bools, and numpy objects (arrays and scalars): what a traced function's
//             result may hold as a tensor; these are leaves before containers are looked at.
// Under the other rules anything else is a constant of the structure, kept by reference.
// A TreeDef rebuilds mappings in the structure's own key order under kNest(Expand) and kOutputs, in
// sorted key order under kInputs and kSpecs (one trace serves every insertion order).
//
// A structure nested deeper than kMaxNestDepth raises RecursionError, one that contains
// itself ValueError, never a C++ stack overflow; an exact list or dict changed while it is
// walked (from a key's __lt__ or a __getattr__) is read safely, and the items of every other
// container are copied into a list of the walker's own before they are walked.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

namespace jf::py_bridge {
namespace py = pybind11;

constexpr int kMaxNestDepth = 1000;

enum class NodeKind : uint8_t {
  kLeaf,
  kOther,  // a constant of the structure (not a leaf under the rule)
  kTuple,  // exact tuple, list and dict
  kList,
  kDict,
  kNamedTuple,   // the containers below keep their type in the TreeDef
  kSequence,     // list and tuple subclasses and other Sequences
  kMappingView,  // dict views and MappingView subclasses
  kAttrs,        // attrs classes
  kMapping,      // Mappings other than an exact dict
};
enum class LeafRule : uint8_t { kInputs, kSpecs, kOutputs, kNest, kNestExpand };

PyTypeObject* tensor_type();  // the bound jf.Tensor type, looked up once
// jitflow's eager string tensor (core/strings.py's StringTensor, registered at import; null
// before): a tensor leaf everywhere a jf.Tensor is, converted to a kString Tensor.
PyTypeObject*& string_tensor_type();
inline bool is_string_tensor(PyObject* o) {
  return string_tensor_type() && Py_TYPE(o) == string_tensor_type();
}
bool is_ndarray(PyObject* o);
// An object that stands for a tensor argument keyed by its spec, not its identity (a
// jf.data.Dataset, keyed by its element spec as TF keys a dataset argument): its type has
// __jf_spec_leaf__, which returns (key bytes, the tensor the trace takes in its place).
bool is_spec_leaf(PyObject* o);
// A composite tensor (SparseTensor, RaggedTensor): an attrs-style container whose type has
// __jf_composite__; a leaf to tf.nest unless expand_composites.
bool is_composite(PyObject* o);

// The container rules for every type but the exact tuple, list and dict: a container kind,
// or kOther.
NodeKind other_container_kind(PyObject* o);

// The container kind of `o`, or kOther; the exact types first, without a call.
inline NodeKind container_kind(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  if (t == &PyTuple_Type) return NodeKind::kTuple;
  if (t == &PyList_Type) return NodeKind::kList;
  if (t == &PyDict_Type) return NodeKind::kDict;
  return other_container_kind(o);
}
inline bool is_container(NodeKind k) { return k != NodeKind::kLeaf && k != NodeKind::kOther; }
inline bool is_mapping(NodeKind k) { return k == NodeKind::kDict || k == NodeKind::kMapping; }

// The kInputs rule; an exact Tensor is recognized first (the cached-call fast path).
inline NodeKind classify_input(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  if (t == tensor_type() || is_string_tensor(o)) return NodeKind::kLeaf;
  if (PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) || o == Py_None) return NodeKind::kOther;
  NodeKind k = container_kind(o);
  if (k != NodeKind::kOther) return k;
  if (is_ndarray(o) || PyType_IsSubtype(t, tensor_type()) || is_spec_leaf(o)) return NodeKind::kLeaf;
  return NodeKind::kOther;
}
NodeKind classify_output(PyObject* o);

// The containers on the path from the root; entering one past kMaxNestDepth raises.
struct NestPath {
  int depth = 0;
  PyObject* path[kMaxNestDepth];
  void enter(PyObject* o) {
    if (depth == kMaxNestDepth) fail();
    path[depth++] = o;
  }
  void leave() { --depth; }
  [[noreturn]] void fail() const;  // ValueError when a container repeats, else RecursionError
};

// A mapping's keys (kDict or kMapping): in iteration (insertion) order and sorted.
struct DictKeys {
  py::list insertion, sorted;
  DictKeys(PyObject* mapping, NodeKind kind);
};
// The value of a key of DictKeys; raises if the key went away.
py::object mapping_value(PyObject* mapping, NodeKind kind, PyObject* key);
// A defaultdict's default_factory; a null object for any other mapping.
py::object default_factory(PyObject* mapping);
// The items of a kSequence, kMappingView or kAttrs container, in a list of their own.
py::list container_items(PyObject* o, NodeKind kind);
// The children of a container of any kind, in the traversal's order.
py::list nest_children(PyObject* o, NodeKind kind);

// Walks `o` in the one order. The visitor provides:
//   NodeKind classify(PyObject*)                        its leaf rule
//   void leaf(PyObject*), void other(PyObject*)
//   void begin_seq(PyObject*, NodeKind), void end_seq(PyObject*, NodeKind, Py_ssize_t items)
//   void begin_dict(PyObject*, NodeKind, const DictKeys&), void dict_key(PyObject* key, NestPath&),
//   void end_dict(PyObject*)
template <class V>
void walk_nest(PyObject* o, V& v, NestPath& p) {
  NodeKind k = v.classify(o);
  switch (k) {
    case NodeKind::kLeaf:
      return v.leaf(o);
    case NodeKind::kOther:
      return v.other(o);
    case NodeKind::kDict:
    case NodeKind::kMapping: {
      p.enter(o);
      DictKeys keys(o, k);
      v.begin_dict(o, k, keys);
      for (Py_ssize_t i = 0, n = PyList_GET_SIZE(keys.sorted.ptr()); i < n; ++i) {
        PyObject* key = PyList_GET_ITEM(keys.sorted.ptr(), i);
        py::object value = mapping_value(o, k, key);
        v.dict_key(key, p);
        walk_nest(value.ptr(), v, p);
      }
      v.end_dict(o);
      p.leave();
      return;
    }
    case NodeKind::kTuple:
    case NodeKind::kList:
    case NodeKind::kNamedTuple: {
      p.enter(o);
      v.begin_seq(o, k);
      Py_ssize_t i = 0;
      for (; i < PySequence_Fast_GET_SIZE(o); ++i) {  // read each time: a list may change meanwhile
        py::object item = py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(o, i));
        walk_nest(item.ptr(), v, p);
      }
      v.end_seq(o, k, i);
      p.leave();
      return;
    }
    default: {  // kSequence, kMappingView, kAttrs
      p.enter(o);
      py::list items = container_items(o, k);
      v.begin_seq(o, k);
      Py_ssize_t n = PyList_GET_SIZE(items.ptr());
      for (Py_ssize_t i = 0; i < n; ++i) walk_nest(PyList_GET_ITEM(items.ptr(), i), v, p);
      v.end_seq(o, k, n);
      p.leave();
    }
  }
}

// A structure with its leaves taken out: rebuilds it around new leaves.
struct TreeDef {
  NodeKind kind = NodeKind::kOther;
  int leaf = 0;        // kLeaf: its index in the flat order
  int num_leaves = 0;  // in this subtree
  std::vector<TreeDef> kids;
  // kDict, kMapping: the keys in traversal (sorted) order, kids alike; kOther: the constant.
  py::object obj;
  // The container's type, for the kinds after kDict.
  py::object type;
  // kMapping of a defaultdict: its default_factory (null for other mappings).
  py::object factory;
  // kDict, kMapping: the kids in the order the mapping is rebuilt when that is not the sorted
  // order (kNest and kOutputs keep the structure's own order; inputs rebuild sorted).
  std::vector<int> order;

  template <class F>  // leaf_value(int index) -> py::object
  py::object build(const F& leaf_value) const;
  py::object unflatten(py::handle leaves) const;
  py::list paths() const;  // per leaf: a tuple of indices (sequences), keys (mappings), field names (attrs)
  std::string repr() const;
  bool operator==(const TreeDef& o) const;
  // The first place, in tf.nest's assert_same_structure order, where `o` nests otherwise:
  // false if none, else the child indices down to it and why ("nesting": a container against
  // a leaf; "type", "keys": with check_types; "length": the number of children).
  bool difference(const TreeDef& o, bool check_types, std::vector<int>* path, const char** reason) const;
  PyObject* container_type() const;  // kinds from kTuple on
};

// The rule _C.nest_flatten names ('nest', 'inputs', 'specs', 'outputs'), or with rule None
// the one its older outputs/spec_type arguments give; TypeError or ValueError otherwise.
LeafRule leaf_rule_from(py::handle rule, bool outputs, py::handle spec_type);
// (leaves, tree) of `structure`; spec_type: the extra leaf type of kSpecs.
std::pair<py::list, std::shared_ptr<TreeDef>> nest_flatten(py::handle structure, LeafRule rule,
                                                           py::handle spec_type = py::handle());

// The container rebuilt from its children's values (a list, in traversal order), for the
// kinds that call their type.
py::object rebuild_container(const TreeDef& t, py::list values);

template <class F>
py::object TreeDef::build(const F& leaf_value) const {
  switch (kind) {
    case NodeKind::kLeaf:
      return leaf_value(leaf);
    case NodeKind::kOther:
      return obj;
    case NodeKind::kTuple: {
      py::tuple t(kids.size());
      for (size_t i = 0; i < kids.size(); ++i)
        PyTuple_SET_ITEM(t.ptr(), i, kids[i].build(leaf_value).release().ptr());
      return std::move(t);
    }
    case NodeKind::kList: {
      py::list l(kids.size());
      for (size_t i = 0; i < kids.size(); ++i)
        PyList_SET_ITEM(l.ptr(), i, kids[i].build(leaf_value).release().ptr());
      return std::move(l);
    }
    case NodeKind::kDict: {
      py::dict d;
      for (size_t j = 0; j < kids.size(); ++j) {
        size_t i = order.empty() ? j : order[j];
        py::object value = kids[i].build(leaf_value);
        if (PyDict_SetItem(d.ptr(), PyList_GET_ITEM(obj.ptr(), i), value.ptr()) != 0)
          throw py::error_already_set();
      }
      return std::move(d);
    }
    default: {
      py::list values(kids.size());
      for (size_t i = 0; i < kids.size(); ++i)
        PyList_SET_ITEM(values.ptr(), i, kids[i].build(leaf_value).release().ptr());
      return rebuild_container(*this, std::move(values));
    }
  }
}

}  // namespace jf::py_bridge
