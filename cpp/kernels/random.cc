// Random kernels, all on one counter-based generator, Philox 4x32-10 (kernels/philox.h). The
// stateless samplers compute each element from (state, index), so blocks fill in parallel and
// the result does not depend on the thread count; the stateful ops (TF's RandomUniform,
// RandomStandardNormal) keep, per (seed, seed2) and graph node, a stream whose counter
// advances with every run, so repeated calls differ while `jf.random.set_seed` makes whole
// programs reproducible (TF's model).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "core/variables.h"
#include "ir/op_registry.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

using philox::State;

std::mutex g_mu;
using StreamKey = std::tuple<int64_t, int64_t, int64_t>;  // seed, seed2, graph node stream
std::map<StreamKey, uint64_t>& streams() {
  static auto* m = new std::map<StreamKey, uint64_t>();
  return *m;
}

// Advances the stream of the op's (seed, seed2) by `blocks` and returns the state before:
// key seed, counter (position, seed2), as TF's PhiloxRandom(seed, seed2).
State reserve(const OpCall& c, uint64_t blocks) {
  int64_t s1 = c.attrs.get<int64_t>("seed", 0), s2 = c.attrs.get<int64_t>("seed2", 0);
  int64_t node = c.attrs.get<int64_t>("_stream_id", 0);
  std::lock_guard<std::mutex> lock(g_mu);
  uint64_t& pos = streams()[StreamKey{s1, s2, node}];
  State s{pos, static_cast<uint64_t>(s2), static_cast<uint64_t>(s1)};
  pos += blocks;
  return s;
}

State state_input(const OpCall& c, size_t i) {
  const int64_t* v = c.in[i].data<int64_t>();
  return {static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1]), static_cast<uint64_t>(v[2])};
}

template <class F>
void fill(Tensor& y, F&& f) {
  JF_SWITCH_NUMERIC(y.dtype(), T, {
    T* o = y.data<T>();
    parallel_for(y.num_elements(), 40, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = f(T{}, static_cast<uint64_t>(i));
    });
  });
}

// float16/bfloat16 outputs, as TF draws them: one stream word per output, as for float32.
// Uniform takes TF's Uint16ToHalf / Uint16ToGfloat16 (the word's low 10 or 7 bits as the
// mantissa of 1.m, less 1: exact in the type); the normals are the float32 sample rounded once.
template <class F>
bool fill_half(Tensor& y, F&& f) {  // f(bfloat, i) -> the float value of output i
  const bool bf = y.dtype() == DType::kBFloat16;
  if (y.dtype() != DType::kFloat16 && !bf) return false;
  parallel_for(y.num_elements(), 40, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float v = f(bf, static_cast<uint64_t>(i));
      if (bf)
        y.data<bfloat16>()[i] = bfloat16(v);
      else
        y.data<float16>()[i] = float16(v);
    }
  });
  return true;
}

float half_uniform(const State& s, bool bf, uint64_t i) {
  const uint32_t bits = bf ? 7 : 10, w = philox::word(s, i);
  return static_cast<float>(w & ((1u << bits) - 1)) / static_cast<float>(1u << bits);
}

// Words of one element's own stretch of the stream (256 blocks on from element i * 256, as
// TF reserves for samplers that draw a variable number of words), read in order.
class Words {
 public:
  Words(const State& s, uint64_t i) : s_(s), next_(i * 256) {}
  uint32_t next() {
    if (lane_ == 4) cur_ = s_.at(next_++), lane_ = 0;
    return cur_[lane_++];
  }
  double uniform() {  // [0, 1)
    uint32_t a = next(), b = next();
    return philox::to_double(a, b);
  }
  double normal() {
    uint32_t w[4] = {next(), next(), next(), next()};
    double z0, z1;
    philox::box_muller(w[0], w[1], w[2], w[3], &z0, &z1);
    return z0;
  }

 private:
  State s_;
  uint64_t next_;
  int lane_ = 4;
  philox::Block cur_{};
};

// Marsaglia and Tsang's method; alpha < 1 boosted by u^(1/alpha).
double gamma_sample(Words& w, double alpha) {
  if (!(alpha > 0)) return std::nan("");
  double boost = 1;
  if (alpha < 1) {
    boost = std::pow(1 - w.uniform(), 1 / alpha);
    alpha += 1;
  }
  const double d = alpha - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x = w.normal(), v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = 1 - w.uniform();
    if (u < 1 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v)))
      return d * v * boost;
  }
}

