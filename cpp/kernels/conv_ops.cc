// Eager convolutions (Conv2D and its input and filter gradients) and the bias add. float32 runs
// on oneDNN's primitives (forward, backward-data, backward-weights), each created once per
// shape signature and kept in a cache shared by all threads: creating one costs far more than
// a small convolution. oneDNN has no float64 or int32 convolutions, so those run on Eigen's
// GEMM, one per filter tap.
#include <omp.h>

#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/conv_geom.h"
#include "kernels/dispatch.h"
#include "kernels/dnnl_layout.h"
#include "kernels/kernels.h"
#include "support/stats.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using CMap = Eigen::Map<const RowMat<T>>;
template <class T>
using MMap = Eigen::Map<RowMat<T>>;

void zero(Tensor& t) {
  if (t.num_elements()) std::memset(t.raw(), 0, t.nbytes());
}

// ---- oneDNN (float32) -----------------------------------------------------------------------
// kTransposed: conv2d_transpose as a oneDNN deconvolution, which (unlike backward-data) takes
// a bias and post-ops; only fused transposes use it.
enum class ConvKind { kForward, kBackwardData, kBackwardWeights, kTransposed };

// One cached primitive: the convolution and, when oneDNN wants the filter in a blocked layout,
// the reorder between TF's HWIO filter and that layout.
struct DnnlConv {
  dnnl::primitive conv;
  dnnl::memory::desc act_in, act_out, user_w, prim_w, scratch, bias;
  std::vector<int> binary_post_ops;             // each binary post-op's index, in fused_ops order
  std::vector<dnnl::memory::desc> binary_desc;  // and its operand's
  bool reorder = false;
  dnnl::reorder w_reorder;
  // A forward in a chain of convolutions (kBlockedIn / kBlockedOut): the primitive reads and
  // writes oneDNN's blocked layout (prim_src, prim_dst); an end of the chain that is TF's
  // layout is reordered here, the only reorders the chain makes.
  dnnl::memory::desc prim_src, prim_dst;
  bool src_reorder = false, dst_reorder = false;
  dnnl::reorder to_prim_src, from_prim_dst;
};

// A forward's place in a chain of convolutions (passes/conv_layout.cc): its input, output or
// both in oneDNN's blocked layout instead of TF's.
constexpr int kBlockedIn = 1, kBlockedOut = 2;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A fused op's place in a primitive's cache key.
int64_t op_code(const std::string& o) {
  static const char* names[] = {"BiasAdd", "Add",       "Relu",       "Elu",        "Sigmoid",
                                "Tanh",    "LeakyRelu", "MulChannel", "AddChannel", "SubChannel"};
  for (int64_t i = 0; i < 10; ++i)
    if (o == names[i]) return i + 1;
  JF_CHECK(false, "FusedConv2D: no post-op for ", o);
  return 0;
}

std::vector<int64_t> cache_key(ConvKind k, const ConvGeom& g, const ConvPostOps* post, int layout) {
  std::vector<int64_t> key = {
      static_cast<int64_t>(k), g.channels_first, g.batch, g.c_in, g.c_out, g.groups, layout};
  for (int i = 0; i < g.sp; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.stride[i], g.dil[i], g.pad_lo[i], g.pad_hi[i]})
      key.push_back(v);
  if (post) {
    key.push_back(-1);
    for (const std::string& o : post->ops) key.push_back(op_code(o));
    double a = post->alpha;
    int64_t bits;
    std::memcpy(&bits, &a, sizeof(bits));
    key.push_back(bits);
  }
  return key;
}

// A forward convolution's post-ops (the fused convolutions): oneDNN's eltwise for the
// activation, binary ops for the residual (of dst's layout) and the per-channel vectors (dims
// 1 but the channel's, so oneDNN broadcasts them); the bias is the primitive's own input.
dnnl::post_ops make_post_ops(const ConvPostOps& post, const dnnl::memory::desc& dst, int64_t channels, int sp,
                             std::vector<int>* binary, std::vector<dnnl::memory::desc>* descs) {
  dnnl::post_ops po;
  using alg = dnnl::algorithm;
  dnnl::memory::dims cdims(sp + 2, 1);
  cdims[1] = channels;
  const dnnl::memory::desc per_channel(
      cdims, dnnl::memory::data_type::f32,
      sp == 3 ? dnnl::memory::format_tag::abcde : dnnl::memory::format_tag::abcd);
  for (const std::string& o : post.ops) {
    if (o == "Add" || o == "MulChannel" || o == "AddChannel" || o == "SubChannel") {
      binary->push_back(po.len());
      const alg a = o == "MulChannel"   ? alg::binary_mul
                    : o == "SubChannel" ? alg::binary_sub
                                        : alg::binary_add;
      descs->push_back(o == "Add" ? dst : per_channel);
      po.append_binary(a, descs->back());
    } else if (o == "Relu") {
      // oneDNN's relu (and clip) turn NaN into 0; TF's relu keeps it. An elu of alpha 0 is x
      // where x > 0 and 0 * (exp(x) - 1) elsewhere (NaN for NaN), and adding 0 makes its -0 a 0.
      po.append_eltwise(1.f, alg::eltwise_elu, 0.f, 0.f);
      po.append_eltwise(1.f, alg::eltwise_linear, 1.f, 0.f);
    } else if (o == "Elu") {
      po.append_eltwise(1.f, alg::eltwise_elu, 1.f, 0.f);
    } else if (o == "Sigmoid") {
      po.append_eltwise(1.f, alg::eltwise_logistic, 0.f, 0.f);
    } else if (o == "Tanh") {
      po.append_eltwise(1.f, alg::eltwise_tanh, 0.f, 0.f);
    } else if (o == "LeakyRelu") {
      po.append_eltwise(1.f, alg::eltwise_relu, static_cast<float>(post.alpha), 0.f);
    }
  }
  return po;
}

