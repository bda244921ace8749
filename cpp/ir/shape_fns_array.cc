// Shape inference for data-movement and creation ops. Shape-valued inputs (Reshape's shape,
// Transpose's perm, ...) are read when known; otherwise the output gets unknown dims.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "ir/shape_fns.h"

namespace jf {

static void need_int_vector(const OpCall& c, size_t i, const char* what) {
  if (!is_int(c.in[i].dtype()))
    c.fail_type(what, " must be int32 or int64, got ", dtype_name(c.in[i].dtype()));
  if (c.in[i].rank() != 1) c.fail(what, " must be a vector, got shape ", c.in[i].shape().str());
}

// The output rank given by a shape vector computed in the graph: its length, which must be
// known (jitflow has no tensors of unknown rank; a length of -1 made a rank -1 Shape).
static int traced_rank(const OpCall& c, size_t i, const char* what) {
  int64_t n = c.in[i].shape()[0];
  if (n < 0)
    c.fail("the length of ", what, " must be known when tracing (a tensor of unknown rank), got shape ",
           c.in[i].shape().str());
  if (n > kMaxRank)
    c.fail("tensors of rank > ", kMaxRank, " are not supported (", what, " has ", n, " dims)");
  return static_cast<int>(n);
}

void apply_partial(const OpCall& c, size_t i, Shape* out) {
  const std::vector<int64_t>* p = c.partial_value(i);
  if (!p || static_cast<int>(p->size()) != out->rank()) return;
  for (int d = 0; d < out->rank(); ++d) (*out)[d] = (*p)[d];
}

Shape resolve_reshape(const OpCall& c, const Shape& in, const std::vector<int64_t>& target) {
  Shape out;
  int unknown = -1;
  int64_t known = 1;  // product of the non-zero target sizes
  bool target_has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (unknown >= 0) c.fail("only one input size may be -1, not both ", unknown, " and ", i);
      unknown = static_cast<int>(i);
    } else if (target[i] < 0) {
      c.fail("size ", i, " must be non-negative, not ", target[i]);
    } else if (target[i] == 0) {
      target_has_zero = true;
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      std::string dims;  // TF's message, which lists the requested sizes
      for (size_t k = 0; k < target.size(); ++k) dims += (k ? ", " : "") + std::to_string(target[k]);
      c.fail("Shape [", dims, "] has too many elements");
    }
    out.push_back(target[i]);
  }
  if (!in.fully_defined()) return out;
  int64_t n = in.num_elements();
  if (unknown >= 0) {
    // TF's rule: zero sizes count in neither product, so [0, 3] -> [-1, 0] is [3, 0].
    int64_t in_n = 1;
    bool in_has_zero = false;
    for (int64_t d : in) {
      if (d > 0 || !target_has_zero) {
        if (__builtin_mul_overflow(in_n, d, &in_n))  // [0, 2**40, 2**40] -> [0, -1]
          c.fail("the requested shape ", out.str(), " leaves more than 2**63 - 1 values for its -1");
      } else
        in_has_zero = true;
    }
    int64_t missing = in_n / known;
    if (!in_has_zero && missing * known != in_n)
      c.fail("Input to reshape is a tensor with ", in_n, " values, but the requested shape ", out.str(),
             " requires a multiple of ", known);
    out[unknown] = missing;
  }
  if (out.num_elements() != n)
    c.fail("Input to reshape is a tensor with ", n, " values, but the requested shape has ",
           out.num_elements());
  return out;
}

void infer_reshape(OpCall& c) {
  need_int_vector(c, 1, "shape");
  Shape out;
  if (c.has_value(1)) {
    out = resolve_reshape(c, c.in[0].shape(), c.in[1].to_int64s());
  } else {
    out.resize(traced_rank(c, 1, "shape"), -1);
    apply_partial(c, 1, &out);
    // As TF: one dim left unknown (a -1, or a value known only at run time) is the one the
    // input's known element count gives.
    const Shape& in = c.in[0].shape();
    int64_t known = 1;
    for (int64_t d : out) known *= d < 0 ? 1 : d;
    if (std::count(out.begin(), out.end(), -1) == 1 && std::count(in.begin(), in.end(), -1) == 0 &&
        in.num_elements() > 0 && known > 0)
      out = resolve_reshape(c, in, std::vector<int64_t>(out.begin(), out.end()));
  }
  c.add_output(c.in[0].dtype(), out);
}