// Knuth's product of uniforms for small rates, Hoermann's PTRS above 10 (as TF).
double poisson_sample(Words& w, double lam) {
  if (std::isnan(lam) || lam < 0) return std::nan("");
  if (lam == 0) return 0;
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = 1;
    for (double k = 0;; ++k) {
      prod *= w.uniform();
      if (prod <= limit) return k;
    }
  }
  const double log_lam = std::log(lam), b = 0.931 + 2.53 * std::sqrt(lam), a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), v_r = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double u = w.uniform() - 0.5, v = w.uniform(), us = 0.5 - std::fabs(u);
    double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    double s = std::log(v * inv_alpha / (a / (us * us) + b));
    if (s <= -lam + k * log_lam - std::lgamma(k + 1)) return k;
  }
}

double stirling_tail(double k) {  // log k! - Stirling's approximation of it
  static const double kTable[] = {0.08106146679532726, 0.04134069595540929, 0.02767792568499834,
                                  0.02079067210376509, 0.01664469118982119, 0.01387612882307075,
                                  0.01189670994589177, 0.01041126526197209, 0.009255462182712733,
                                  0.008330563433362871};
  if (k <= 9) return kTable[static_cast<int>(k)];
  double kp1 = k + 1, kp1sq = kp1 * kp1;
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / kp1;
}

// Geometric waiting times for n * p < 10, Hoermann's BTRS above (as TF).
double binomial_sample(Words& w, double n, double p) {
  if (std::isnan(n) || std::isnan(p) || n < 0 || p < 0 || p > 1) return std::nan("");
  if (n == 0 || p == 0) return 0;
  if (p == 1) return n;
  if (p > 0.5) return n - binomial_sample(w, n, 1 - p);
  if (n * p < 10) {
    const double logq = std::log1p(-p);
    double sum = 0, k = 0;
    for (;;) {
      sum += std::ceil(std::log(1 - w.uniform()) / logq);
      if (sum > n) return k;
      ++k;
    }
  }
  const double sd = std::sqrt(n * p * (1 - p)), b = 1.15 + 2.53 * sd, a = -0.0873 + 0.0248 * b + 0.01 * p;
  const double c = n * p + 0.5, v_r = 0.92 - 4.2 / b, r = p / (1 - p), alpha = (2.83 + 5.1 / b) * sd;
  const double m = std::floor((n + 1) * p);
  for (;;) {
    double u = w.uniform() - 0.5, v = w.uniform(), us = 0.5 - std::fabs(u);
    double k = std::floor((2 * a / us + b) * u + c);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || k > n) continue;
    v = std::log(v * alpha / (a / (us * us) + b));
    double bound = (m + 0.5) * std::log((m + 1) / (r * (n - m + 1))) +
                   (n + 1) * std::log((n - m + 1) / (n - k + 1)) +
                   (k + 0.5) * std::log(r * (n - k + 1) / (k + 1)) + stirling_tail(m) + stirling_tail(n - m) -
                   stirling_tail(k) - stirling_tail(n - k);
    if (v <= bound) return k;
  }
}

template <class F>
void per_element(OpCall& c, F&& sample) {
  Tensor& y = c.alloc(0);
  const State s = state_input(c, c.in.size() - 1);
  if (y.dtype() == DType::kFloat16 || y.dtype() == DType::kBFloat16) {  // computed in double, as TF
    const bool bf = y.dtype() == DType::kBFloat16;
    auto param = [&](size_t k, int64_t i) -> double {
      return bf ? static_cast<float>(c.in[k].data<bfloat16>()[i])
                : static_cast<float>(c.in[k].data<float16>()[i]);
    };
    fill_half(y, [&](bool, uint64_t i) {
      Words w(s, i);
      const int64_t j = static_cast<int64_t>(i);
      return static_cast<float>(sample(w, param(0, j), c.in.size() > 2 ? param(1, j) : 0.0));
    });
    return;
  }
  JF_SWITCH_FLOAT(y.dtype(), T, {
    T* o = y.data<T>();
    const T* a = c.in[0].data<T>();
    const T* b = c.in.size() > 2 ? c.in[1].data<T>() : nullptr;
    parallel_for(y.num_elements(), 200, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        Words w(s, static_cast<uint64_t>(i));
        o[i] = static_cast<T>(sample(w, static_cast<double>(a[i]), b ? static_cast<double>(b[i]) : 0.0));
      }
    });
  });
}

