// Shape and dtype inference for convolutions, bias adds and pooling: TF's window arithmetic
// (GetWindowedOutputSize: SAME, VALID and explicit padding, strides, dilations) and TF's
// errors for bad ranks, depths, strides and paddings.
#include <algorithm>

#include "ir/conv_geom.h"
#include "ir/shape_fns.h"

namespace jf {

Shape ConvGeom::layout_shape(int64_t n, int64_t c, const int64_t* s) const {
  Shape r;
  r.push_back(n);
  if (channels_first) r.push_back(c);
  for (int i = 0; i < sp; ++i) r.push_back(s[i]);
  if (!channels_first) r.push_back(c);
  return r;
}

namespace {

std::vector<int64_t> int_list(const OpCall& c, const char* name) {
  const AttrValue* v = c.attrs.find(name);
  if (!v) return {};
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  c.fail("attr '", name, "' must be a list of ints");
}

bool channels_first(const OpCall& c, int sp) {
  const std::string df = c.attrs.get<std::string>("data_format", sp == 2 ? "NHWC" : "NDHWC");
  if (df == (sp == 2 ? "NHWC" : "NDHWC")) return false;
  if (df == (sp == 2 ? "NCHW" : "NCDHW")) return true;
  c.fail("Invalid data format: ", df);
}

enum class Pad { kSame, kValid, kExplicit };
Pad padding(const OpCall& c, bool explicit_ok) {
  const std::string p = c.attrs.get<std::string>("padding", "");
  if (p == "SAME") return Pad::kSame;
  if (p == "VALID") return Pad::kValid;
  if (p == "EXPLICIT" && explicit_ok) return Pad::kExplicit;
  c.fail("Value for attr 'padding' of \"", p, "\" is not in the list of allowed values: \"SAME\", \"VALID\"",
         explicit_ok ? ", \"EXPLICIT\"" : "");
}

// A 4- (5-) element attr in the layout's order: batch and channel entries must be 1.
void spatial_attr(const OpCall& c, ConvGeom& g, const char* name, const char* what, int64_t dflt,
                  int64_t* dst) {
  std::vector<int64_t> v = int_list(c, name);
  if (v.empty()) v.assign(g.sp + 2, dflt);
  if (static_cast<int>(v.size()) != g.sp + 2)
    c.fail("Sliding window ", what, " field must specify ", g.sp + 2, " dimensions");
  if (v[g.batch_dim()] != 1 || v[g.channel_dim()] != 1) {
    if (std::string(what) == "ksize")
      throw_unimplemented(c.name(), ": Pooling is not yet supported on the batch or depth dimension (ksize ",
                          v[g.batch_dim()], ", ", v[g.channel_dim()], ").");
    throw_unimplemented(c.name(), ": Current implementation does not yet support ", what,
                        " in the batch and depth dimensions.");
  }
  for (int i = 0; i < g.sp; ++i) {
    dst[i] = v[g.spatial_dim(i)];
    if (dst[i] < 1) {
      if (std::string(what) == "dilations") c.fail("Dilation rate must be >= 1, but got ", dst[i]);
      if (std::string(what) == "ksize")
        c.fail("Sliding window ksize for dimension ", g.spatial_dim(i), " was zero.");
      c.fail("Stride must be > 0, but got ", dst[i]);
    }
  }
}

void explicit_pads(const OpCall& c, ConvGeom& g) {
  std::vector<int64_t> p = int_list(c, "explicit_paddings");
  if (static_cast<int>(p.size()) != 2 * (g.sp + 2))
    c.fail("explicit_paddings attribute must contain ", 2 * (g.sp + 2), " values, but got: ", p.size());
  for (int64_t v : p)
    if (v < 0) c.fail("All elements of explicit_paddings must be nonnegative");
  const int b = g.batch_dim(), ch = g.channel_dim();
  if (p[2 * b] || p[2 * b + 1] || p[2 * ch] || p[2 * ch + 1])
    c.fail("Nonzero explicit padding in the batch or depth dimensions is not supported");
  for (int i = 0; i < g.sp; ++i) {
    g.pad_lo[i] = p[2 * g.spatial_dim(i)];
    g.pad_hi[i] = p[2 * g.spatial_dim(i) + 1];
  }
}

// TF's GetWindowedOutputSize for every spatial dim (unknown input dims give unknown outputs).
void window(const OpCall& c, ConvGeom& g, Pad pad) {
  for (int i = 0; i < g.sp; ++i) {
    const int64_t in = g.in[i], s = g.stride[i], eff = (g.k[i] - 1) * g.dil[i] + 1;
    if (pad != Pad::kExplicit) g.pad_lo[i] = g.pad_hi[i] = 0;
    if (in < 0 || g.k[i] < 0) {
      g.out[i] = -1;
      continue;
    }
    int64_t out = 0;
    if (pad == Pad::kValid) {
      out = (in - eff + s) / s;
    } else if (pad == Pad::kExplicit) {
      out = (in + g.pad_lo[i] + g.pad_hi[i] - eff + s) / s;
    } else {
      out = (in + s - 1) / s;
      const int64_t need = std::max<int64_t>(0, (out - 1) * s + eff - in);
      g.pad_lo[i] = need / 2;
      g.pad_hi[i] = need - need / 2;
    }
    if (out < 0)
      c.fail("Computed output size would be negative: ", out, " [input_size: ", in,
             ", effective_filter_size: ", eff, ", stride: ", s, "]");
    g.out[i] = out;
  }
}

void need_rank(const OpCall& c, const Shape& s, int r, const char* what) {
  if (s.rank() != r) c.fail(what, " must be ", r, "-dimensional: ", s.str());
}

// input_sizes / filter_sizes of a backprop op: the shape it names, or unknown dims of `rank`.
Shape sizes_input(const OpCall& c, size_t i, const char* what) {
  const Tensor& t = c.in[i];
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    c.fail_type(what, " must be int32 or int64, got ", dtype_name(t.dtype()));
  if (t.rank() != 1) c.fail(what, " must be 1-dimensional, got shape ", t.shape().str());
  if (!c.has_value(i)) return Shape{};
  return Shape(t.to_int64s());
}

}  // namespace

static int spatial_dims(OpId op) {
  switch (op) {
    case OpId::Conv3D:
    case OpId::FusedConv3D:
    case OpId::Conv3DBackpropInputV2:
    case OpId::Conv3DBackpropFilterV2:
    case OpId::MaxPool3D:
    case OpId::AvgPool3D:
    case OpId::MaxPool3DGrad:
    case OpId::MaxPool3DGradGrad:
    case OpId::AvgPool3DGrad:
      return 3;
    default:
      return 2;
  }
}

bool is_depthwise(OpId op) {
  return op == OpId::DepthwiseConv2dNative || op == OpId::FusedDepthwiseConv2dNative ||
         op == OpId::DepthwiseConv2dNativeBackpropInput || op == OpId::DepthwiseConv2dNativeBackpropFilter;
}

ConvGeom conv_geom(const OpCall& c, const Shape& input, const Shape& filter) {
  ConvGeom g;
  g.sp = spatial_dims(c.def->id);
  const int r = g.sp + 2;
  const bool dw = is_depthwise(c.def->id);
  if (dw) {
    if (input.rank() != 4) c.fail("input must be 4-dimensional", input.str());
    if (filter.rank() != 4) c.fail("filter must be 4-dimensional: ", filter.str());
  } else {
    need_rank(c, input, r, "convolution input");
    need_rank(c, filter, r, "convolution filter");
  }
  g.channels_first = channels_first(c, g.sp);
  const Pad pad = padding(c, true);
  spatial_attr(c, g, "strides", "strides", 1, g.stride);
  spatial_attr(c, g, "dilations", "dilations", 1, g.dil);
  if (pad == Pad::kExplicit) explicit_pads(c, g);
  g.batch = input[g.batch_dim()];
  g.c_in = input[g.channel_dim()];
  for (int i = 0; i < g.sp; ++i) {
    g.in[i] = input[g.spatial_dim(i)];
    g.k[i] = filter[i];
  }
  const int64_t fin = filter[g.sp];
  if (dw) {
    if (g.c_in >= 0 && fin >= 0 && g.c_in != fin)
      c.fail("input and filter must have the same depth: ", g.c_in, " vs ", fin);
    if (g.c_in < 0) g.c_in = fin;
    g.groups = g.c_in;
    g.c_out = g.c_in >= 0 && filter[3] >= 0 ? g.c_in * filter[3] : -1;
  } else {
    g.c_out = filter[g.sp + 1];
    // A filter depth dividing the input's makes a grouped convolution: group i convolves input
    // channels [i * fin, (i + 1) * fin) into its share of the output channels.
    if (g.c_in >= 0 && fin >= 0 && g.c_in != fin) {
      if (fin == 0 || g.c_in % fin != 0)
        c.fail("input depth must be evenly divisible by filter depth: ", g.c_in, " vs ", fin);
      g.groups = g.c_in / fin;
      if (g.c_out >= 0 && g.c_out % g.groups != 0)
        c.fail("output depth must be evenly divisible by number of groups: ", g.c_out, " vs ", g.groups);
    }
  }
  window(c, g, pad);
  return g;
}

ConvGeom pool_geom(const OpCall& c, const Shape& input) {
  ConvGeom g;
  g.sp = spatial_dims(c.def->id);
  g.channels_first = channels_first(c, g.sp);
  if (input.rank() != g.sp + 2) c.fail("input must be ", g.sp + 2, "-dimensional: ", input.str());
  const OpId id = c.def->id;
  const Pad pad = padding(c, id == OpId::MaxPool || id == OpId::MaxPoolGrad || id == OpId::MaxPoolGradGrad);
  spatial_attr(c, g, "ksize", "ksize", 0, g.k);
  spatial_attr(c, g, "strides", "strides", 0, g.stride);
  for (int i = 0; i < g.sp; ++i) {
    g.dil[i] = 1;
    g.in[i] = input[g.spatial_dim(i)];
  }
  if (pad == Pad::kExplicit) {
    explicit_pads(c, g);
    // TF's check: a window of only padding would have no maximum.
    const char* side[2][2] = {{"Top", "Bottom"}, {"Left", "Right"}};
    for (int i = 0; i < 2; ++i)
      for (int hi = 0; hi < 2; ++hi)
        if ((hi ? g.pad_hi[i] : g.pad_lo[i]) >= g.k[i])
          c.fail(side[i][hi], " padding ", hi ? g.pad_hi[i] : g.pad_lo[i],
                 " needs to be smaller than the window size ", g.k[i]);
  }
  g.batch = input[g.batch_dim()];
  g.c_in = g.c_out = input[g.channel_dim()];
  window(c, g, pad);
  return g;
}

static void conv_dtypes(OpCall& c, size_t a, size_t b) {
  c.check_claimed(a);
  if (c.in[b].dtype() != c.in[a].dtype())
    c.fail("input #", b, " was expected to be a ", dtype_name(c.in[a].dtype()), " tensor but is a ",
           dtype_name(c.in[b].dtype()), " tensor");
}

// Conv2D and DepthwiseConv2dNative (and their backprops below): conv_geom tells them apart.
void infer_conv2d(OpCall& c) {
  conv_dtypes(c, 0, 1);
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.in[1].shape());
  c.add_output(c.in[0].dtype(), g.output_shape());
}