// oneDNN's preferred activation layout on this CPU for a convolution with `any` layouts,
// nChw16c or nChw8c (its block of channels), or 0 when it prefers TF's NHWC (AVX-512 cores'
// brgconv kernels do): asked once, of a typical 32-channel 3x3 convolution.
int64_t preferred_block() {
  static const int64_t block = [] {
    using dnnl::memory;
    try {
      const memory::dims src = {1, 32, 8, 8}, w = {32, 32, 3, 3};
      const auto f32 = memory::data_type::f32;
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          memory::desc(src, f32, memory::format_tag::any), memory::desc(w, f32, memory::format_tag::any),
          memory::desc(src, f32, memory::format_tag::any), {1, 1}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc pd(d, cpu_engine());
      if (pd.dst_desc() == memory::desc(src, f32, memory::format_tag::nChw16c)) return int64_t{16};
      if (pd.dst_desc() == memory::desc(src, f32, memory::format_tag::nChw8c)) return int64_t{8};
    } catch (const dnnl::error&) {
    }
    return int64_t{0};
  }();
  return block;
}

dnnl::memory::desc blocked_desc(const dnnl::memory::dims& dims) {
  return dnnl::memory::desc(
      dims, dnnl::memory::data_type::f32,
      preferred_block() == 16 ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c);
}

std::shared_ptr<DnnlConv> make_conv(ConvKind kind, const ConvGeom& g, const ConvPostOps* post, int layout) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const bool d3 = g.sp == 3;
  const tag act =
      d3 ? (g.channels_first ? tag::ncdhw : tag::ndhwc) : (g.channels_first ? tag::nchw : tag::nhwc);
  memory::dims src_dims = {g.batch, g.c_in}, dst_dims = {g.batch, g.c_out}, kdims, strides, dil, pl, pr;
  for (int i = 0; i < g.sp; ++i) {
    src_dims.push_back(g.in[i]);
    dst_dims.push_back(g.out[i]);
    kdims.push_back(g.k[i]);
    strides.push_back(g.stride[i]);
    dil.push_back(g.dil[i] - 1);
    pl.push_back(g.pad_lo[i]);
    pr.push_back(g.pad_hi[i]);
  }
  memory::desc src(src_dims, f32, act);
  memory::desc dst(dst_dims, f32, act);
  // A grouped filter [h, w, in / groups, out] (out group-major) is oneDNN's [g, o, i, h, w]
  // stored h, w, i, g, o ("hwigo"); a depthwise one [h, w, channels, multiplier] is its i = 1.
  const bool grouped = g.groups > 1;
  memory::dims wdims =
      grouped ? memory::dims{g.groups, g.c_out / g.groups, g.c_in / g.groups} : memory::dims{g.c_out, g.c_in};
  wdims.insert(wdims.end(), kdims.begin(), kdims.end());
  memory::desc w_any(wdims, f32, tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: primitives run on many threads
  auto& eng = cpu_engine();
  auto r = std::make_shared<DnnlConv>();
  r->user_w = memory::desc(wdims, f32,
                           grouped ? (d3 ? tag::dhwigo : tag::hwigo)
                           : d3    ? tag::dhwio
                                   : tag::hwio);
  auto algo = dnnl::algorithm::convolution_direct;
  if (kind == ConvKind::kTransposed) {
    // The convolution's output gradient (c_out channels) deconvolved into its input (c_in):
    // oneDNN's weights [c_in, c_out, k...] read in place from TF's [k..., c_in, c_out].
    JF_CHECK(g.groups == 1, "a fused conv2d_transpose cannot be grouped");
    memory::dims tw = {g.c_in, g.c_out}, tstrides = {g.c_out, 1}, tpr;
    int64_t step = g.c_in * g.c_out;
    for (int i = g.sp - 1; i >= 0; --i) {
      tstrides.insert(tstrides.begin() + 2, step);
      step *= g.k[i];
    }
    tw.insert(tw.end(), kdims.begin(), kdims.end());
    for (int i = 0; i < g.sp; ++i) {
      // The rows the deconvolution reaches; the pass fuses only transposes it covers whole.
      tpr.push_back((g.out[i] - 1) * g.stride[i] + (g.k[i] - 1) * g.dil[i] + 1 - g.pad_lo[i] - g.in[i]);
      JF_CHECK(tpr.back() >= 0, "a fused conv2d_transpose must cover its output");
    }
    r->user_w = memory::desc(tw, f32, tstrides);
    const memory::desc t_src(dst_dims, f32, act), t_dst(src_dims, f32, act), t_w(tw, f32, tag::any);
    if (post)
      attr.set_post_ops(make_post_ops(*post, t_dst, g.c_in, g.sp, &r->binary_post_ops, &r->binary_desc));
    const bool bias = post && post->bias >= 0;
    if (bias) r->bias = memory::desc({g.c_in}, f32, tag::a);
    const auto dalgo = dnnl::algorithm::deconvolution_direct;
    auto d = bias ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dalgo, t_src, t_w,
                                                      r->bias, t_dst, strides, dil, pl, tpr)
                  : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dalgo, t_src, t_w,
                                                      t_dst, strides, dil, pl, tpr);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, eng);
    r->conv = dnnl::deconvolution_forward(pd);
    r->prim_w = pd.weights_desc();
    r->scratch = pd.scratchpad_desc();
    r->act_in = t_src;
    r->act_out = t_dst;
  } else if (kind == ConvKind::kForward) {
    if (post)
      attr.set_post_ops(make_post_ops(*post, dst, g.c_out, g.sp, &r->binary_post_ops, &r->binary_desc));
    const bool bias = post && post->bias >= 0;
    if (bias) r->bias = memory::desc({g.c_out}, f32, tag::a);
    // In a chain both ends run blocked (oneDNN has no fast kernel mixing the layouts).
    r->prim_src = layout ? blocked_desc(src_dims) : src;
    r->prim_dst = layout ? blocked_desc(dst_dims) : dst;
    auto d = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algo, r->prim_src,
                                                    w_any, r->bias, r->prim_dst, strides, dil, pl, pr)
                  : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algo, r->prim_src,
                                                    w_any, r->prim_dst, strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
    r->conv = dnnl::convolution_forward(pd);
    r->prim_w = pd.weights_desc();
    r->scratch = pd.scratchpad_desc();
    r->act_in = layout & kBlockedIn ? r->prim_src : src;
    r->act_out = layout & kBlockedOut ? r->prim_dst : dst;
    r->src_reorder = r->act_in != r->prim_src;
    r->dst_reorder = r->act_out != r->prim_dst;
    if (r->src_reorder)
      r->to_prim_src = dnnl::reorder(dnnl::reorder::primitive_desc(eng, src, eng, r->prim_src));
    if (r->dst_reorder)
      r->from_prim_dst = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r->prim_dst, eng, dst));
  } else {
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, algo, src, w_any, dst, strides, dil,
                                       pl, pr);
    dnnl::convolution_forward::primitive_desc hint(fd, eng);
    if (kind == ConvKind::kBackwardData) {
      dnnl::convolution_backward_data::desc d(algo, src, w_any, dst, strides, dil, pl, pr);
      dnnl::convolution_backward_data::primitive_desc pd(d, attr, eng, hint);
      r->conv = dnnl::convolution_backward_data(pd);
      r->prim_w = pd.weights_desc();
      r->scratch = pd.scratchpad_desc();
      r->act_in = dst;  // out_backprop
      r->act_out = src;
    } else {
      dnnl::convolution_backward_weights::desc d(algo, src, w_any, dst, strides, dil, pl, pr);
      dnnl::convolution_backward_weights::primitive_desc pd(d, attr, eng, hint);
      r->conv = dnnl::convolution_backward_weights(pd);
      r->prim_w = pd.diff_weights_desc();
      r->scratch = pd.scratchpad_desc();
      r->act_in = src;
      r->act_out = dst;  // out_backprop
    }
  }
  r->reorder = r->prim_w != r->user_w;
  if (r->reorder) {
    bool to_user = kind == ConvKind::kBackwardWeights;
    const memory::desc& from = to_user ? r->prim_w : r->user_w;
    const memory::desc& to = to_user ? r->user_w : r->prim_w;
    r->w_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to));
  }
  return r;
}