void infer_transpose(OpCall& c) {
  need_int_vector(c, 1, "perm");
  const Shape& in = c.in[0].shape();
  Shape out;
  if (!c.has_value(1)) {
    out.resize(in.rank(), -1);
  } else {
    auto perm = c.in[1].to_int64s();
    if (static_cast<int>(perm.size()) != in.rank())
      c.fail("transpose expects a vector of size ", in.rank(), ". But input(1) is a vector of size ",
             perm.size());
    std::vector<bool> seen(in.rank(), false);
    for (int64_t p : perm) {
      if (p < 0) p += in.rank();  // TF accepts perm entries in [-rank, rank)
      if (p < 0 || p >= in.rank()) c.fail(p, " is out of range [0 .. ", in.rank(), ")");
      if (seen[p]) c.fail("perm is not a permutation of 0..", in.rank() - 1);
      seen[p] = true;
      out.push_back(in[p]);
    }
  }
  c.add_output(c.in[0].dtype(), out);
}

// ConcatV2(values..., axis) and Pack(values...; axis attr) share the checks.
static Shape concat_shape(OpCall& c, size_t n, int axis, bool stack) {
  const Shape& s0 = c.in[0].shape();
  for (size_t i = 1; i < n; ++i) {
    if (c.in[i].dtype() != c.in[0].dtype())
      c.fail("input #", i, " has dtype ", dtype_name(c.in[i].dtype()), ", expected ",
             dtype_name(c.in[0].dtype()));
    const Shape& si = c.in[i].shape();
    bool ok = si.rank() == s0.rank();
    for (int d = 0; ok && d < s0.rank(); ++d)
      if ((stack || d != axis) && si[d] != s0[d] && si[d] >= 0 && s0[d] >= 0) ok = false;
    if (!ok)
      c.fail(stack ? "Shapes of all inputs must match: values[0].shape = "
                   : "Dimension mismatch in concat: values[0].shape = ",
             s0.str(), " != values[", i, "].shape = ", si.str());
  }
  Shape out = s0;
  if (stack) {
    out.insert(axis, static_cast<int64_t>(n));
  } else {
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      int64_t d = c.in[i].shape()[axis];
      total = (total < 0 || d < 0) ? -1 : total + d;
    }
    out[axis] = total;
  }
  return out;
}

void infer_concat(OpCall& c) {
  if (c.in.size() < 2) c.fail("needs at least one value and an axis");
  size_t n = c.in.size() - 1;
  if (!c.has_value(n)) c.fail("the concat axis must be known when tracing");
  if (c.in[0].rank() == 0) c.fail("Can't concatenate scalars (use jf.stack instead)");
  int axis = normalize_axis(c.in[n].get_int(0), c.in[0].rank(), c.name());
  c.add_output(c.in[0].dtype(), concat_shape(c, n, axis, false));
}

void infer_pack(OpCall& c) {
  if (c.in.empty()) c.fail("needs at least one value");
  int axis = normalize_axis(c.attrs.get<int64_t>("axis", 0), c.in[0].rank() + 1, c.name());
  c.add_output(c.in[0].dtype(), concat_shape(c, c.in.size(), axis, true));
}