static bool is_fused_transposed(OpId op) { return op == OpId::FusedConv2DBackpropInput; }

ConvPostOps conv_post_ops(const OpCall& c) {
  ConvPostOps p;
  if (const AttrValue* v = c.attrs.find("fused_ops"))
    if (auto* l = std::get_if<std::vector<std::string>>(v)) p.ops = *l;
  p.alpha = c.attrs.get<double>("leakyrelu_alpha", 0.2);
  int next = is_fused_transposed(c.def->id) ? 3 : 2, activations = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const std::string& o = p.ops[i];
    int arg = -1;
    if (o == "BiasAdd" && i == 0) {
      p.bias = arg = next++;
    } else if (o == "Add" && p.residual < 0) {
      p.residual = arg = next++;
    } else if (o == "MulChannel" || o == "AddChannel" || o == "SubChannel") {
      arg = next++;
    } else if ((o == "Relu" || o == "Elu" || o == "Sigmoid" || o == "Tanh" || o == "LeakyRelu") &&
               activations++ == 0) {
    } else {
      c.fail("unsupported fused_ops entry '", o, "' at ", i);
    }
    p.input.push_back(arg);
  }
  if (p.ops.empty()) c.fail("fused_ops must name at least one op");
  if (p.ops.size() > 8) c.fail("at most 8 fused_ops, got ", p.ops.size());
  if (static_cast<int>(c.in.size()) != next)
    c.fail("expected ", next, " inputs for fused_ops, got ", c.in.size());
  return p;
}