// The primitive for a signature, made on first use. Thread-safe: the map is guarded, and a
// cached primitive is only executed (with its own scratchpad per call) after that.
std::shared_ptr<DnnlConv> cached_conv(ConvKind kind, const ConvGeom& g, const ConvPostOps* post, int layout) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::shared_ptr<DnnlConv>> cache;
  std::vector<int64_t> key = cache_key(kind, g, post, layout);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<DnnlConv> made = make_conv(kind, g, post, layout);  // outside the lock: creation is slow
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 512) cache.clear();  // a bound for programs that see endless shapes
  return cache.emplace(std::move(key), std::move(made)).first->second;
}

// A forward's post-op operands: the bias, and the binary post-ops' operands in fused_ops
// order (a residual has the output's layout and moves with the batch part).
struct PostArgs {
  const ConvPostOps* post = nullptr;
  const float* bias = nullptr;
  std::vector<const float*> binary;
  std::vector<bool> per_image;
  int layout = 0;  // kBlockedIn | kBlockedOut
};

// One convolution of `kind` on a batch of g.batch images: for the forward, a = input, w =
// filter, out = output; for backward-data, a = out_backprop, w = filter, out = input
// gradient; for backward-weights, a = input, b = out_backprop, out = filter gradient.
void dnnl_conv_part(ConvKind kind, const ConvGeom& g, const float* a, const float* w_or_b, float* out,
                    const PostArgs& pa = {}) {
  OneThread one;
  std::shared_ptr<DnnlConv> p = cached_conv(kind, g, pa.post, pa.layout);
  auto& eng = cpu_engine();
  dnnl::stream s(eng);
  std::unique_ptr<char[]> scratch_buf(new char[p->scratch.get_size() + 1]);  // uninitialized
  dnnl::memory scratch(p->scratch, eng, scratch_buf.get());
  std::unique_ptr<float[]> wbuf;
  auto user_w = [&](const float* ptr) { return dnnl::memory(p->user_w, eng, const_cast<float*>(ptr)); };
  auto prim_w_mem = [&]() {
    wbuf.reset(new float[p->prim_w.get_size() / sizeof(float) + 1]);
    return dnnl::memory(p->prim_w, eng, wbuf.get());
  };
  if (kind == ConvKind::kBackwardWeights) {
    dnnl::memory src(p->act_in, eng, const_cast<float*>(a));
    dnnl::memory ddst(p->act_out, eng, const_cast<float*>(w_or_b));
    dnnl::memory dw = p->reorder ? prim_w_mem() : user_w(out);
    p->conv.execute(s, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_DIFF_DST, ddst},
                        {DNNL_ARG_DIFF_WEIGHTS, dw},
                        {DNNL_ARG_SCRATCHPAD, scratch}});
    if (p->reorder) {
      dnnl::memory uw = user_w(out);
      p->w_reorder.execute(s, dw, uw);
    }
  } else {
    dnnl::memory w = user_w(w_or_b);
    if (p->reorder) {
      dnnl::memory pw = prim_w_mem();
      p->w_reorder.execute(s, w, pw);
      w = pw;
    }
    dnnl::memory in(p->act_in, eng, const_cast<float*>(a));
    dnnl::memory res(p->act_out, eng, out);
    std::unique_ptr<char[]> src_buf, dst_buf;  // a chain's ends in the blocked layout
    dnnl::memory user_out = res;
    if (p->src_reorder) {
      src_buf.reset(new char[p->prim_src.get_size() + 1]);
      dnnl::memory t(p->prim_src, eng, src_buf.get());
      p->to_prim_src.execute(s, in, t);
      in = t;
    }
    if (p->dst_reorder) {
      dst_buf.reset(new char[p->prim_dst.get_size() + 1]);
      res = dnnl::memory(p->prim_dst, eng, dst_buf.get());
    }
    if (kind == ConvKind::kForward || kind == ConvKind::kTransposed) {
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, res}, {DNNL_ARG_SCRATCHPAD, scratch}};
      if (pa.bias) args[DNNL_ARG_BIAS] = dnnl::memory(p->bias, eng, const_cast<float*>(pa.bias));
      JF_CHECK(pa.binary.size() == p->binary_post_ops.size(), "fused convolution: post-op operands");
      for (size_t i = 0; i < pa.binary.size(); ++i) {
        const int idx = p->binary_post_ops[i];
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1] =
            dnnl::memory(p->binary_desc[i], eng, const_cast<float*>(pa.binary[i]));
      }
      p->conv.execute(s, args);
      if (p->dst_reorder) p->from_prim_dst.execute(s, res, user_out);
    } else
      p->conv.execute(s, {{DNNL_ARG_DIFF_DST, in},
                          {DNNL_ARG_WEIGHTS, w},
                          {DNNL_ARG_DIFF_SRC, res},
                          {DNNL_ARG_SCRATCHPAD, scratch}});
  }
  s.wait();
}