void infer_split(OpCall& c) {  // inputs: axis, value
  int64_t num = c.attrs.get<int64_t>("num_split", 1);
  const Shape& in = c.in[1].shape();
  if (!c.has_value(0)) c.fail("the split axis must be known when tracing");
  if (in.rank() == 0)  // normalize_axis takes axis 0 of a scalar (for Pack); Split cannot
    c.fail("-input rank(-0) <= split_dim < input rank (0), but got ", c.in[0].get_int(0));
  int axis = normalize_axis(c.in[0].get_int(0), in.rank(), c.name());
  if (num <= 0) c.fail("num_split must be positive, got ", num);
  // Each output costs its spec, tensor and buffer: 2**62 outputs of an empty dim hung building
  // them. TF refuses counts past int32 ("Number of outputs is too big").
  if (num > INT32_MAX) c.fail("Number of outputs is too big: ", num);
  if (static_cast<uint64_t>(num) * 1024 > max_allocation_bytes())
    throw_resource_exhausted(c.name(), ": ", num,
                             " outputs cannot be made (about 1 KiB each, more than this ",
                             "machine's memory)");
  if (in[axis] >= 0 && in[axis] % num != 0)
    c.fail("Number of ways to split should evenly divide the split dimension, but got split_dim ", axis,
           " (size = ", in[axis], ") and num_split ", num);
  Shape out = in;
  if (in[axis] >= 0) out[axis] = in[axis] / num;
  for (int64_t i = 0; i < num; ++i) c.add_output(c.in[1].dtype(), out);
}

void infer_splitv(OpCall& c) {  // inputs: value, size_splits, axis
  const Shape& in = c.in[0].shape();
  if (!c.has_value(1) || !c.has_value(2)) c.fail("split sizes and axis must be known when tracing");
  int axis = normalize_axis(c.in[2].get_int(0), in.rank(), c.name());
  auto sizes = c.in[1].to_int64s();
  int64_t total = 0, unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && unknown < 0)
      unknown = i;
    else if (sizes[i] < 0)
      c.fail("invalid split size ", sizes[i]);
    else
      total += sizes[i];
  }
  if (unknown >= 0 && in[axis] >= 0) sizes[unknown] = in[axis] - total, total = in[axis];
  if (in[axis] >= 0 && (total != in[axis] || (unknown >= 0 && sizes[unknown] < 0)))
    c.fail(
        "Determined shape must either match input shape along split_dim exactly if fully "
        "specified, or be less than the size of the input along split_dim if not fully specified. "
        "Got: ",
        total, " vs ", in[axis]);
  for (int64_t s : sizes) {
    Shape out = in;
    out[axis] = s;
    c.add_output(c.in[0].dtype(), out);
  }
}