// TF's RandomIndexShuffle (its kernels/random_index_shuffle.cc): a 4-round Simon cipher on
// blocks of 2w bits, walked until it lands in [0, max_index] (cycle walking keeps it a
// bijection). w is half of TF's block size, ceil(log2(max_index)) made even and at least 16
// bits, widened where TF's block cannot hold max_index itself (a power of two: TF's result is
// then no bijection).
int simon_width(uint64_t max_index) {
  int b = max_index <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(static_cast<double>(max_index))));
  b = std::max(b + b % 2, 16);
  while (b < 64 && max_index >= (uint64_t{1} << b)) b += 2;
  return b / 2;
}

struct Simon {
  int w;
  uint64_t mask;
  uint64_t rk[4];
  uint64_t rotl(uint64_t x, int r) const { return ((x << r) | (x >> (w - r))) & mask; }
  uint64_t rotr(uint64_t x, int r) const { return ((x >> r) | (x << (w - r))) & mask; }
  uint64_t f(uint64_t x) const { return (rotl(x, 1) & rotl(x, 8)) ^ rotl(x, 2); }
  uint64_t encrypt(uint64_t x) const {
    uint64_t left = (x >> w) & mask, right = x & mask;
    for (int i = 0; i < 4; i += 2) {
      left ^= f(right) ^ rk[i];
      right ^= f(left) ^ rk[i + 1];
    }
    return left << w | right;
  }
};

// TF keys the cipher with the low w bits of the seed's three words (seed[0] is its wrapper's
// constant pad), so seeds differing only above them give one permutation there. Such a seed is
// keyed here by a Philox block of all its 192 bits instead; a seed whose words fit keeps TF's
// key, and so TF's permutation.
Simon simon_for(const uint64_t seed[3], uint64_t max_index) {
  Simon s;
  s.w = simon_width(max_index);
  s.mask = (uint64_t{1} << s.w) - 1;
  const uint64_t lim = uint64_t{1} << std::min(s.w, 32);
  if (seed[0] < (uint64_t{1} << 32) && seed[1] < lim && seed[2] < lim) {
    for (int i = 0; i < 3; ++i) s.rk[i] = seed[i] & s.mask;
  } else {
    auto lo = [](uint64_t v) { return static_cast<uint32_t>(v); };
    auto hi = [](uint64_t v) { return static_cast<uint32_t>(v >> 32); };
    philox::Block b =
        philox::block({lo(seed[0]), hi(seed[0]), lo(seed[1]), hi(seed[1])}, {lo(seed[2]), hi(seed[2])});
    for (int i = 0; i < 3; ++i) s.rk[i] = b[i] & s.mask;
  }
  // TF's key schedule for 4 rounds: one word past the three given (z's first bit is 1).
  s.rk[3] = (uint64_t{0xfffffffc} & s.mask) ^ 1 ^ s.rk[0] ^ s.rotr(s.rk[2], 3) ^ s.rotr(s.rk[2], 4);
  return s;
}

}  // namespace

void k_RandomUniform(OpCall& c) {
  Tensor& y = c.alloc(0);
  const State s = reserve(c, static_cast<uint64_t>(y.num_elements()) * 256);
  if (fill_half(y, [&](bool bf, uint64_t i) { return half_uniform(s, bf, i); })) return;
  fill(y, [&](auto t, uint64_t i) -> decltype(t) {
    if constexpr (std::is_floating_point_v<decltype(t)>) return philox::uniform<decltype(t)>(s, i);
    return 0;
  });
}

void k_RandomStandardNormal(OpCall& c) {
  Tensor& y = c.alloc(0);
  const State s = reserve(c, static_cast<uint64_t>(y.num_elements()) * 256);
  if (fill_half(y, [&](bool, uint64_t i) { return philox::normal<float>(s, i); })) return;
  fill(y, [&](auto t, uint64_t i) -> decltype(t) {
    if constexpr (std::is_floating_point_v<decltype(t)>) return philox::normal<decltype(t)>(s, i);
    return 0;
  });
}

// A fresh state per run for the stateful samplers composed of stateless ones: each run owns
// 2^40 blocks of the (seed, seed2) stream.
void k_RandomPhiloxState(OpCall& c) {
  State s = reserve(c, uint64_t{1} << 40);
  Tensor& y = c.alloc(0);
  int64_t* o = y.data<int64_t>();
  o[0] = static_cast<int64_t>(s.ctr_lo), o[1] = static_cast<int64_t>(s.ctr_hi),
  o[2] = static_cast<int64_t>(s.key);
}