// The batch split into one part per pool thread (at most two part sizes, so at most two
// cached primitives per signature). Filter gradients are summed over the parts.
void dnnl_conv(ConvKind kind, const ConvGeom& g, const float* a, const float* w_or_b, float* out,
               const PostArgs& pa = {}) {
  int64_t in_img = g.c_in, out_img = g.c_out, taps = 1;
  for (int i = 0; i < g.sp; ++i) {
    in_img *= g.in[i];
    out_img *= g.out[i];
    taps *= g.k[i];
  }
  const double flops = 2.0 * out_img * (g.c_in / g.groups) * taps;  // per image
  int64_t parts = std::min<int64_t>(num_threads(), g.batch);
  if (flops * g.batch < 2e6) parts = 1;
  const int64_t chunk = (g.batch + parts - 1) / parts;
  parts = (g.batch + chunk - 1) / chunk;
  if (parts == 1) return dnnl_conv_part(kind, g, a, w_or_b, out, pa);
  const int64_t wsize = taps * (g.c_in / g.groups) * g.c_out;
  std::vector<float> partial(kind == ConvKind::kBackwardWeights ? static_cast<size_t>(parts * wsize) : 0);
  parallel_for(parts, 1e9, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      ConvGeom gp = g;
      const int64_t n0 = i * chunk;
      gp.batch = std::min(chunk, g.batch - n0);
      if (kind == ConvKind::kForward || kind == ConvKind::kTransposed) {
        const bool tr = kind == ConvKind::kTransposed;
        const int64_t src_img = tr ? out_img : in_img, dst_img = tr ? in_img : out_img;
        PostArgs part = pa;
        for (size_t b = 0; b < part.binary.size(); ++b)
          if (part.per_image[b]) part.binary[b] += n0 * dst_img;
        dnnl_conv_part(kind, gp, a + n0 * src_img, w_or_b, out + n0 * dst_img, part);
      } else if (kind == ConvKind::kBackwardData)
        dnnl_conv_part(kind, gp, a + n0 * out_img, w_or_b, out + n0 * in_img);
      else
        dnnl_conv_part(kind, gp, a + n0 * in_img, w_or_b + n0 * out_img, partial.data() + i * wsize);
    }
  });
  if (kind == ConvKind::kBackwardWeights) {
    std::copy(partial.begin(), partial.begin() + wsize, out);
    for (int64_t i = 1; i < parts; ++i)
      for (int64_t j = 0; j < wsize; ++j) out[j] += partial[i * wsize + j];
  }
}

// ---- Eigen's GEMM per filter tap (float64, int32) ------------------------------------------------
// NCHW <-> NHWC copies: the fallback computes in NHWC.
template <class T>
std::vector<T> to_nhwc(const T* x, int64_t n, int64_t c, int64_t hw) {
  std::vector<T> r(static_cast<size_t>(n * c * hw));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < hw; ++i) r[(b * hw + i) * c + ch] = x[(b * c + ch) * hw + i];
  return r;
}
template <class T>
void from_nhwc(const T* x, T* y, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < hw; ++i) y[(b * c + ch) * hw + i] = x[(b * hw + i) * c + ch];
}

// A fallback kernel's NHWC operands: with channels first, the input (out_backprop for the data
// gradient) and out_backprop (filter gradient) copied to NHWC, and the output computed in a
// buffer that finish() copies back; channels last, the operands as they are.
template <class T>
class NhwcOperands {
 public:
  const T* x;   // input (forward, weights) or out_backprop (data)
  const T* dy;  // the second operand: filter, or out_backprop for the filter gradient
  T* out;
  NhwcOperands(ConvKind kind, const ConvGeom& g, const T* a_in, const T* b_in, T* out_p, int64_t sp_in,
               int64_t sp_out)
      : x(a_in),
        dy(b_in),
        out(out_p),
        kind_(kind),
        first_(g.channels_first),
        out_p_(out_p),
        n_(g.batch),
        c_(g.c_in),
        oc_(g.c_out),
        sp_in_(sp_in),
        sp_out_(sp_out) {
    if (!first_) return;
    a_buf_ = kind == ConvKind::kBackwardData ? to_nhwc(a_in, n_, oc_, sp_out) : to_nhwc(a_in, n_, c_, sp_in);
    x = a_buf_.data();
    if (kind == ConvKind::kBackwardWeights) {
      b_buf_ = to_nhwc(b_in, n_, oc_, sp_out);
      dy = b_buf_.data();
    } else {
      out_buf_.resize(static_cast<size_t>(kind == ConvKind::kForward ? n_ * oc_ * sp_out : n_ * c_ * sp_in));
      out = out_buf_.data();
    }
  }
  void finish() const {
    if (first_ && kind_ == ConvKind::kForward) from_nhwc(out, out_p_, n_, oc_, sp_out_);
    if (first_ && kind_ == ConvKind::kBackwardData) from_nhwc(out, out_p_, n_, c_, sp_in_);
  }

 private:
  ConvKind kind_;
  bool first_;
  T* out_p_;
  int64_t n_, c_, oc_, sp_in_, sp_out_;
  std::vector<T> a_buf_, b_buf_, out_buf_;
};

// One filter tap (kh, kw) of output row (n, oh): the output columns [ow0, ow1) whose input
// column lies inside the input, and the input row they read. Padding takes no part: a filter
// or gradient holding inf or NaN gives what oneDNN's float32 kernels give (TF's default on
// x86), not the NaN that 0 * inf would add.
struct Tap {
  int64_t ih, ow0, ow1, iw0;  // iw0: the input column of ow0
  bool empty() const { return ow0 >= ow1; }
};
Tap tap_of(const ConvGeom& g, int64_t oh, int64_t kh, int64_t kw) {
  Tap t{oh * g.stride[0] - g.pad_lo[0] + kh * g.dil[0], 0, 0, 0};
  if (t.ih < 0 || t.ih >= g.in[0]) return t;
  const int64_t off = kw * g.dil[1] - g.pad_lo[1], s = g.stride[1];  // iw = ow * s + off
  t.ow0 = off >= 0 ? 0 : (-off + s - 1) / s;
  t.ow1 = std::min<int64_t>(g.out[1], off >= g.in[1] ? 0 : (g.in[1] - 1 - off) / s + 1);
  t.iw0 = t.ow0 * s + off;
  return t;
}

