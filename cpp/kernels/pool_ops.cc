// Eager 2-D and 3-D pooling (MaxPool, AvgPool, MaxPool3D, AvgPool3D) and their gradients (a max
// pool's to second order, MaxPoolGradGrad), as TF's CPU kernels compute them: a max pool keeps
// the first largest value (starting from the dtype's lowest, so NaN is skipped), its gradient
// goes to the window's first maximum (TF's argmax), and an average divides by the number of
// window elements inside the input (SAME padding counts none of its zeros). A 2-D pool is a 3-D
// one of depth 1; windows are read in place in either layout. Inside a chain of convolutions
// kept in oneDNN's blocked layout (passes/conv_layout.cc), a 2-D float32 pool runs oneDNN's.
#include <omp.h>

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "ir/conv_geom.h"
#include "kernels/dispatch.h"
#include "kernels/dnnl_layout.h"
#include "kernels/kernels.h"
#include "support/stats.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

// The geometry with three spatial dims (a 2-D one gets a leading depth of 1).
ConvGeom as_3d(const ConvGeom& g) {
  if (g.sp == 3) return g;
  ConvGeom r = g;
  r.sp = 3;
  r.in[0] = r.out[0] = r.k[0] = r.stride[0] = r.dil[0] = 1;
  r.pad_lo[0] = r.pad_hi[0] = 0;
  for (int i = 0; i < 2; ++i) {
    r.in[i + 1] = g.in[i];
    r.out[i + 1] = g.out[i];
    r.k[i + 1] = g.k[i];
    r.stride[i + 1] = g.stride[i];
    r.dil[i + 1] = g.dil[i];
    r.pad_lo[i + 1] = g.pad_lo[i];
    r.pad_hi[i + 1] = g.pad_hi[i];
  }
  return r;
}

// Element strides of a [N, D, H, W, C] (or [N, C, D, H, W]) tensor with these sizes.
struct Strides {
  int64_t n, c, d, h, w;
};
Strides strides_of(const ConvGeom& g, const int64_t* s, int64_t C) {
  const int64_t D = s[0], H = s[1], W = s[2];
  return g.channels_first ? Strides{C * D * H * W, D * H * W, H * W, W, 1}
                          : Strides{D * H * W * C, 1, H * W * C, W * C, C};
}

// One output position's window, clipped to the input: [lo, hi) per spatial dim.
struct Window {
  int64_t n, o[3], lo[3], hi[3];
  bool empty() const { return lo[0] >= hi[0] || lo[1] >= hi[1] || lo[2] >= hi[2]; }
  int64_t count() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
};
void clip(const ConvGeom& g, int i, Window* w) {
  const int64_t start = w->o[i] * g.stride[i] - g.pad_lo[i];
  w->lo[i] = std::max<int64_t>(start, 0);
  w->hi[i] = std::min<int64_t>(start + g.k[i], g.in[i]);
}

// fn(cs, co) with the input and output channel strides: compile-time 1s for NHWC, so that the
// channel loops vectorize.
template <class F>
void over_channels(int64_t in_stride, int64_t out_stride, F&& fn) {
  if (in_stride == 1 && out_stride == 1)
    fn(std::integral_constant<int64_t, 1>{}, std::integral_constant<int64_t, 1>{});
  else
    fn(in_stride, out_stride);
}

// fn(window) for every output position (all its channels). By rows of outputs for the forward
// pools; by whole images for gradients, whose windows overlap across rows (no two tasks write
// one element). `scratch` bytes of a task's own buffer go to fn.
template <class F>
void for_windows(const ConvGeom& g, bool by_image, size_t scratch, F&& fn) {
  const int64_t per_image = g.out[0] * g.out[1];
  const int64_t items = by_image ? g.batch : g.batch * per_image;
  const double cost =
      static_cast<double>(g.c_in * g.k[0] * g.k[1] * g.k[2]) * g.out[2] * (by_image ? per_image : 1);
  parallel_for(items, cost, [&](int64_t s, int64_t e) {
    std::vector<char> buf(scratch);
    const int64_t r0 = by_image ? s * per_image : s, r1 = by_image ? e * per_image : e;
    for (int64_t r = r0; r < r1; ++r) {
      Window w;
      w.n = r / per_image;
      w.o[0] = (r % per_image) / g.out[1];
      w.o[1] = r % g.out[1];
      clip(g, 0, &w);
      clip(g, 1, &w);
      for (w.o[2] = 0; w.o[2] < g.out[2]; ++w.o[2]) {
        clip(g, 2, &w);
        fn(w, buf.data());
      }
    }
  });
}

