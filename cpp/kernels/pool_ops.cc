// Eager 2-D and 3-D pooling (MaxPool, AvgPool, MaxPool3D, AvgPool3D) and their gradients (a max
// pool's to second order, MaxPoolGradGrad), as TF's CPU kernels compute them: a max pool keeps
// the first largest value (starting from the dtype's lowest, so NaN is skipped), its gradient
// goes to the window's first maximum (TF's argmax), and an average divides by the number of
// window elements inside the input (SAME padding counts none of its zeros). A 2-D pool is a 3-D
// one of depth 1; windows are read in place in either layout.
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ir/conv_geom.h"
#include "kernels/dispatch.h"
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

void max_pool(OpCall& c) {
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPool), y.dtype(), T, {
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      pool_forward<T>(
          g, c.in[0].data<T>(), y.data<T>(), cs, co, std::numeric_limits<T>::lowest(),
          [](T m, T v) { return v > m ? v : m; }, false);
    });
  });
}

void avg_pool(OpCall& c) {
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::AvgPool), y.dtype(), T, {
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
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPoolGrad), y.dtype(), T, {
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
  const ConvGeom g = as_3d(pool_geom(c, c.in[0].shape()));
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPoolGradGrad), y.dtype(), T, {
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
  const ConvGeom g = as_3d(pool_geom(c, c.spec(0).shape));
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in, g.c_in), so = strides_of(g, g.out, g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::AvgPoolGrad), y.dtype(), T, {
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