template <class T>
using StridedMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MStridedMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

// Per output row and tap, a GEMM on the input rows the tap reads (a strided view of the NHWC
// input, no im2col copy): forward y[ow0:ow1] += x_tap w_tap, backward-data dx_tap += dy w_tap^T,
// backward-weights dw_tap += x_tap^T dy.
// With `accumulate`, adds to `out` (the 3-D form sums depth slices) instead of writing it.
template <class T>
void gemm_conv(ConvKind kind, const ConvGeom& g, const T* a_in, const T* b_in, T* out_p,
               bool accumulate = false) {
  const int64_t N = g.batch, C = g.c_in, OC = g.c_out, OH = g.out[0], OW = g.out[1];
  const int64_t H = g.in[0], W = g.in[1], hw_in = H * W, hw_out = OH * OW;
  NhwcOperands<T> ops(kind, g, a_in, b_in, out_p, hw_in, hw_out);
  const T* x = ops.x;
  const T* dy = ops.dy;
  T* out = ops.out;
  const int64_t s = g.stride[1];
  auto x_rows = [&](const T* base, int64_t n, const Tap& t) {
    return StridedMap<T>(base + ((n * H + t.ih) * W + t.iw0) * C, t.ow1 - t.ow0, C,
                         Eigen::OuterStride<>(s * C));
  };
  auto w_tap = [&](const T* w, int64_t kh, int64_t kw) {
    return CMap<T>(w + (kh * g.k[1] + kw) * C * OC, C, OC);
  };
  if (kind == ConvKind::kForward) {
    parallel_for(N * OH, static_cast<double>(OW * g.k[0] * g.k[1] * C * OC), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        MMap<T> y(out + r * OW * OC, OW, OC);
        if (!accumulate) y.setZero();
        for (int64_t kh = 0; kh < g.k[0]; ++kh)
          for (int64_t kw = 0; kw < g.k[1]; ++kw) {
            const Tap t = tap_of(g, r % OH, kh, kw);
            if (t.empty()) continue;
            y.middleRows(t.ow0, t.ow1 - t.ow0).noalias() += x_rows(x, r / OH, t) * w_tap(b_in, kh, kw);
          }
      }
    });
  } else if (kind == ConvKind::kBackwardData) {
    if (!accumulate) std::fill(out, out + N * hw_in * C, T(0));
    parallel_for(N, static_cast<double>(hw_out * g.k[0] * g.k[1] * C * OC), [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n)
        for (int64_t oh = 0; oh < OH; ++oh) {
          CMap<T> dyr(x + (n * OH + oh) * OW * OC, OW, OC);
          for (int64_t kh = 0; kh < g.k[0]; ++kh)
            for (int64_t kw = 0; kw < g.k[1]; ++kw) {
              const Tap t = tap_of(g, oh, kh, kw);
              if (t.empty()) continue;
              MStridedMap<T> dx(out + ((n * H + t.ih) * W + t.iw0) * C, t.ow1 - t.ow0, C,
                                Eigen::OuterStride<>(s * C));
              dx.noalias() += dyr.middleRows(t.ow0, t.ow1 - t.ow0) * w_tap(b_in, kh, kw).transpose();
            }
        }
    });
  } else {
    if (!accumulate) std::fill(out, out + g.k[0] * g.k[1] * C * OC, T(0));
    // Taps are independent output blocks: split over them.
    parallel_for(g.k[0] * g.k[1], static_cast<double>(N * hw_out * C * OC), [&](int64_t b, int64_t e) {
      for (int64_t tap = b; tap < e; ++tap) {
        const int64_t kh = tap / g.k[1], kw = tap % g.k[1];
        MMap<T> dw(out + tap * C * OC, C, OC);
        for (int64_t r = 0; r < N * OH; ++r) {
          const Tap t = tap_of(g, r % OH, kh, kw);
          if (t.empty()) continue;
          dw.noalias() += x_rows(x, r / OH, t).transpose() *
                          CMap<T>(dy + r * OW * OC, OW, OC).middleRows(t.ow0, t.ow1 - t.ow0);
        }
      }
    });
  }
  ops.finish();
}

// 3-D convolutions (float64, int32): for each output depth and depth tap inside the input, the
// 2-D convolution of one depth slice (NDHWC slices are NHWC images), summed.
template <class T>
void gemm_conv3d(ConvKind kind, const ConvGeom& g, const T* a_in, const T* b_in, T* out_p) {
  const int64_t N = g.batch, C = g.c_in, OC = g.c_out, D = g.in[0], OD = g.out[0];
  const int64_t in_sl = g.in[1] * g.in[2] * C, out_sl = g.out[1] * g.out[2] * OC,
                w_sl = g.k[1] * g.k[2] * C * OC;
  const int64_t sp_in = D * g.in[1] * g.in[2], sp_out = OD * g.out[1] * g.out[2];
  NhwcOperands<T> ops(kind, g, a_in, b_in, out_p, sp_in, sp_out);
  const T* x = ops.x;
  const T* dy = ops.dy;
  T* out = ops.out;
  const int64_t total = kind == ConvKind::kForward        ? N * sp_out * OC
                        : kind == ConvKind::kBackwardData ? N * sp_in * C
                                                          : g.k[0] * w_sl;
  std::fill(out, out + total, T(0));
  ConvGeom g2;
  g2.sp = 2;
  g2.batch = 1;
  g2.c_in = C;
  g2.c_out = OC;
  for (int i = 0; i < 2; ++i) {
    g2.in[i] = g.in[i + 1];
    g2.out[i] = g.out[i + 1];
    g2.k[i] = g.k[i + 1];
    g2.stride[i] = g.stride[i + 1];
    g2.dil[i] = g.dil[i + 1];
    g2.pad_lo[i] = g.pad_lo[i + 1];
    g2.pad_hi[i] = g.pad_hi[i + 1];
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t od = 0; od < OD; ++od)
      for (int64_t kd = 0; kd < g.k[0]; ++kd) {
        const int64_t id = od * g.stride[0] - g.pad_lo[0] + kd * g.dil[0];
        if (id < 0 || id >= D) continue;
        const int64_t xi = (n * D + id) * in_sl, yi = (n * OD + od) * out_sl;
        if (kind == ConvKind::kForward)
          gemm_conv<T>(kind, g2, x + xi, b_in + kd * w_sl, out + yi, true);
        else if (kind == ConvKind::kBackwardData)
          gemm_conv<T>(kind, g2, x + yi, b_in + kd * w_sl, out + xi, true);
        else
          gemm_conv<T>(kind, g2, x + xi, dy + yi, out + kd * w_sl, true);
      }
  ops.finish();
}