template <class T, class CS, class CO, class F>
void pool_forward(const ConvGeom& g, const T* x, T* out, CS cs, CO co, T init, F&& combine, bool mean) {
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  for_windows(g, false, 0, [&](const Window& w, char*) {
    T* o = out + w.n * so.n + w.o[0] * so.d + w.o[1] * so.h + w.o[2] * so.w;
    for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] = init;
    for (int64_t d = w.lo[0]; d < w.hi[0]; ++d)
      for (int64_t h = w.lo[1]; h < w.hi[1]; ++h)
        for (int64_t x0 = w.lo[2]; x0 < w.hi[2]; ++x0) {
          const T* xp = x + w.n * si.n + d * si.d + h * si.h + x0 * si.w;
          for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] = combine(o[ch * co], xp[ch * cs]);
        }
    if (mean) {
      const T count = static_cast<T>(w.count());
      for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] /= count;
    }
  });
}

// A 2-D pool inside a chain kept in oneDNN's blocked layout (passes/conv_layout.cc): oneDNN's
// pooling on that layout, its input or output reordered from or to NHWC where the chain
// starts or ends there. oneDNN's max keeps the larger of each comparison as TF's kernel (a NaN
// never wins, padding is not a candidate) and its average excludes padding, as TF's.
struct DnnlPool {
  dnnl::primitive pool;
  dnnl::memory::desc user_src, user_dst, prim_src, prim_dst;
  dnnl::reorder to_prim, from_prim;
  bool src_reorder = false, dst_reorder = false;
};

std::shared_ptr<DnnlPool> make_pool(const ConvGeom& g, bool max, int layout) {
  using dnnl::memory;
  const auto f32 = memory::data_type::f32;
  const memory::dims src = {g.batch, g.c_in, g.in[0], g.in[1]}, dst = {g.batch, g.c_in, g.out[0], g.out[1]};
  auto r = std::make_shared<DnnlPool>();
  r->prim_src = dnnl_blocked_desc(src);
  r->prim_dst = dnnl_blocked_desc(dst);
  r->user_src = layout & 1 ? r->prim_src : memory::desc(src, f32, memory::format_tag::nhwc);
  r->user_dst = layout & 2 ? r->prim_dst : memory::desc(dst, f32, memory::format_tag::nhwc);
  auto& eng = dnnl_engine();
  dnnl::pooling_forward::desc d(
      dnnl::prop_kind::forward_inference,
      max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding, r->prim_src,
      r->prim_dst, {g.stride[0], g.stride[1]}, {g.k[0], g.k[1]}, {g.pad_lo[0], g.pad_lo[1]},
      {g.pad_hi[0], g.pad_hi[1]});
  r->pool = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(d, eng));
  r->src_reorder = r->user_src != r->prim_src;
  r->dst_reorder = r->user_dst != r->prim_dst;
  if (r->src_reorder)
    r->to_prim = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r->user_src, eng, r->prim_src));
  if (r->dst_reorder)
    r->from_prim = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r->prim_dst, eng, r->user_dst));
  return r;
}

