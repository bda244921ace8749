// What the graph knows of a shape vector it does not know whole (TF's "constant partial shape"):
// zeros([tf.shape(x)[0], 2]) has two columns, and reshape(x, [batch, -1, 4]) four channels, so
// layers built on such values see the dims TF reports.
#include "ir/partial_shape.h"

#include <algorithm>

namespace jf {
namespace {

constexpr int kMaxDepth = 16;  // a shape vector is a few ops deep; a long chain is not one

bool is_int_vector_spec(const TensorSpec& s) {
  return (s.dtype == DType::kInt32 || s.dtype == DType::kInt64) && s.shape.rank() == 1;
}

std::optional<std::vector<int64_t>> vector_value(const Output& o, int depth);

// A scalar integer the graph knows: a constant, or one element of a known part of a vector.
std::optional<int64_t> scalar_value(const Output& o, int depth) {
  if (depth > kMaxDepth || !o.node) return std::nullopt;
  const Node& n = *o.node;
  const TensorSpec& s = n.outputs[o.index];
  if (s.shape.rank() != 0 || (s.dtype != DType::kInt32 && s.dtype != DType::kInt64)) return std::nullopt;
  if (const Tensor* v = n.const_value()) return v->get_int(0);
  if ((n.op == OpId::Identity || n.op == OpId::Cast) && !n.inputs.empty())
    return scalar_value(n.inputs[0], depth + 1);
  // x[i] of a vector: begin i, shrink_axis_mask 1 and no other mask.
  if (n.op == OpId::StridedSlice && n.inputs.size() == 4) {
    if (n.attrs.get<int64_t>("shrink_axis_mask", 0) != 1 || n.attrs.get<int64_t>("ellipsis_mask", 0) ||
        n.attrs.get<int64_t>("new_axis_mask", 0))
      return std::nullopt;
    const Tensor* begin = n.inputs[1].node->const_value();
    if (!begin || begin->num_elements() != 1) return std::nullopt;
    auto vec = vector_value(n.inputs[0], depth + 1);
    if (!vec) return std::nullopt;
    int64_t i = begin->get_int(0), size = static_cast<int64_t>(vec->size());
    if (i < 0) i += size;
    if (i < 0 || i >= size || (*vec)[i] < 0) return std::nullopt;
    return (*vec)[i];
  }
  return std::nullopt;
}

// Python's slice of `v` by one (begin, end, stride) with TF's begin/end masks.
std::optional<std::vector<int64_t>> slice(const std::vector<int64_t>& v, const Node& n) {
  const Tensor* b = n.inputs[1].node->const_value();
  const Tensor* e = n.inputs[2].node->const_value();
  const Tensor* st = n.inputs[3].node->const_value();
  if (!b || !e || !st || b->num_elements() != 1 || e->num_elements() != 1 || st->num_elements() != 1)
    return std::nullopt;
  if (n.attrs.get<int64_t>("shrink_axis_mask", 0) || n.attrs.get<int64_t>("ellipsis_mask", 0) ||
      n.attrs.get<int64_t>("new_axis_mask", 0))
    return std::nullopt;
  const int64_t size = static_cast<int64_t>(v.size()), stride = st->get_int(0);
  if (stride == 0) return std::nullopt;
  auto clamp = [&](int64_t x) {
    if (x < 0) x += size;
    return stride > 0 ? std::clamp<int64_t>(x, 0, size) : std::clamp<int64_t>(x, -1, size - 1);
  };
  int64_t begin =
      n.attrs.get<int64_t>("begin_mask", 0) & 1 ? (stride > 0 ? 0 : size - 1) : clamp(b->get_int(0));
  int64_t end = n.attrs.get<int64_t>("end_mask", 0) & 1 ? (stride > 0 ? size : -1) : clamp(e->get_int(0));
  std::vector<int64_t> out;
  for (int64_t i = begin; stride > 0 ? i < end : i > end; i += stride) out.push_back(v[i]);
  return out;
}

std::optional<std::vector<int64_t>> vector_value(const Output& o, int depth) {
  if (depth > kMaxDepth || !o.node) return std::nullopt;
  const Node& n = *o.node;
  if (!is_int_vector_spec(n.outputs[o.index])) return std::nullopt;
  if (const Tensor* v = n.const_value()) return v->to_int64s();
  switch (n.op) {
    case OpId::Shape: {
      const Shape& s = n.inputs[0].node->outputs[n.inputs[0].index].shape;
      return std::vector<int64_t>(s.begin(), s.end());
    }
    case OpId::Identity:
    case OpId::Cast:
      return vector_value(n.inputs[0], depth + 1);
    case OpId::Pack: {
      if (n.attrs.get<int64_t>("axis", 0) != 0) return std::nullopt;
      std::vector<int64_t> out;
      for (const Output& in : n.inputs) out.push_back(scalar_value(in, depth + 1).value_or(-1));
      return out;
    }
    case OpId::ConcatV2: {
      if (n.inputs.size() < 2) return std::nullopt;
      std::vector<int64_t> out;
      for (size_t i = 0; i + 1 < n.inputs.size(); ++i) {
        if (auto part = vector_value(n.inputs[i], depth + 1)) {
          out.insert(out.end(), part->begin(), part->end());
          continue;
        }
        const TensorSpec& s = n.inputs[i].node->outputs[n.inputs[i].index];
        if (s.shape.rank() != 1 || s.shape[0] < 0) return std::nullopt;  // its length unknown
        out.insert(out.end(), s.shape[0], -1);
      }
      return out;
    }
    case OpId::StridedSlice: {
      if (n.inputs.size() != 4) return std::nullopt;
      auto v = vector_value(n.inputs[0], depth + 1);
      return v ? slice(*v, n) : std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<std::vector<int64_t>> partial_shape_value(const Output& o) {
  auto v = vector_value(o, 0);
  if (!v) return std::nullopt;
  // A value TF's shape functions read as a dim: below -1 it is no dim, and -1 means unknown.
  for (int64_t& d : *v)
    if (d < -1) return std::nullopt;
  if (std::none_of(v->begin(), v->end(), [](int64_t d) { return d >= 0; })) return std::nullopt;
  return v;
}

std::vector<std::optional<std::vector<int64_t>>> partial_shape_inputs(const OpDef& def,
                                                                      const std::vector<Output>& ins) {
  std::vector<std::optional<std::vector<int64_t>>> out;
  if (!def.shape_inputs) return out;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!def.is_shape_input(i, ins.size()) || ins[i].node->const_value()) continue;
    if (auto v = partial_shape_value(ins[i])) {
      out.resize(ins.size());
      out[i] = std::move(v);
    }
  }
  return out;
}

}  // namespace jf
