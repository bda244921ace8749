// Eager 2-D pooling (MaxPool, AvgPool) and their gradients, as TF's CPU kernels compute them:
// a max pool keeps the first largest value (starting from the dtype's lowest, so NaN is
// skipped), its gradient goes to the window's first maximum (TF's argmax), and an average
// divides by the number of window elements inside the input (SAME padding counts none of its
// zeros). Windows are read in place in either layout; one output row per task.
#include <cstring>
#include <limits>

#include "ir/conv_geom.h"
#include "kernels/dispatch.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

// Element strides of a [N, H, W, C] (or [N, C, H, W]) tensor with these sizes.
struct Strides {
  int64_t n, c, h, w;
};
Strides strides_of(const ConvGeom& g, int64_t H, int64_t W, int64_t C) {
  return g.channels_first ? Strides{C * H * W, H * W, W, 1} : Strides{H * W * C, 1, W * C, C};
}

// The window of output position `o` along spatial dim i, clipped to the input: [lo, hi).
void window(const ConvGeom& g, int i, int64_t o, int64_t* lo, int64_t* hi) {
  const int64_t start = o * g.stride[i] - g.pad_lo[i];
  *lo = std::max<int64_t>(start, 0);
  *hi = std::min<int64_t>(start + g.k[i], g.in[i]);
}

// fn(n, oh, ow, c, h0, h1, w0, w1) for every output element, split over output rows.
template <class F>
void for_windows(const ConvGeom& g, F&& fn) {
  const int64_t rows = g.batch * g.out[0];
  parallel_for(rows, static_cast<double>(g.out[1] * g.c_in * g.k[0] * g.k[1]), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const int64_t n = r / g.out[0], oh = r % g.out[0];
      int64_t h0, h1;
      window(g, 0, oh, &h0, &h1);
      for (int64_t ow = 0; ow < g.out[1]; ++ow) {
        int64_t w0, w1;
        window(g, 1, ow, &w0, &w1);
        for (int64_t ch = 0; ch < g.c_in; ++ch) fn(n, oh, ow, ch, h0, h1, w0, w1);
      }
    }
  });
}

}  // namespace

void k_MaxPool(OpCall& c) {
  const ConvGeom g = pool_geom(c, c.in[0].shape());
  Tensor& y = c.alloc(0);
  const Strides si = strides_of(g, g.in[0], g.in[1], g.c_in), so = strides_of(g, g.out[0], g.out[1], g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPool), y.dtype(), T, {
    const T* x = c.in[0].data<T>();
    T* out = y.data<T>();
    for_windows(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ch, int64_t h0, int64_t h1, int64_t w0,
                       int64_t w1) {
      T m = std::numeric_limits<T>::lowest();
      const T* base = x + n * si.n + ch * si.c;
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) {
          const T v = base[h * si.h + w * si.w];
          if (v > m) m = v;
        }
      out[n * so.n + ch * so.c + oh * so.h + ow * so.w] = m;
    });
  });
}

void k_AvgPool(OpCall& c) {
  const ConvGeom g = pool_geom(c, c.in[0].shape());
  Tensor& y = c.alloc(0);
  const Strides si = strides_of(g, g.in[0], g.in[1], g.c_in), so = strides_of(g, g.out[0], g.out[1], g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::AvgPool), y.dtype(), T, {
    const T* x = c.in[0].data<T>();
    T* out = y.data<T>();
    for_windows(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ch, int64_t h0, int64_t h1, int64_t w0,
                       int64_t w1) {
      T sum = T(0);
      const T* base = x + n * si.n + ch * si.c;
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) sum += base[h * si.h + w * si.w];
      out[n * so.n + ch * so.c + oh * so.h + ow * so.w] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
    });
  });
}

// Gradients scatter into the input's windows, which overlap across output rows: each task
// takes whole images (batch elements), so no two tasks write one element.
template <class F>
void for_images(const ConvGeom& g, F&& fn) {
  parallel_for(g.batch, static_cast<double>(g.out[0] * g.out[1] * g.c_in * g.k[0] * g.k[1]),
               [&](int64_t s, int64_t e) {
                 for (int64_t n = s; n < e; ++n)
                   for (int64_t oh = 0; oh < g.out[0]; ++oh) {
                     int64_t h0, h1;
                     window(g, 0, oh, &h0, &h1);
                     for (int64_t ow = 0; ow < g.out[1]; ++ow) {
                       int64_t w0, w1;
                       window(g, 1, ow, &w0, &w1);
                       for (int64_t ch = 0; ch < g.c_in; ++ch) fn(n, oh, ow, ch, h0, h1, w0, w1);
                     }
                   }
               });
}

// MaxPoolGrad(orig_input, orig_output, grad): each output's gradient to its window's argmax,
// TF's: the first element, replaced by any later one that is larger.
void k_MaxPoolGrad(OpCall& c) {
  const ConvGeom g = pool_geom(c, c.in[0].shape());
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in[0], g.in[1], g.c_in), so = strides_of(g, g.out[0], g.out[1], g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::MaxPoolGrad), y.dtype(), T, {
    const T* x = c.in[0].data<T>();
    const T* gr = c.in[2].data<T>();
    T* dx = y.data<T>();
    for_images(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ch, int64_t h0, int64_t h1, int64_t w0,
                      int64_t w1) {
      if (h0 >= h1 || w0 >= w1) return;
      const int64_t base = n * si.n + ch * si.c;
      int64_t arg = base + h0 * si.h + w0 * si.w;
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) {
          const int64_t i = base + h * si.h + w * si.w;
          if (x[arg] < x[i]) arg = i;
        }
      dx[arg] += gr[n * so.n + ch * so.c + oh * so.h + ow * so.w];
    });
  });
}

// AvgPoolGrad(orig_input_shape, grad): each output's gradient spread evenly over its window.
void k_AvgPoolGrad(OpCall& c) {
  const ConvGeom g = pool_geom(c, c.spec(0).shape);
  Tensor& y = c.alloc(0);
  if (y.num_elements()) std::memset(y.raw(), 0, y.nbytes());
  const Strides si = strides_of(g, g.in[0], g.in[1], g.c_in), so = strides_of(g, g.out[0], g.out[1], g.c_in);
  JF_SWITCH_CLAIMED(op_types(OpId::AvgPoolGrad), y.dtype(), T, {
    const T* gr = c.in[1].data<T>();
    T* dx = y.data<T>();
    for_images(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t ch, int64_t h0, int64_t h1, int64_t w0,
                      int64_t w1) {
      if (h0 >= h1 || w0 >= w1) return;
      const T v = gr[n * so.n + ch * so.c + oh * so.h + ow * so.w] / static_cast<T>((h1 - h0) * (w1 - w0));
      const int64_t base = n * si.n + ch * si.c;
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) dx[base + h * si.h + w * si.w] += v;
    });
  });
}

}  // namespace jf