// True when the pool is a chain's and ran here.
bool blocked_pool(OpCall& c, bool max) {
  const int layout =
      (c.attrs.get<bool>("_blocked_in", false) ? 1 : 0) | (c.attrs.get<bool>("_blocked_out", false) ? 2 : 0);
  if (!layout || c.in[0].dtype() != DType::kFloat32) return false;
  const ConvGeom g = pool_geom(c, c.in[0].shape());
  Tensor& y = c.alloc(0);
  stats().conv_blocked_runs.fetch_add(1, std::memory_order_relaxed);
  stats().conv_layout_reorders.fetch_add((layout & 1 ? 0 : 1) + (layout & 2 ? 0 : 1),
                                         std::memory_order_relaxed);
  if (y.num_elements() == 0) return true;
  OneThread one;  // kernels/dnnl_layout.h
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::shared_ptr<DnnlPool>> cache;
  std::vector<int64_t> key = {max, layout, g.batch, g.c_in};
  for (int i = 0; i < 2; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.stride[i], g.pad_lo[i], g.pad_hi[i]}) key.push_back(v);
  std::shared_ptr<DnnlPool> p;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) p = it->second;
  }
  if (!p) {
    p = make_pool(g, max, layout);
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() >= 256) cache.clear();
    cache.emplace(key, p);
  }
  auto& eng = dnnl_engine();
  dnnl::stream s(eng);
  dnnl::memory in(p->user_src, eng, const_cast<void*>(c.in[0].raw()));
  dnnl::memory out(p->user_dst, eng, y.raw());
  std::unique_ptr<char[]> sbuf, dbuf;
  dnnl::memory src = in, dst = out;
  if (p->src_reorder) {
    sbuf.reset(new char[p->prim_src.get_size() + 1]);
    src = dnnl::memory(p->prim_src, eng, sbuf.get());
    p->to_prim.execute(s, in, src);
  }
  if (p->dst_reorder) {
    dbuf.reset(new char[p->prim_dst.get_size() + 1]);
    dst = dnnl::memory(p->prim_dst, eng, dbuf.get());
  }
  p->pool.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  if (p->dst_reorder) p->from_prim.execute(s, dst, out);
  s.wait();
  return true;
}

void max_pool(OpCall& c) {
  if (run_widened(c, &max_pool)) return;
  if (blocked_pool(c, true)) return;
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPool) & ~kHalfTypes, y.dtype(), T, {
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      pool_forward<T>(
          g, c.in[0].data<T>(), y.data<T>(), cs, co, std::numeric_limits<T>::lowest(),
          [](T m, T v) { return v > m ? v : m; }, false);
    });
  });
}

void avg_pool(OpCall& c) {
  if (run_widened(c, &avg_pool)) return;
  if (blocked_pool(c, false)) return;
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::AvgPool) & ~kHalfTypes, y.dtype(), T, {
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      pool_forward<T>(
          g, c.in[0].data<T>(), y.data<T>(), cs, co, T(0), [](T a, T v) { return a + v; }, true);
    });
  });
}

// Each window's argmax per channel, TF's: the first element, replaced by any later one that is
// larger. fn(w, arg) gets the offsets (inside the image, channel stride included) of every
// channel's maximum. By images, so a gradient's scatter has no two tasks writing one element.
template <class T, class CS, class F>
void for_argmax(const ConvGeom& g, const T* x, const Strides& si, CS cs, F&& fn) {
  const size_t scratch = static_cast<size_t>(g.c_in) * (sizeof(T) + sizeof(int64_t));
  for_windows(g, true, scratch, [&](const Window& w, char* buf) {
    if (w.empty()) return;
    int64_t* arg = reinterpret_cast<int64_t*>(buf);
    T* best = reinterpret_cast<T*>(buf + g.c_in * sizeof(int64_t));
    const T* img = x + w.n * si.n;
    const int64_t first = w.lo[0] * si.d + w.lo[1] * si.h + w.lo[2] * si.w;
    for (int64_t ch = 0; ch < g.c_in; ++ch) {
      arg[ch] = first + ch * cs;
      best[ch] = img[first + ch * cs];
    }
    for (int64_t d = w.lo[0]; d < w.hi[0]; ++d)
      for (int64_t h = w.lo[1]; h < w.hi[1]; ++h)
        for (int64_t x0 = w.lo[2]; x0 < w.hi[2]; ++x0) {
          const int64_t base = d * si.d + h * si.h + x0 * si.w;
          if (base == first) continue;
          for (int64_t ch = 0; ch < g.c_in; ++ch)
            if (best[ch] < img[base + ch * cs]) {
              best[ch] = img[base + ch * cs];
              arg[ch] = base + ch * cs;
            }
        }
    fn(w, static_cast<const int64_t*>(arg));
  });
}