// Grouped convolutions (depthwise among them) on float64 and int32: direct loops over the
// taps inside the input, oneDNN having neither dtype. Group q reads input channels
// [q * Cg, (q + 1) * Cg) and writes outputs [q * Mg, (q + 1) * Mg); the filter is
// [taps..., Cg, groups * Mg]. A 2-D convolution is a 3-D one of depth 1.
template <class T>
void grouped_direct(ConvKind kind, const ConvGeom& g2, const T* a_in, const T* b_in, T* out_p) {
  ConvGeom g = g2;
  if (g.sp == 2) {  // a leading depth of 1
    for (int i = 2; i >= 1; --i) {
      g.in[i] = g.in[i - 1];
      g.out[i] = g.out[i - 1];
      g.k[i] = g.k[i - 1];
      g.stride[i] = g.stride[i - 1];
      g.dil[i] = g.dil[i - 1];
      g.pad_lo[i] = g.pad_lo[i - 1];
    }
    g.in[0] = g.out[0] = g.k[0] = g.stride[0] = g.dil[0] = 1;
    g.pad_lo[0] = 0;
  }
  const int64_t N = g.batch, C = g.c_in, OC = g.c_out, G = g.groups, Cg = C / G, Mg = OC / G;
  const int64_t sp_in = g.in[0] * g.in[1] * g.in[2], sp_out = g.out[0] * g.out[1] * g.out[2];
  const int64_t taps = g.k[0] * g.k[1] * g.k[2];
  NhwcOperands<T> ops(kind, g2, a_in, b_in, out_p, sp_in, sp_out);
  const T* x = ops.x;
  const T* dy = ops.dy;
  T* out = ops.out;
  const T* w = b_in;
  if (kind == ConvKind::kForward) std::fill(out, out + N * sp_out * OC, T(0));
  if (kind == ConvKind::kBackwardData) std::fill(out, out + N * sp_in * C, T(0));
  if (kind == ConvKind::kBackwardWeights) std::fill(out, out + taps * Cg * OC, T(0));
  // Images are independent for the forward and data gradient; the filter gradient runs whole.
  const bool split = kind != ConvKind::kBackwardWeights;
  parallel_for(
      split ? N : 1, split ? static_cast<double>(sp_out * taps * Cg * OC) : 1.0, [&](int64_t b, int64_t e) {
        const int64_t n0 = split ? b : 0, n1 = split ? e : N;
        for (int64_t n = n0; n < n1; ++n)
          for (int64_t o = 0; o < sp_out; ++o) {
            const int64_t od = o / (g.out[1] * g.out[2]), oh = o / g.out[2] % g.out[1], ow = o % g.out[2];
            const int64_t yi = (n * sp_out + o) * OC;
            for (int64_t t = 0; t < taps; ++t) {
              const int64_t kd = t / (g.k[1] * g.k[2]), kh = t / g.k[2] % g.k[1], kw = t % g.k[2];
              const int64_t id = od * g.stride[0] - g.pad_lo[0] + kd * g.dil[0];
              const int64_t ih = oh * g.stride[1] - g.pad_lo[1] + kh * g.dil[1];
              const int64_t iw = ow * g.stride[2] - g.pad_lo[2] + kw * g.dil[2];
              if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
              const int64_t xi = (n * sp_in + (id * g.in[1] + ih) * g.in[2] + iw) * C, wt = t * Cg * OC;
              for (int64_t q = 0; q < G; ++q)
                for (int64_t ci = 0; ci < Cg; ++ci) {
                  const int64_t c = q * Cg + ci, wr = wt + ci * OC + q * Mg, yr = yi + q * Mg;
                  for (int64_t m = 0; m < Mg; ++m) {
                    if (kind == ConvKind::kForward)
                      out[yr + m] += x[xi + c] * w[wr + m];
                    else if (kind == ConvKind::kBackwardData)
                      out[xi + c] += x[yr + m] * w[wr + m];
                    else
                      out[wr + m] += x[xi + c] * dy[yr + m];
                  }
                }
            }
          }
      });
  ops.finish();
}

template <TypeSet kTypes>
void run_conv(OpCall& c, ConvKind kind, const ConvGeom& g, const Tensor& a, const Tensor& b) {
  Tensor& y = c.alloc(0);
  // Empty batches, channels or windows: nothing to convolve (a filter gradient of zeros).
  int64_t work = g.batch * g.c_in * g.c_out, in_size = 1;
  for (int i = 0; i < g.sp; ++i) {
    work *= g.out[i] * g.k[i];
    in_size *= g.in[i];
  }
  if (work == 0 || in_size == 0) {
    zero(y);
    return;
  }
  // half types came through run_widened: float32 here
  JF_SWITCH_CLAIMED(kTypes & ~kHalfTypes, y.dtype(), T, {
    if constexpr (std::is_same_v<T, float>)
      dnnl_conv(kind, g, a.data<float>(), b.data<float>(), y.data<float>());
    else if (g.groups > 1)
      grouped_direct<T>(kind, g, a.data<T>(), b.data<T>(), y.data<T>());
    else if (g.sp == 3)
      gemm_conv3d<T>(kind, g, a.data<T>(), b.data<T>(), y.data<T>());
    else
      gemm_conv<T>(kind, g, a.data<T>(), b.data<T>(), y.data<T>());
  });
}

}  // namespace

