// Stateful random kernels. Each (seed, seed2) pair owns a stream whose position advances with
// every run, so repeated calls differ while `jf.random.set_seed` makes whole programs
// reproducible (TF's model). Values come from a counter-based hash, so blocks can be filled
// in parallel and the result does not depend on the thread count.
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "ir/op_registry.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

std::mutex g_mu;
using StreamKey = std::tuple<int64_t, int64_t, int64_t>;  // seed, seed2, graph node stream
std::map<StreamKey, uint64_t>& streams() {
  static auto* m = new std::map<StreamKey, uint64_t>();
  return *m;
}

inline uint64_t mix(uint64_t z) {  // splitmix64 finaliser
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Reserves n draws from the stream of (seed, seed2) and returns its key and start position.
uint64_t reserve(const OpCall& c, int64_t n, uint64_t* key) {
  int64_t s1 = c.attrs.get<int64_t>("seed", 0), s2 = c.attrs.get<int64_t>("seed2", 0);
  int64_t node = c.attrs.get<int64_t>("_stream_id", 0);
  *key = mix(mix(static_cast<uint64_t>(s1)) ^ static_cast<uint64_t>(s2));
  std::lock_guard<std::mutex> lock(g_mu);
  uint64_t& pos = streams()[StreamKey{s1, s2, node}];
  uint64_t start = pos;
  pos += static_cast<uint64_t>(n);
  return start;
}

template <class T>
T uniform01(uint64_t key, uint64_t i) {
  uint64_t r = mix(key ^ mix(i));
  if constexpr (std::is_same_v<T, float>)
    return static_cast<float>(r >> 40) * (1.0f / 16777216.0f);
  else
    return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
}

template <bool kNormal>
void random_kernel(OpCall& c) {
  Tensor& y = c.alloc(0);
  int64_t n = y.num_elements();
  uint64_t key;
  uint64_t start = reserve(c, 2 * n, &key);
  JF_SWITCH_FLOAT(y.dtype(), T, {
    T* o = y.data<T>();
    parallel_for(n, 20, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        uint64_t at = start + 2 * static_cast<uint64_t>(i);
        if (kNormal) {  // Box-Muller on two uniforms; u1 in (0, 1]
          double u1 = 1.0 - uniform01<double>(key, at), u2 = uniform01<double>(key, at + 1);
          o[i] = static_cast<T>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
        } else {
          o[i] = uniform01<T>(key, at);
        }
      }
    });
  });
}

}  // namespace

void k_RandomUniform(OpCall& c) { random_kernel<false>(c); }
void k_RandomStandardNormal(OpCall& c) { random_kernel<true>(c); }

void reset_random_streams() {
  std::lock_guard<std::mutex> lock(g_mu);
  streams().clear();
}

}  // namespace jf
