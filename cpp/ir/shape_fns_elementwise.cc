// Shape and dtype inference for elementwise, reduction and matmul ops (TF's rules: operands
// share a dtype, numpy broadcasting). The dtypes an op takes are its record's (ops.def).
#include <algorithm>

#include "ir/shape_fns.h"

namespace jf {

void infer_const(OpCall& c) {
  const AttrValue* a = c.attrs.find("value");  // k_Const and Node::const_value read it unchecked
  if (!a || !std::holds_alternative<Tensor>(*a) || std::get<Tensor>(*a).is_symbolic() ||
      !std::get<Tensor>(*a).defined())
    c.fail("a Const needs a 'value' attr holding an eager tensor");
  const Tensor& v = std::get<Tensor>(*a);
  c.add_output(v.dtype(), v.shape());
}
void infer_placeholder(OpCall& c) {
  c.add_output(c.attrs.get<DType>("dtype", DType::kFloat32), c.attrs.get<Shape>("shape", Shape{}));
}
void infer_identity(OpCall& c) { c.add_output(c.in[0].dtype(), c.in[0].shape()); }

// Elementwise ops take the dtypes their record claims (ops.def's types column), checked here
// once for every family instead of one shape function per set of dtypes.
void infer_unary(OpCall& c) {
  c.check_claimed(0);
  infer_identity(c);
}
// IsNan, IsInf, IsFinite: a bool output of the input's shape.
void infer_unary_predicate(OpCall& c) {
  c.check_claimed(0);
  c.add_output(DType::kBool, c.in[0].shape());
}
// TF's names of the dtypes in its Cast errors (DataTypeString).
static const char* tf_type_name(DType d) {
  switch (d) {
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kFloat16:
      return "half";
    default:
      return dtype_name(d);
  }
}

// A string casts only to a string (TF registers Cast for string -> string alone).
void infer_cast(OpCall& c) {
  const DType to = c.attrs.get<DType>("DstT", DType::kFloat32), from = c.in[0].dtype();
  if ((from == DType::kString) != (to == DType::kString) && from != DType::kInvalid)
    throw_unimplemented("Cast ", tf_type_name(from), " to ", tf_type_name(to), " is not supported (op Cast)");
  c.add_output(to, c.in[0].shape());
}

// Shared: same dtype for all operands, broadcast shapes.
static Shape broadcast_all(OpCall& c, size_t first) {
  Shape s = c.in[first].shape();
  for (size_t i = first + 1; i < c.in.size(); ++i) {
    if (!broadcast_shapes(s, c.in[i].shape(), &s))
      c.fail("Incompatible shapes: ", c.in[first].shape().str(), " vs. ", c.in[i].shape().str());
  }
  return s;
}
static void same_dtype(OpCall& c, size_t first) {
  for (size_t i = first + 1; i < c.in.size(); ++i)
    if (c.in[i].dtype() != c.in[first].dtype())
      c.fail("input #", i, " was expected to be a ", dtype_name(c.in[first].dtype()), " tensor but is a ",
             dtype_name(c.in[i].dtype()), " tensor");
}
// Both operands of one claimed dtype, broadcast; the result has that dtype (`out` kInvalid)
// or is bool (comparisons).
static void binary(OpCall& c, DType out) {
  same_dtype(c, 0);
  c.check_claimed(0, /*shared=*/true);
  Shape s = broadcast_all(c, 0);
  c.add_output(out == DType::kInvalid ? c.in[0].dtype() : out, s);
}
void infer_binary(OpCall& c) { binary(c, DType::kInvalid); }
void infer_compare(OpCall& c) { binary(c, DType::kBool); }

void infer_select(OpCall& c) {
  if (c.in[0].dtype() != DType::kBool)
    c.fail_type("condition must be bool, got ", dtype_name(c.in[0].dtype()));
  same_dtype(c, 1);
  c.add_output(c.in[1].dtype(), broadcast_all(c, 0));
}

void infer_addn(OpCall& c) {
  if (c.in.empty()) c.fail("needs at least one input");
  same_dtype(c, 0);
  if (!c.claims(c.in[0].dtype())) c.fail_type("expected numeric inputs");
  for (size_t i = 1; i < c.in.size(); ++i) {
    Shape tmp;
    if (!broadcast_shapes(c.in[0].shape(), c.in[i].shape(), &tmp) || tmp.rank() != c.in[0].rank() ||
        (c.in[0].shape().fully_defined() && c.in[i].shape().fully_defined() &&
         c.in[0].shape() != c.in[i].shape()))
      c.fail("inputs must all have the same shape: ", c.in[0].shape().str(), " vs. ", c.in[i].shape().str());
  }
  c.add_output(c.in[0].dtype(), c.in[0].shape());
}

bool reduce_axes(const OpCall& c, std::vector<int>* axes) {
  if (!c.has_value(1)) return false;
  const Tensor& a = c.in[1];
  if (!is_int(a.dtype())) c.fail_type("axis must be int32 or int64");
  if (a.rank() > 1) c.fail("axis must be a scalar or a vector");
  int r = c.in[0].rank();
  axes->clear();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    int64_t ax = a.get_int(i);
    if (ax < -r || ax >= r || r == 0)
      c.fail("Invalid reduction dimension (", ax, " for input with ", r, " dimension(s))");
    axes->push_back(static_cast<int>(ax < 0 ? ax + r : ax));
  }
  std::sort(axes->begin(), axes->end());
  auto dup = std::adjacent_find(axes->begin(), axes->end());
  if (dup != axes->end()) c.fail("Invalid reduction arguments: Axes contains duplicate dimension: ", *dup);
  return true;
}