void infer_conv2d_backprop_input(OpCall& c);

// A fused convolution (input, filter, [post-op inputs]; the transposed one input_sizes, filter,
// out_backprop, [...]): its convolution's output; a bias or channel vector holds one value per
// output channel, the residual has the output's shape.
void infer_fused_conv2d(OpCall& c) {
  const bool tr = is_fused_transposed(c.def->id);
  const size_t first = tr ? 3 : 2;
  if (c.in.size() < first) c.fail("expected at least ", first, " inputs, got ", c.in.size());
  const ConvPostOps p = conv_post_ops(c);
  for (size_t i = first; i < c.in.size(); ++i) conv_dtypes(c, tr ? 2 : 0, i);
  Shape out;
  int64_t channels;
  bool cf;
  if (tr) {
    infer_conv2d_backprop_input(c);
    out = c.out[0].shape;
    cf = channels_first(c, 2);
    channels = out.rank() == 4 ? out[cf ? 1 : 3] : -1;
  } else {
    conv_dtypes(c, 0, 1);
    ConvGeom g = conv_geom(c, c.in[0].shape(), c.in[1].shape());
    out = g.output_shape();
    channels = g.c_out;
    cf = g.channels_first;
    c.add_output(c.in[0].dtype(), out);
  }
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.input[i] < 0) continue;
    const Shape& s = c.in[p.input[i]].shape();
    if (p.ops[i] == "Add") {
      bool ok = s.rank() == out.rank();
      for (int d = 0; ok && d < out.rank(); ++d) ok = s[d] < 0 || out[d] < 0 || s[d] == out[d];
      if (!ok) c.fail("the residual's shape ", s.str(), " is not the output's ", out.str());
      continue;
    }
    // One value per channel: a vector, or (channel ops) any shape whose only non-1 dim is the
    // channel's, aligned with the output's dims from the right.
    const bool vec = p.ops[i] == "BiasAdd" || (!cf && s.rank() == 1);
    bool ok = vec ? s.rank() == 1 : s.rank() <= out.rank();
    int64_t n = -1;
    for (int d = 0; ok && d < s.rank(); ++d) {
      const int od = out.rank() - s.rank() + d;
      const bool is_channel = vec || od == (cf ? 1 : out.rank() - 1);
      if (is_channel)
        n = s[d];
      else
        ok = s[d] == 1;
    }
    ok = ok && (n < 0 || channels < 0 || n == channels);
    if (!ok)
      c.fail(p.ops[i] == "BiasAdd" ? "bias" : p.ops[i], " must hold one value per output channel (", channels,
             "): ", s.str());
  }
}