void infer_squeeze(OpCall& c) {
  const Shape& in = c.in[0].shape();
  auto dims = c.attrs.get<std::vector<int64_t>>("squeeze_dims", {});
  std::vector<bool> drop(in.rank(), false);
  if (dims.empty()) {
    // Every dim of size 1 goes: with a dim unknown, so is the output's rank. TF's graph then
    // has a tensor of unknown rank, which jitflow has not; keeping the unknown dim gave a
    // tensor of the wrong rank (a 1x3x1 input came out 3x0x0 when compiled).
    for (int i = 0; i < in.rank(); ++i)
      if (in[i] < 0)
        c.fail("squeeze without an axis needs every dim known when tracing: dim ", i, " of ", in.str(),
               " is unknown, so the output's rank is known only at run time (jitflow has no tensors of "
               "unknown rank); pass axis= the dims to squeeze, or give the dims their sizes in the "
               "input_signature");
    for (int i = 0; i < in.rank(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t d : dims) {
      int a = normalize_axis(d, in.rank(), c.name());
      if (in[a] != 1 && in[a] >= 0)
        c.fail("Can not squeeze dim[", a, "], expected a dimension of 1, got ", in[a]);
      drop[a] = true;
    }
  }
  Shape out;
  for (int i = 0; i < in.rank(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  c.add_output(c.in[0].dtype(), out);
}

void infer_expand_dims(OpCall& c) {
  if (!c.has_value(1)) c.fail("dim must be known when tracing");
  if (c.in[1].num_elements() != 1) c.fail("dim must be a scalar");
  Shape out = c.in[0].shape();
  int r = out.rank();
  int64_t d = c.in[1].get_int(0);
  if (d < -r - 1 || d > r) c.fail("Tried to expand dim index ", d, " for tensor with ", r, " dimensions.");
  out.insert(static_cast<int>(d < 0 ? d + r + 1 : d), 1);
  c.add_output(c.in[0].dtype(), out);
}

void infer_broadcast_to(OpCall& c) {
  need_int_vector(c, 1, "shape");
  const Shape& in = c.in[0].shape();
  if (!c.has_value(1)) {
    // A target computed at run time: its length is the rank; a dim the input has (known and
    // not 1) is the output's too, any other is unknown until the kernel checks the target.
    Shape out;
    out.resize(traced_rank(c, 1, "shape"), -1);
    apply_partial(c, 1, &out);
    if (in.rank() > out.rank())
      c.fail("Unable to broadcast tensor of shape ", in.str(), " to a tensor of rank ", out.rank());
    for (int i = 1; i <= in.rank(); ++i)
      if (in[in.rank() - i] > 1) out[out.rank() - i] = in[in.rank() - i];
    c.add_output(c.in[0].dtype(), out);
    return;
  }
  Shape target(c.in[1].to_int64s()), b;
  if (in.rank() > target.rank() || !broadcast_shapes(in, target, &b) || b != target)
    c.fail("Unable to broadcast tensor of shape ", in.str(), " to tensor of shape ", target.str());
  c.add_output(c.in[0].dtype(), target);
}

SlicePlan strided_slice_plan(const OpCall& c, const Shape& in, const std::vector<int64_t>& begin,
                             const std::vector<int64_t>& end, const std::vector<int64_t>& strides) {
  int64_t bm = c.attrs.get<int64_t>("begin_mask", 0), em = c.attrs.get<int64_t>("end_mask", 0);
  int64_t elm = c.attrs.get<int64_t>("ellipsis_mask", 0), nam = c.attrs.get<int64_t>("new_axis_mask", 0);
  int64_t sam = c.attrs.get<int64_t>("shrink_axis_mask", 0);
  size_t n = begin.size();
  if (end.size() != n || strides.size() != n) c.fail("begin, end and strides must have the same length");
  if (n > 62) c.fail("too many slice bounds (", n, ") for a tensor of shape ", in.str());  // 64-bit masks
  int consumed = 0;
  for (size_t i = 0; i < n; ++i)
    if (!((elm >> i) & 1) && !((nam >> i) & 1)) ++consumed;
  SlicePlan plan;
  int dim = 0;
  bool saw_ellipsis = false;
  auto full = [&](int d) {
    plan.dims.push_back({0, 1, in[d]});
    plan.out_of_in.push_back(plan.out.rank());
    plan.out.push_back(in[d]);
  };
  for (size_t i = 0; i < n; ++i) {
    if ((elm >> i) & 1) {
      if (saw_ellipsis) c.fail("multiple ellipses in slice spec not allowed");
      saw_ellipsis = true;
      int cover = in.rank() - consumed;
      for (int k = 0; k < cover; ++k) full(dim++);
      continue;
    }
    if ((nam >> i) & 1) {
      plan.out.push_back(1);
      continue;
    }
    if (dim >= in.rank())
      c.fail("Index out of range using input dim ", dim, " of a tensor of shape ", in.str());
    int64_t d = in[dim], s = strides[i];
    if (s == 0) c.fail("strides[", i, "] must be non-zero");
    if ((sam >> i) & 1) {
      int64_t idx = begin[i] < 0 ? begin[i] + d : begin[i];
      if (d >= 0 && (idx < 0 || idx >= d))
        c.fail("slice index ", begin[i], " of dimension ", dim, " out of bounds.");
      plan.dims.push_back({idx, 1, 1});
      plan.out_of_in.push_back(-1);
      ++dim;
      continue;
    }
    int64_t b, e, len;
    if (d < 0) {
      plan.dims.push_back({0, s, -1});
      plan.out_of_in.push_back(plan.out.rank());
      plan.out.push_back(-1);
      ++dim;
      continue;
    }
    // Written so that no stride (up to +-2**63) overflows: ceil(span / |s|) as (span - 1) / |s| + 1.
    if (s > 0) {
      b = ((bm >> i) & 1) ? 0 : std::clamp<int64_t>(begin[i] < 0 ? begin[i] + d : begin[i], 0, d);
      e = ((em >> i) & 1) ? d : std::clamp<int64_t>(end[i] < 0 ? end[i] + d : end[i], 0, d);
      len = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = ((bm >> i) & 1) ? d - 1 : std::clamp<int64_t>(begin[i] < 0 ? begin[i] + d : begin[i], -1, d - 1);
      e = ((em >> i) & 1) ? -1 : std::clamp<int64_t>(end[i] < 0 ? end[i] + d : end[i], -1, d - 1);
      len = b > e
                ? static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / (0 - static_cast<uint64_t>(s)) + 1)
                : 0;
    }
    plan.dims.push_back({b, len > 1 ? s : 1, len});  // one element: the stride is never applied
    plan.out_of_in.push_back(plan.out.rank());
    plan.out.push_back(len);
    ++dim;
  }
  while (dim < in.rank()) full(dim++);
  return plan;
}

// The output shape when begin, end or strides are computed in the graph (x[i] for a traced
// tensor i): the masks alone give the rank, shrunk and new axes; a sliced dim is unknown.
static Shape strided_slice_shape_from_masks(const OpCall& c, const Shape& in) {
  int64_t n = c.in[1].shape()[0];
  for (int i = 2; i < 4; ++i)
    if (c.in[i].shape()[0] != n && n >= 0 && c.in[i].shape()[0] >= 0)
      c.fail("begin, end and strides must have the same length");
  if (n < 0) c.fail("the number of slice bounds must be known when tracing");
  if (n > 62) c.fail("too many slice bounds (", n, ")");
  int64_t elm = c.attrs.get<int64_t>("ellipsis_mask", 0), nam = c.attrs.get<int64_t>("new_axis_mask", 0);
  int64_t sam = c.attrs.get<int64_t>("shrink_axis_mask", 0);
  int consumed = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!((elm >> i) & 1) && !((nam >> i) & 1)) ++consumed;
  Shape out;
  int dim = 0;
  bool saw_ellipsis = false;
  for (int64_t i = 0; i < n; ++i) {
    if ((elm >> i) & 1) {
      if (saw_ellipsis) c.fail("multiple ellipses in slice spec not allowed");
      saw_ellipsis = true;
      for (int k = in.rank() - consumed; k > 0; --k) out.push_back(in[dim++]);
    } else if ((nam >> i) & 1) {
      out.push_back(1);
    } else {
      if (dim >= in.rank())
        c.fail("Index out of range using input dim ", dim, " of a tensor of shape ", in.str());
      if (!((sam >> i) & 1)) out.push_back(-1);
      ++dim;
    }
  }
  while (dim < in.rank()) out.push_back(in[dim++]);
  return out;
}

void infer_strided_slice(OpCall& c) {
  bool known = true;
  for (size_t i = 1; i < 4; ++i) {
    need_int_vector(c, i, "begin/end/strides");
    known &= c.has_value(i);
  }
  if (!known) {
    c.add_output(c.in[0].dtype(), strided_slice_shape_from_masks(c, c.in[0].shape()));
    return;
  }
  SlicePlan p =
      strided_slice_plan(c, c.in[0].shape(), c.in[1].to_int64s(), c.in[2].to_int64s(), c.in[3].to_int64s());
  c.add_output(c.in[0].dtype(), p.out);
}

// TF's attr check: an index/shape output type must be one of the allowed integer dtypes.
void need_index_type(const OpCall& c, const char* attr, DType t) {
  if (t != DType::kInt32 && t != DType::kInt64)
    c.fail("Value for attr '", attr, "' of ", dtype_name(t),
           " is not in the list of allowed values: int32, int64");
}

// A dim past int32 cannot be reported in an int32 shape (TF's Shape kernel check).
void check_dims_fit(const OpCall& c, const Shape& s, DType t) {
  if (t != DType::kInt32) return;
  for (int i = 0; i < s.rank(); ++i)
    if (s[i] > INT32_MAX) c.fail("Shape output type is 32-bit but dim ", i, " is ", s[i]);
}

void infer_shape_op(OpCall& c) {
  DType t = c.attrs.get<DType>("out_type", DType::kInt32);
  need_index_type(c, "out_type", t);
  check_dims_fit(c, c.in[0].shape(), t);
  c.add_output(t, Shape{c.in[0].rank()});
}

void infer_fill(OpCall& c) {
  need_int_vector(c, 0, "dims");
  if (c.in[1].rank() != 0) c.fail("value must be a scalar, got shape ", c.in[1].shape().str());
  Shape out;
  if (c.has_value(0)) {
    for (int64_t d : c.in[0].to_int64s()) {
      if (d < 0) c.fail("dims must be non-negative, got ", d);
      out.push_back(d);
    }
  } else {
    out.resize(traced_rank(c, 0, "dims"), -1);
    apply_partial(c, 0, &out);
  }
  c.add_output(c.in[1].dtype(), out);
}

void infer_range(OpCall& c) {
  for (int i = 0; i < 3; ++i) {
    if (c.in[i].rank() != 0) c.fail("start, limit and delta must be scalars");
    if (c.in[i].dtype() != c.in[0].dtype()) c.fail("start, limit and delta must have the same dtype");
  }
  if (!c.claims(c.in[0].dtype())) c.fail_type("expected numeric start, limit, delta");
  int64_t n = -1;
  if (c.has_value(0) && c.has_value(1) && c.has_value(2)) {
    const char* too_long = "Requires ((limit - start) / delta) <= 9223372036854775807";
    if (is_int(c.in[0].dtype())) {
      // Exact in 64 bits: the span and |delta| as unsigned (no int64 or double overflow).
      int64_t s = c.in[0].get_int(0), l = c.in[1].get_int(0), d = c.in[2].get_int(0);
      if (d == 0) c.fail("Requires delta != 0");
      if (d > 0 && s > l) c.fail("Requires start <= limit when delta > 0: ", s, "/", l);
      if (d < 0 && s < l) c.fail("Requires start >= limit when delta < 0: ", s, "/", l);
      uint64_t span = d > 0 ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                            : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
      uint64_t ad = d > 0 ? static_cast<uint64_t>(d) : 0 - static_cast<uint64_t>(d);
      uint64_t count = span == 0 ? 0 : (span - 1) / ad + 1;
      if (count > static_cast<uint64_t>(INT64_MAX)) c.fail(too_long);
      n = static_cast<int64_t>(count);
    } else {
      double s = c.in[0].get_double(0), l = c.in[1].get_double(0), d = c.in[2].get_double(0);
      if (d == 0) c.fail("Requires delta != 0");
      if (d > 0 && !(s <= l)) c.fail("Requires start <= limit when delta > 0: ", s, "/", l);
      if (d < 0 && !(s >= l)) c.fail("Requires start >= limit when delta < 0: ", s, "/", l);
      // TF computes the count in the dtype: a half type rounds the span and the quotient.
      const DType dt = c.in[0].dtype();
      auto in_dtype = [dt](double v) {
        if (dt == DType::kFloat16)
          return static_cast<double>(static_cast<float>(Eigen::half(static_cast<float>(v))));
        if (dt == DType::kBFloat16)
          return static_cast<double>(static_cast<float>(Eigen::bfloat16(static_cast<float>(v))));
        return v;
      };
      double q = dt == DType::kFloat64 || dt == DType::kFloat32
                     ? std::ceil(std::abs((l - s) / d))
                     : std::ceil(std::abs(in_dtype(in_dtype(l - s) / d)));
      if (!(q < 9223372036854775808.0)) c.fail(too_long);  // NaN and inf included
      n = static_cast<int64_t>(q);
    }
  }
  c.add_output(c.in[0].dtype(), Shape{n});
}

void infer_random(OpCall& c) {
  need_int_vector(c, 0, "shape");
  DType dt = c.attrs.get<DType>("dtype", DType::kFloat32);
  if (!c.claims(dt)) c.fail_type("dtype must be a float type, got ", dtype_name(dt));  // no data input
  Shape out;
  if (c.has_value(0)) {
    for (int64_t d : c.in[0].to_int64s()) {
      if (d < 0) c.fail("shape must be non-negative, got ", d);
      out.push_back(d);
    }
  } else {
    out.resize(traced_rank(c, 0, "shape"), -1);
    apply_partial(c, 0, &out);
  }
  c.add_output(dt, out);
}

}  // namespace jf