void k_StatelessRandomGetKeyCounter(OpCall& c) {
  std::vector<int64_t> seed = c.in[0].to_int64s();
  State s = philox::from_seed(static_cast<uint64_t>(seed[0]), static_cast<uint64_t>(seed[1]));
  int64_t* o = c.alloc(0).data<int64_t>();
  o[0] = static_cast<int64_t>(s.ctr_lo), o[1] = static_cast<int64_t>(s.ctr_hi),
  o[2] = static_cast<int64_t>(s.key);
}

void k_StatelessRandomUniformV2(OpCall& c) {
  const State s = state_input(c, 1);
  Tensor& y = c.alloc(0);
  if (fill_half(y, [&](bool bf, uint64_t i) { return half_uniform(s, bf, i); })) return;
  fill(y, [&](auto t, uint64_t i) -> decltype(t) {
    if constexpr (std::is_floating_point_v<decltype(t)>) return philox::uniform<decltype(t)>(s, i);
    return 0;
  });
}

void k_StatelessRandomNormalV2(OpCall& c) {
  const State s = state_input(c, 1);
  Tensor& y = c.alloc(0);
  if (fill_half(y, [&](bool, uint64_t i) { return philox::normal<float>(s, i); })) return;
  fill(y, [&](auto t, uint64_t i) -> decltype(t) {
    if constexpr (std::is_floating_point_v<decltype(t)>) return philox::normal<decltype(t)>(s, i);
    return 0;
  });
}

void k_StatelessTruncatedNormalV2(OpCall& c) {
  const State s = state_input(c, 1);
  Tensor& y = c.alloc(0);
  if (fill_half(y, [&](bool, uint64_t i) { return philox::truncated_normal<float>(s, i); })) return;
  fill(y, [&](auto t, uint64_t i) -> decltype(t) {
    if constexpr (std::is_floating_point_v<decltype(t)>) return philox::truncated_normal<decltype(t)>(s, i);
    return 0;
  });
}

void k_StatelessRandomUniformFullIntV2(OpCall& c) {
  const State s = state_input(c, 1);
  fill(c.alloc(0), [&](auto t, uint64_t i) -> decltype(t) {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) return static_cast<T>(philox::bits<std::make_unsigned_t<T>>(s, i));
    return 0;
  });
}

void k_StatelessRandomUniformIntV2(OpCall& c) {
  const State s = state_input(c, 1);
  // Inference checks known values; a traced range arrives here unchecked (TF's kernel check).
  const int64_t lo = c.in[2].to_int64s()[0], hi = c.in[3].to_int64s()[0];
  if (lo >= hi) c.fail("Need minval < maxval: ", lo, " >= ", hi);
  fill(c.alloc(0), [&](auto t, uint64_t i) -> decltype(t) {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>)
      return philox::uniform_int<T>(s, i, c.in[2].data<T>()[0], c.in[3].data<T>()[0]);
    return 0;
  });
}

void k_StatelessRandomGammaV3(OpCall& c) {
  per_element(c, [](Words& w, double alpha, double) { return gamma_sample(w, alpha); });
}
void k_StatelessRandomPoisson(OpCall& c) {
  per_element(c, [](Words& w, double lam, double) { return poisson_sample(w, lam); });
}
void k_StatelessRandomBinomial(OpCall& c) {
  per_element(c, [](Words& w, double n, double p) { return binomial_sample(w, std::floor(n), p); });
}

// Fisher-Yates over the first dim, j uniform in [0, i] from 64 bits of the stream.
void k_StatelessShuffle(OpCall& c) {
  const Tensor& x = c.in[0];
  Tensor& y = c.alloc(0);
  if (y.num_elements() == 0) return;
  const bool strings = is_string(x);
  copy_elements(strings, y.data<char>(), x.data<char>(), x.nbytes());
  if (x.rank() == 0) return;
  const State s = state_input(c, 1);
  const int64_t n = x.shape()[0];
  const size_t row = x.nbytes() / static_cast<size_t>(n);
  std::vector<char> tmp(strings ? 0 : row);
  char* p = y.data<char>();
  for (int64_t i = n - 1; i > 0; --i) {
    uint64_t j = philox::bits<uint64_t>(s, static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1);
    if (static_cast<int64_t>(j) == i) continue;
    if (strings) {  // string objects swap their owned characters
      std::swap_ranges(reinterpret_cast<std::string*>(p + i * row),
                       reinterpret_cast<std::string*>(p + (i + 1) * row),
                       reinterpret_cast<std::string*>(p + j * row));
      continue;
    }
    std::memcpy(tmp.data(), p + i * row, row);
    std::memcpy(p + i * row, p + j * row, row);
    std::memcpy(p + j * row, tmp.data(), row);
  }
}

