// Eager 2-D pooling (MaxPool, AvgPool) and their gradients, as TF's CPU kernels compute them:
// a max pool keeps the first largest value (starting from the dtype's lowest, so NaN is
// skipped), its gradient goes to the window's first maximum (TF's argmax), and an average
// divides by the number of window elements inside the input (SAME padding counts none of its
// zeros). Windows are read in place in either layout; one output row per task.
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

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

// fn(n, oh, ow, h0, h1, w0, w1, cs) for every output position (all its channels), split over
// output rows; cs is the channel stride, a compile-time 1 for NHWC so that the channel loops
// vectorize.
template <class F>
void over_channels(int64_t in_stride, int64_t out_stride, F&& fn) {
  if (in_stride == 1 && out_stride == 1)
    fn(std::integral_constant<int64_t, 1>{}, std::integral_constant<int64_t, 1>{});
  else
    fn(in_stride, out_stride);
}

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
        fn(n, oh, ow, h0, h1, w0, w1);
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
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_windows(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
        T* o = out + n * so.n + oh * so.h + ow * so.w;
        for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] = std::numeric_limits<T>::lowest();
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const T* xp = x + n * si.n + h * si.h + w * si.w;
            for (int64_t ch = 0; ch < g.c_in; ++ch)
              o[ch * co] = xp[ch * cs] > o[ch * co] ? xp[ch * cs] : o[ch * co];
          }
      });
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
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_windows(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
        T* o = out + n * so.n + oh * so.h + ow * so.w;
        for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] = T(0);
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const T* xp = x + n * si.n + h * si.h + w * si.w;
            for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] += xp[ch * cs];
          }
        const T count = static_cast<T>((h1 - h0) * (w1 - w0));
        for (int64_t ch = 0; ch < g.c_in; ++ch) o[ch * co] /= count;
      });
    });
  });
}

// Gradients scatter into the input's windows, which overlap across output rows: each task
// takes whole images (batch elements), so no two tasks write one element. fn(n, oh, ow, h0,
// h1, w0, w1, scratch) with `scratch` a task's own buffer of `scratch_size` bytes.
template <class F>
void for_images(const ConvGeom& g, size_t scratch_size, F&& fn) {
  parallel_for(g.batch, static_cast<double>(g.out[0] * g.out[1] * g.c_in * g.k[0] * g.k[1]),
               [&](int64_t s, int64_t e) {
                 std::vector<char> scratch(scratch_size);
                 for (int64_t n = s; n < e; ++n)
                   for (int64_t oh = 0; oh < g.out[0]; ++oh) {
                     int64_t h0, h1;
                     window(g, 0, oh, &h0, &h1);
                     for (int64_t ow = 0; ow < g.out[1]; ++ow) {
                       int64_t w0, w1;
                       window(g, 1, ow, &w0, &w1);
                       if (h0 < h1 && w0 < w1) fn(n, oh, ow, h0, h1, w0, w1, scratch.data());
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
    const size_t scratch = static_cast<size_t>(g.c_in) * (sizeof(T) + sizeof(int64_t));
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_images(
          g, scratch,
          [&](int64_t n, int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1, char* buf) {
            // Per channel: the best value and its offset in the image, from the window's first element.
            int64_t* arg = reinterpret_cast<int64_t*>(buf);
            T* best = reinterpret_cast<T*>(buf + g.c_in * sizeof(int64_t));
            const T* img = x + n * si.n;
            const int64_t first = h0 * si.h + w0 * si.w;
            for (int64_t ch = 0; ch < g.c_in; ++ch) {
              arg[ch] = first + ch * cs;
              best[ch] = img[first + ch * cs];
            }
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) {
                const int64_t base = h * si.h + w * si.w;
                if (base == first) continue;
                for (int64_t ch = 0; ch < g.c_in; ++ch)
                  if (best[ch] < img[base + ch * cs]) {
                    best[ch] = img[base + ch * cs];
                    arg[ch] = base + ch * cs;
                  }
              }
            const T* gp = gr + n * so.n + oh * so.h + ow * so.w;
            T* dimg = dx + n * si.n;
            for (int64_t ch = 0; ch < g.c_in; ++ch) dimg[arg[ch]] += gp[ch * co];
          });
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
    over_channels(si.c, so.c, [&](auto cs, auto co) {
      for_images(
          g, 0,
          [&](int64_t n, int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1, char*) {
            const T count = static_cast<T>((h1 - h0) * (w1 - w0));
            const T* gp = gr + n * so.n + oh * so.h + ow * so.w;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) {
                T* d = dx + n * si.n + h * si.h + w * si.w;
                for (int64_t ch = 0; ch < g.c_in; ++ch) d[ch * cs] += gp[ch * co] / count;
              }
          });
    });
  });
}

}  // namespace jf