int64_t conv_blocked_block() { return preferred_block(); }
dnnl::engine& dnnl_engine() { return cpu_engine(); }
dnnl::memory::desc dnnl_blocked_desc(const dnnl::memory::dims& dims) { return blocked_desc(dims); }

// A forward's place in a chain (attrs set by passes/conv_layout.cc), counted per run with the
// reorders at the chain's ends it makes.
static int chain_layout(const OpCall& c) {
  const int layout = (c.attrs.get<bool>("_blocked_in", false) ? kBlockedIn : 0) |
                     (c.attrs.get<bool>("_blocked_out", false) ? kBlockedOut : 0);
  if (layout) {
    stats().conv_blocked_runs.fetch_add(1, std::memory_order_relaxed);
    const int ends = (layout & kBlockedIn ? 0 : 1) + (layout & kBlockedOut ? 0 : 1);
    stats().conv_layout_reorders.fetch_add(ends, std::memory_order_relaxed);
  }
  return layout;
}

void k_Conv2D(OpCall& c) {
  if (run_widened(c, &k_Conv2D)) return;
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.in[1].shape());
  if (c.in[0].dtype() == DType::kFloat32 && (c.attrs.has("_blocked_in") || c.attrs.has("_blocked_out"))) {
    Tensor& y = c.alloc(0);
    if (y.num_elements() == 0) return;
    PostArgs pa;
    pa.layout = chain_layout(c);
    dnnl_conv(ConvKind::kForward, g, c.in[0].data<float>(), c.in[1].data<float>(), y.data<float>(), pa);
    return;
  }
  run_conv<op_types(OpId::Conv2D)>(c, ConvKind::kForward, g, c.in[0], c.in[1]);
}

// A convolution and the ops after it as post-ops. The fuse_conv pass fuses only filters and
// images of known, nonzero sizes, so an empty batch is the only empty case.
static void fused_conv(OpCall& c, ConvKind kind) {
  const bool tr = kind == ConvKind::kTransposed;
  const Tensor& a = c.in[tr ? 2 : 0];
  ConvGeom g = tr ? conv_geom(c, c.spec(0).shape, c.in[1].shape()) : conv_geom(c, a.shape(), c.in[1].shape());
  const ConvPostOps post = conv_post_ops(c);
  Tensor& y = c.alloc(0);
  if (y.num_elements() == 0) return;
  int64_t taps = tr ? g.c_out : g.c_in;
  for (int i = 0; i < g.sp; ++i) taps *= g.k[i] * (tr ? g.out[i] : g.in[i]);
  JF_CHECK(taps > 0, c.name(), ": an empty filter or input (", c.input_desc(), ") cannot be fused");
  PostArgs pa;
  pa.post = &post;
  if (!tr) pa.layout = chain_layout(c);
  // A leading run of per-channel affine ops (the bias, a batch norm's subtract, multiply and
  // add) folds into one scale and shift: the scale into a copy of the filter, the shift as the
  // primitive's bias. oneDNN then keeps its plain kernel: three binary post-ops made brgconv
  // about a third slower than the convolution followed by one compiled loop.
  size_t affine = 0;
  bool scaled = false;
  while (affine < post.ops.size() && (post.ops[affine] == "BiasAdd" || post.ops[affine] == "MulChannel" ||
                                      post.ops[affine] == "AddChannel" || post.ops[affine] == "SubChannel")) {
    scaled = scaled || post.ops[affine] == "MulChannel";
    ++affine;
  }
  const float* w = c.in[1].data<float>();
  ConvPostOps folded;
  std::vector<float> shift, wbuf;
  size_t first = 0;  // the first op left to the post-ops
  if (affine > 1 || scaled) {
    const int64_t C = tr ? g.c_in : g.c_out;
    std::vector<float> scale(static_cast<size_t>(C), 1.f);
    shift.assign(static_cast<size_t>(C), 0.f);
    for (size_t i = 0; i < affine; ++i) {
      const float* v = c.in[post.input[i]].data<float>();
      for (int64_t k = 0; k < C; ++k) {
        if (post.ops[i] == "MulChannel") {
          scale[k] *= v[k];
          shift[k] *= v[k];
        } else if (post.ops[i] == "SubChannel") {
          shift[k] -= v[k];
        } else {
          shift[k] += v[k];
        }
      }
    }
    if (scaled) {
      // Output channels are the filter's last dim (a depthwise filter's last two, channel-major);
      // a transposed convolution's are its second last.
      const int64_t n = c.in[1].num_elements(), inner = tr ? g.c_out : 1;
      wbuf.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) wbuf[i] = w[i] * scale[(i / inner) % C];
      w = wbuf.data();
    }
    folded.ops = {"BiasAdd"};
    folded.input = {-1};
    folded.bias = 0;
    folded.alpha = post.alpha;
    for (size_t i = affine; i < post.ops.size(); ++i) {
      folded.ops.push_back(post.ops[i]);
      folded.input.push_back(post.input[i]);
    }
    pa.post = &folded;
    pa.bias = shift.data();
    first = affine;
  }
  for (size_t i = first; i < post.ops.size(); ++i) {
    if (post.input[i] < 0) continue;
    const float* v = c.in[post.input[i]].data<float>();
    if (post.ops[i] == "BiasAdd") {
      pa.bias = v;
    } else {
      pa.binary.push_back(v);
      pa.per_image.push_back(post.ops[i] == "Add");
    }
  }
  dnnl_conv(kind, g, a.data<float>(), w, y.data<float>(), pa);
  stats().conv_postop_runs.fetch_add(1, std::memory_order_relaxed);
}

void k_FusedConv2D(OpCall& c) { fused_conv(c, ConvKind::kForward); }
void k_FusedDepthwiseConv2dNative(OpCall& c) { fused_conv(c, ConvKind::kForward); }
void k_FusedConv3D(OpCall& c) { fused_conv(c, ConvKind::kForward); }
void k_FusedConv2DBackpropInput(OpCall& c) { fused_conv(c, ConvKind::kTransposed); }

void k_Conv2DBackpropInput(OpCall& c) {
  if (run_widened(c, &k_Conv2DBackpropInput)) return;
  ConvGeom g = conv_geom(c, c.spec(0).shape, c.in[1].shape());
  run_conv<op_types(OpId::Conv2DBackpropInput)>(c, ConvKind::kBackwardData, g, c.in[2], c.in[1]);
}