// Inputs broadcast over the batch (inference checked the shapes): seed [3] or [n, 3], index
// and max_index scalars or [n]. int32 seeds are read as TF reads them, as uint32.
void k_RandomIndexShuffle(OpCall& c) {
  std::vector<int64_t> idx = c.in[0].to_int64s(), seed = c.in[1].to_int64s(), top = c.in[2].to_int64s();
  const bool seed32 = c.in[1].dtype() == DType::kInt32 || c.in[1].dtype() == DType::kUInt32;
  Tensor& y = c.alloc(0);
  const int64_t n = y.num_elements();
  // uint64 values past INT64_MAX come back from to_int64s with their bits kept
  const bool unsigned_index = y.dtype() == DType::kUInt32 || y.dtype() == DType::kUInt64;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t x = idx[idx.size() == 1 ? 0 : i], max_index = top[top.size() == 1 ? 0 : i];
    if (unsigned_index) {
      if (static_cast<uint64_t>(max_index) < static_cast<uint64_t>(x))
        c.fail("max_index must be >= index, but ", static_cast<uint64_t>(max_index), " < ",
               static_cast<uint64_t>(x));
    } else {
      if (max_index < 0) c.fail("max_index must be >= 0 but was ", max_index);
      if (x < 0) c.fail("index must be >= 0 but was ", x);
      if (max_index < x) c.fail("max_index must be >= index, but ", max_index, " < ", x);
    }
    const int64_t* sw = seed.data() + (seed.size() == 3 ? 0 : 3 * i);
    uint64_t words[3];
    for (int k = 0; k < 3; ++k)
      words[k] = seed32 ? static_cast<uint32_t>(sw[k]) : static_cast<uint64_t>(sw[k]);
    uint64_t v = 0;
    if (max_index != 0) {
      const Simon s = simon_for(words, static_cast<uint64_t>(max_index));
      v = static_cast<uint64_t>(x);
      do v = s.encrypt(v);
      while (v > static_cast<uint64_t>(max_index));
    }
    switch (y.dtype()) {
      case DType::kInt32:
        y.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DType::kUInt32:
        y.data<uint32_t>()[i] = static_cast<uint32_t>(v);
        break;
      case DType::kUInt64:
        y.data<uint64_t>()[i] = v;
        break;
      default:
        y.data<int64_t>()[i] = static_cast<int64_t>(v);
    }
  }
}

// Returns a Generator's state and advances its 128-bit counter by `delta` blocks in one step
// (as unsigned 128-bit addition: the carry reaches the high word, a negative delta wraps as TF's),
// so a draw's state read never waits on the previous draw's write (TF's RngReadAndSkip).
void k_RngReadAndSkip(OpCall& c) {
  // A draw of a traced shape passes its block count as an input (int64 scalar), else the attr.
  const uint64_t delta =
      static_cast<uint64_t>(c.in.empty() ? c.attrs.get<int64_t>("delta", 0) : c.in[0].to_int64s()[0]);
  Tensor old;
  update_variable(
      c.attrs.get<int64_t>("var_id", 0),
      [&](const Tensor& cur) {
        old = cur;
        Tensor next = Tensor::empty(DType::kInt64, cur.shape());
        const int64_t* v = cur.data<int64_t>();
        int64_t* o = next.data<int64_t>();
        uint64_t lo = static_cast<uint64_t>(v[0]) + delta;
        o[0] = static_cast<int64_t>(lo);
        o[1] = static_cast<int64_t>(static_cast<uint64_t>(v[1]) + (lo < delta ? 1 : 0));
        o[2] = v[2];
        return next;
      },
      c.name());
  c.results[0] = old;
}

void reset_random_streams() {
  std::lock_guard<std::mutex> lock(g_mu);
  streams().clear();
}

}  // namespace jf