// The geometry of a backprop op, checked against its out_backprop as TF's
// ConvBackpropComputeDimensions: batch, depths and every spatial size must agree.
static ConvGeom backprop_geom(OpCall& c, const char* kind, const Shape& input, const Shape& filter,
                              const Shape& grad) {
  need_rank(c, grad, spatial_dims(c.def->id) + 2, "out_backprop");
  ConvGeom g = conv_geom(c, input, filter);
  auto known = [](int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; };
  if (known(g.batch, grad[g.batch_dim()]))
    c.fail(kind, ": input and out_backprop must have the same batch size, got ", g.batch, " and ",
           grad[g.batch_dim()]);
  if (known(g.c_out, grad[g.channel_dim()]))
    c.fail(kind, ": filter and out_backprop must have the same out_depth");
  for (int i = 0; i < g.sp; ++i)
    if (known(g.out[i], grad[g.spatial_dim(i)]))
      c.fail(kind, ": Size of out_backprop doesn't match computed: actual = ", grad[g.spatial_dim(i)],
             ", computed = ", g.out[i], " spatial_dim: ", g.spatial_dim(i), " input: ", g.in[i],
             " filter: ", g.k[i], " output: ", grad[g.spatial_dim(i)], " stride: ", g.stride[i],
             " dilation: ", g.dil[i]);
  return g;
}