// MaxPoolGrad(orig_input, orig_output, grad): each output's gradient to its window's argmax.
void max_pool_grad(OpCall& c) {
  if (run_widened(c, &max_pool_grad)) return;
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPoolGrad) & ~kHalfTypes, y.dtype(), T, {
    const T* gr = c.in[2].data<T>();
    T* dx = y.data<T>();
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_argmax<T>(g, c.in[0].data<T>(), si, cs, [&](const Window& w, const int64_t* arg) {
        const T* gp = gr + w.n * so.n + w.o[0] * so.d + w.o[1] * so.h + w.o[2] * so.w;
        T* dimg = dx + w.n * si.n;
        for (int64_t ch = 0; ch < g.c_in; ++ch) dimg[arg[ch]] += gp[ch * co];
      });
    });
  });
}

// MaxPoolGradGrad(orig_input, orig_output, grad): MaxPoolGrad's adjoint in its gradient, grad
// (input-shaped) read at each window's argmax; a window of only padding gives 0.
void max_pool_grad_grad(OpCall& c) {
  if (run_widened(c, &max_pool_grad_grad)) return;
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPoolGradGrad) & ~kHalfTypes, y.dtype(), T, {
    const T* gg = c.in[2].data<T>();
    T* out = y.data<T>();
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_argmax<T>(g, c.in[0].data<T>(), si, cs, [&](const Window& w, const int64_t* arg) {
        T* op = out + w.n * so.n + w.o[0] * so.d + w.o[1] * so.h + w.o[2] * so.w;
        const T* gimg = gg + w.n * si.n;
        for (int64_t ch = 0; ch < g.c_in; ++ch) op[ch * co] = gimg[arg[ch]];
      });
    });
  });
}

// AvgPoolGrad(orig_input_shape, grad): each output's gradient spread evenly over its window.
void avg_pool_grad(OpCall& c) {
  if (run_widened(c, &avg_pool_grad)) return;
  const ConvGeom g = as_3d(pool_geom(c, c.spec(0).shape));
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::AvgPoolGrad) & ~kHalfTypes, y.dtype(), T, {
    const T* gr = c.in[1].data<T>();
    T* dx = y.data<T>();
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_windows(g, true, 0, [&](const Window& w, char*) {
        if (w.empty()) return;
        const T count = static_cast<T>(w.count());
        const T* gp = gr + w.n * so.n + w.o[0] * so.d + w.o[1] * so.h + w.o[2] * so.w;
        for (int64_t d = w.lo[0]; d < w.hi[0]; ++d)
          for (int64_t h = w.lo[1]; h < w.hi[1]; ++h)
            for (int64_t x0 = w.lo[2]; x0 < w.hi[2]; ++x0) {
              T* dp = dx + w.n * si.n + d * si.d + h * si.h + x0 * si.w;
              for (int64_t ch = 0; ch < g.c_in; ++ch) dp[ch * cs] += gp[ch * co] / count;
            }
      });
    });
  });
}

}  // namespace

// One kernel per family: the 2-D and 3-D records claim the same dtypes (asserted below).
void k_MaxPool(OpCall& c) { max_pool(c); }
void k_MaxPool3D(OpCall& c) { max_pool(c); }
void k_AvgPool(OpCall& c) { avg_pool(c); }
void k_AvgPool3D(OpCall& c) { avg_pool(c); }
void k_MaxPoolGrad(OpCall& c) { max_pool_grad(c); }
void k_MaxPool3DGrad(OpCall& c) { max_pool_grad(c); }
void k_MaxPoolGradGrad(OpCall& c) { max_pool_grad_grad(c); }
void k_MaxPool3DGradGrad(OpCall& c) { max_pool_grad_grad(c); }
void k_AvgPoolGrad(OpCall& c) { avg_pool_grad(c); }
void k_AvgPool3DGrad(OpCall& c) { avg_pool_grad(c); }

static_assert(op_types(OpId::MaxPool) == op_types(OpId::MaxPool3D));
static_assert(op_types(OpId::AvgPool) == op_types(OpId::AvgPool3D));
static_assert(op_types(OpId::MaxPoolGrad) == op_types(OpId::MaxPool3DGrad));
static_assert(op_types(OpId::MaxPoolGradGrad) == op_types(OpId::MaxPool3DGradGrad));
static_assert(op_types(OpId::AvgPoolGrad) == op_types(OpId::AvgPool3DGrad));

}  // namespace jf