Shape reduced_shape(OpCall& c) {
  const bool keep = c.attrs.get<bool>("keep_dims", false);
  std::vector<int> axes;
  const Shape& in = c.in[0].shape();
  Shape out;
  if (!reduce_axes(c, &axes)) {
    if (!keep) c.fail("the reduction axis must be known when tracing");
    for (int i = 0; i < in.rank(); ++i) out.push_back(-1);
    return out;
  }
  for (int i = 0; i < in.rank(); ++i) {
    const bool red = std::binary_search(axes.begin(), axes.end(), i);
    if (!red)
      out.push_back(in[i]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

void infer_reduce(OpCall& c) {
  c.check_claimed(0);
  c.add_output(c.in[0].dtype(), reduced_shape(c));
}

void infer_argreduce(OpCall& c) {
  c.check_claimed(0);
  if (!c.has_value(1)) c.fail("the dimension must be known when tracing");
  if (c.in[1].num_elements() != 1) c.fail("dimension must be a scalar");
  const Shape& in = c.in[0].shape();
  if (in.rank() == 0) c.fail("input must have rank >= 1");
  int ax = normalize_axis(c.in[1].get_int(0), in.rank(), c.name());
  if (in[ax] == 0) c.fail("Reduction axis ", ax, " is empty in shape ", in.str());
  Shape out = in;
  out.erase(ax);
  DType t = c.attrs.get<DType>("output_type", DType::kInt64);
  need_index_type(c, "output_type", t);
  if (t == DType::kInt32 && in[ax] > INT32_MAX)  // the kernel's int32 index would wrap
    c.fail("output_type int32 cannot hold an index into dimension ", ax, " of size ", in[ax]);
  c.add_output(t, out);
}

void infer_softmax(OpCall& c) {
  if (!c.claims(c.in[0].dtype())) c.fail_type("expected a float input, got ", dtype_name(c.in[0].dtype()));
  if (c.in[0].rank() < 1) c.fail("logits must have rank >= 1");
  infer_identity(c);
}

void infer_matmul(OpCall& c) {
  same_dtype(c, 0);
  if (!c.claims(c.in[0].dtype())) c.fail_type("expected numeric inputs");
  const Shape &a = c.in[0].shape(), &b = c.in[1].shape();
  bool batch = c.def->id == OpId::BatchMatMulV2;
  bool ta = c.attrs.get<bool>(batch ? "adj_x" : "transpose_a", false);
  bool tb = c.attrs.get<bool>(batch ? "adj_y" : "transpose_b", false);
  if (batch ? (a.rank() < 2 || b.rank() < 2) : (a.rank() != 2 || b.rank() != 2))
    c.fail(batch ? "inputs must have rank >= 2" : "inputs must be 2-D matrices");
  int ra = a.rank(), rb = b.rank();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], ka = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (ka >= 0 && kb >= 0 && ka != kb)
    c.fail("Matrix size-incompatible: In[0]: ", a.str(), ", In[1]: ", b.str());
  Shape ba, bb, out;
  for (int i = 0; i < ra - 2; ++i) ba.push_back(a[i]);
  for (int i = 0; i < rb - 2; ++i) bb.push_back(b[i]);
  if (!broadcast_shapes(ba, bb, &out))
    c.fail("batch dimensions are not broadcastable: ", a.str(), " vs. ", b.str());
  out.push_back(m);
  out.push_back(n);
  c.add_output(c.in[0].dtype(), out);
}

}  // namespace jf