void infer_conv2d_backprop_input(OpCall& c) {
  conv_dtypes(c, 1, 2);
  const int sp = spatial_dims(c.def->id), r = sp + 2;
  const Shape& filter = c.in[1].shape();
  const Shape& grad = c.in[2].shape();
  Shape sizes = sizes_input(c, 0, "input_sizes");
  need_rank(c, filter, r, "filter");
  need_rank(c, grad, r, "out_backprop");
  const bool cf = channels_first(c, sp);
  const int cd = cf ? 1 : r - 1;
  // The input's shape: batch from out_backprop, depth from the filter, spatial sizes from
  // input_sizes (TF's short form names only those) or unknown.
  Shape input;
  input.resize(r, -1);
  input[0] = grad[0];
  input[cd] = filter[sp];
  if (c.has_value(0) && sizes.rank() == sp && sp == 2) {
    for (int i = 0; i < sp; ++i) input[(cf ? 2 : 1) + i] = sizes[i];
  } else if (c.has_value(0)) {
    if (sizes.rank() != r)
      c.fail("input_sizes must have ", r, sp == 2 ? " or 2" : "", " elements, got ", sizes.rank());
    const bool dw = is_depthwise(c.def->id);
    if (sizes[cd] >= 0 && filter[sp] > 0 && (dw ? sizes[cd] != filter[sp] : sizes[cd] % filter[sp] != 0))
      c.fail(dw ? "input and filter must have the same depth"
                : "Conv2DCustomBackpropInput: input depth must be evenly divisible by filter depth");
    input = sizes;
  }
  ConvGeom g =
      backprop_geom(c, is_depthwise(c.def->id) ? "DepthwiseConv2DBackpropInput" : "Conv2DCustomBackpropInput",
                    input, filter, grad);
  c.add_output(c.in[1].dtype(), g.input_shape());
}

void infer_conv2d_backprop_filter(OpCall& c) {
  conv_dtypes(c, 0, 2);
  Shape sizes = sizes_input(c, 1, "filter_sizes");
  const int r = spatial_dims(c.def->id) + 2;
  Shape filter;
  filter.resize(r, -1);
  if (c.has_value(1)) {
    if (sizes.rank() != r) c.fail("filter_sizes must have ", r, " elements, got ", sizes.rank());
    filter = sizes;
  }
  backprop_geom(c, is_depthwise(c.def->id) ? "DepthwiseConv2DBackpropFilter" : "Conv2DCustomBackpropFilter",
                c.in[0].shape(), filter, c.in[2].shape());
  c.add_output(c.in[0].dtype(), filter);
}

// BiasAdd's channel dim: the last, or NCHW's second (of a rank >= 3 value).
static int bias_channel(const OpCall& c, const Shape& v) {
  const std::string df = c.attrs.get<std::string>("data_format", "NHWC");
  if (df != "NHWC" && df != "NCHW") c.fail("Invalid data format: ", df);
  if (v.rank() < 2) c.fail("Input tensor must be at least 2D: ", v.str());
  return df == "NCHW" && v.rank() >= 3 ? 1 : v.rank() - 1;
}

void infer_bias_add(OpCall& c) {
  conv_dtypes(c, 0, 1);
  const Shape &v = c.in[0].shape(), &b = c.in[1].shape();
  const int ch = bias_channel(c, v);
  if (b.rank() != 1) c.fail("Biases must be 1D: ", b.str());
  if (v[ch] >= 0 && b[0] >= 0 && v[ch] != b[0])
    c.fail("Must provide as many biases as the ", ch == v.rank() - 1 ? "last" : "channel",
           " dimension of the input tensor: ", b.str(), " vs. ", v.str());
  c.add_output(c.in[0].dtype(), v);
}