void k_Conv2DBackpropFilter(OpCall& c) {
  if (run_widened(c, &k_Conv2DBackpropFilter)) return;
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.spec(0).shape);
  run_conv<op_types(OpId::Conv2DBackpropFilter)>(c, ConvKind::kBackwardWeights, g, c.in[0], c.in[2]);
}

void k_DepthwiseConv2dNative(OpCall& c) {
  if (run_widened(c, &k_DepthwiseConv2dNative)) return;
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.in[1].shape());
  run_conv<op_types(OpId::DepthwiseConv2dNative)>(c, ConvKind::kForward, g, c.in[0], c.in[1]);
}

void k_DepthwiseConv2dNativeBackpropInput(OpCall& c) {
  if (run_widened(c, &k_DepthwiseConv2dNativeBackpropInput)) return;
  ConvGeom g = conv_geom(c, c.spec(0).shape, c.in[1].shape());
  run_conv<op_types(OpId::DepthwiseConv2dNativeBackpropInput)>(c, ConvKind::kBackwardData, g, c.in[2],
                                                               c.in[1]);
}

void k_DepthwiseConv2dNativeBackpropFilter(OpCall& c) {
  if (run_widened(c, &k_DepthwiseConv2dNativeBackpropFilter)) return;
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.spec(0).shape);
  run_conv<op_types(OpId::DepthwiseConv2dNativeBackpropFilter)>(c, ConvKind::kBackwardWeights, g, c.in[0],
                                                                c.in[2]);
}

void k_Conv3D(OpCall& c) {
  if (run_widened(c, &k_Conv3D)) return;
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.in[1].shape());
  run_conv<op_types(OpId::Conv3D)>(c, ConvKind::kForward, g, c.in[0], c.in[1]);
}

void k_Conv3DBackpropInputV2(OpCall& c) {
  if (run_widened(c, &k_Conv3DBackpropInputV2)) return;
  ConvGeom g = conv_geom(c, c.spec(0).shape, c.in[1].shape());
  run_conv<op_types(OpId::Conv3DBackpropInputV2)>(c, ConvKind::kBackwardData, g, c.in[2], c.in[1]);
}

void k_Conv3DBackpropFilterV2(OpCall& c) {
  if (run_widened(c, &k_Conv3DBackpropFilterV2)) return;
  ConvGeom g = conv_geom(c, c.in[0].shape(), c.spec(0).shape);
  run_conv<op_types(OpId::Conv3DBackpropFilterV2)>(c, ConvKind::kBackwardWeights, g, c.in[0], c.in[2]);
}

// ---- BiasAdd / BiasAddGrad ----------------------------------------------------------------------
// The value as [outer, C, inner]: NHWC is [N*H*W, C, 1], NCHW [N, C, H*W].
static void bias_layout(const OpCall& c, const Shape& v, int64_t* outer, int64_t* ch, int64_t* inner) {
  const bool cf = c.attrs.get<std::string>("data_format", "NHWC") == "NCHW" && v.rank() >= 3;
  const int cd = cf ? 1 : v.rank() - 1;
  *outer = *inner = 1;
  for (int i = 0; i < cd; ++i) *outer *= v[i];
  for (int i = cd + 1; i < v.rank(); ++i) *inner *= v[i];
  *ch = v[cd];
}

void k_BiasAdd(OpCall& c) {
  Tensor& y = c.alloc(0);
  int64_t outer, ch, inner;
  bias_layout(c, c.in[0].shape(), &outer, &ch, &inner);
  JF_SWITCH_CLAIMED(op_types(OpId::BiasAdd), y.dtype(), T, {
    const T* x = c.in[0].data<T>();
    const T* b = c.in[1].data<T>();
    T* o = y.data<T>();
    parallel_for(outer, static_cast<double>(ch * inner), [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        const int64_t row = i * ch * inner;
        if (inner == 1) {  // NHWC: the bias row, vectorized
          for (int64_t k = 0; k < ch; ++k) o[row + k] = x[row + k] + b[k];
          continue;
        }
        for (int64_t k = 0; k < ch; ++k)
          for (int64_t j = 0; j < inner; ++j) o[row + k * inner + j] = x[row + k * inner + j] + b[k];
      }
    });
  });
}

// Sums over everything but the channel: per part of the rows into a row of partial sums,
// then the parts added in order.
void k_BiasAddGrad(OpCall& c) {
  Tensor& y = c.alloc(0);
  int64_t outer, ch, inner;
  bias_layout(c, c.in[0].shape(), &outer, &ch, &inner);
  JF_SWITCH_CLAIMED(op_types(OpId::BiasAddGrad), y.dtype(), T, {
    // half floats sum in float and round once, as TF's kernel (its accumulator type)
    using Acc = std::conditional_t<kEigenHalf<T>, float, T>;
    const T* x = c.in[0].data<T>();
    T* o = y.data<T>();
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), outer * ch * inner / 65536));
    const int64_t per = parts ? (outer + parts - 1) / parts : 0;
    std::vector<Acc> partial(static_cast<size_t>(parts * ch), Acc(0));
    parallel_for(parts, 1e9, [&](int64_t s, int64_t e) {
      for (int64_t p = s; p < e; ++p) {
        Acc* acc = partial.data() + p * ch;
        for (int64_t i = p * per; i < std::min(outer, (p + 1) * per); ++i) {
          const T* row = x + i * ch * inner;
          if (inner == 1) {
            for (int64_t k = 0; k < ch; ++k) acc[k] += static_cast<Acc>(row[k]);
            continue;
          }
          for (int64_t k = 0; k < ch; ++k) {
            Acc sum = Acc(0);
            for (int64_t j = 0; j < inner; ++j) sum += static_cast<Acc>(row[k * inner + j]);
            acc[k] += sum;
          }
        }
      }
    });
    for (int64_t k = 0; k < ch; ++k) {
      Acc sum = Acc(0);
      for (int64_t p = 0; p < parts; ++p) sum += partial[p * ch + k];
      o[k] = static_cast<T>(sum);
    }
  });
}

}  // namespace jf