void infer_bias_add_grad(OpCall& c) {
  c.check_claimed(0);
  const Shape& v = c.in[0].shape();
  c.add_output(c.in[0].dtype(), Shape{v[bias_channel(c, v)]});
}

void infer_pool(OpCall& c) {
  c.check_claimed(0);
  ConvGeom g = pool_geom(c, c.in[0].shape());
  c.add_output(c.in[0].dtype(), g.output_shape());
}

// The checks of MaxPoolGrad(orig_input, orig_output, grad) and MaxPoolGradGrad (`second`, whose
// grad is input-shaped): orig_output (and MaxPoolGrad's grad) must have the pooled shape,
// which it returns.
static Shape check_max_pool_grad(OpCall& c, bool second) {
  c.check_claimed(0);
  for (size_t i = 1; i < 3; ++i)
    if (c.in[i].dtype() != c.in[0].dtype())
      c.fail("input #", i, " was expected to be a ", dtype_name(c.in[0].dtype()), " tensor but is a ",
             dtype_name(c.in[i].dtype()), " tensor");
  ConvGeom g = pool_geom(c, c.in[0].shape());
  const Shape want = g.output_shape();
  for (size_t i = 1; i < 3; ++i) {
    if (i == 2 && second) continue;
    const Shape& s = c.in[i].shape();
    bool ok = s.rank() == want.rank();
    for (int d = 0; ok && d < want.rank(); ++d) ok = s[d] < 0 || want[d] < 0 || s[d] == want[d];
    if (!ok)
      c.fail(i == 1 ? "orig_output" : "grad", " shape ", s.str(), " does not match the pooled shape ",
             want.str());
  }
  return want;
}

// MaxPoolGrad: the input's shape.
void infer_max_pool_grad(OpCall& c) {
  check_max_pool_grad(c, false);
  c.add_output(c.in[0].dtype(), c.in[0].shape());
}

// MaxPoolGradGrad(orig_input, orig_output, grad): grad is the input's shape, the result the
// pooled one (grad read at each window's argmax).
void infer_max_pool_grad_grad(OpCall& c) {
  const Shape want = check_max_pool_grad(c, true);
  const Shape &in = c.in[0].shape(), &gr = c.in[2].shape();
  bool ok = gr.rank() == in.rank();
  for (int d = 0; ok && d < in.rank(); ++d) ok = gr[d] < 0 || in[d] < 0 || gr[d] == in[d];
  if (!ok) c.fail("grad shape ", gr.str(), " does not match the input shape ", in.str());
  c.add_output(c.in[0].dtype(), want);
}

// AvgPoolGrad(orig_input_shape, grad).
void infer_avg_pool_grad(OpCall& c) {
  c.check_claimed(1);
  Shape sizes = sizes_input(c, 0, "orig_input_shape");
  const Shape& grad = c.in[1].shape();
  const int sp = spatial_dims(c.def->id);
  if (!c.has_value(0)) {
    const bool cf = channels_first(c, sp);
    Shape out;
    out.resize(sp + 2, -1);
    if (grad.rank() == sp + 2) {
      out[0] = grad[0];
      out[cf ? 1 : sp + 1] = grad[cf ? 1 : sp + 1];
    }
    c.add_output(c.in[1].dtype(), out);
    return;
  }
  if (sizes.rank() != sp + 2) c.fail("orig_input_shape must have ", sp + 2, " elements, got ", sizes.rank());
  ConvGeom g = pool_geom(c, sizes);
  const Shape want = g.output_shape();
  bool ok = grad.rank() == want.rank();
  for (int d = 0; ok && d < want.rank(); ++d) ok = grad[d] < 0 || grad[d] == want[d];
  if (!ok) c.fail("grad shape ", grad.str(), " does not match the pooled shape ", want.str());
  c.add_output(c.in[1].dtype(), sizes);
}

}  // namespace jf
