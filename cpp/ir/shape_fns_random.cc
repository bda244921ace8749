// Shape inference for the Philox samplers (kernels/random.cc): the generator state is an
// int64[3], the seed of the stateless functions an int[2], with TF's messages.
#include "core/variables.h"
#include "ir/shape_fns.h"

namespace jf {

namespace {

Shape shape_from_input(OpCall& c, size_t i) {
  if (!is_int(c.in[i].dtype()))
    c.fail_type("shape must be int32 or int64, got ", dtype_name(c.in[i].dtype()));
  if (c.in[i].rank() != 1)
    c.fail("shape must be a vector of {int32,int64}, got shape ", c.in[i].shape().str());
  Shape out;
  if (c.has_value(i)) {
    for (int64_t d : c.in[i].to_int64s()) {
      if (d < 0) c.fail("Dimension ", d, " must be >= 0");
      out.push_back(d);
    }
  } else {
    int64_t n = c.in[i].shape()[0];
    if (n < 0) c.fail("the length of shape must be known when tracing, got shape ", c.in[i].shape().str());
    out.resize(n, -1);
    apply_partial(c, i, &out);
  }
  return out;
}

void need_state(const OpCall& c, size_t i) {
  if (c.in[i].dtype() != DType::kInt64)
    c.fail_type("the Philox state must be int64, got ", dtype_name(c.in[i].dtype()));
  const Shape& s = c.in[i].shape();
  if (s.rank() != 1 || (s[0] >= 0 && s[0] != 3))
    c.fail("the Philox state must have shape [3], got ", s.str());
}

}  // namespace

// StatelessRandomGetKeyCounter(seed): int64[3] (counter low, counter high, key).
void infer_random_key_counter(OpCall& c) {
  if (!c.claims(c.in[0].dtype()))
    c.fail_type("seed must be int32 or int64, got ", dtype_name(c.in[0].dtype()));
  const Shape& s = c.in[0].shape();
  if (s.rank() != 1 || (s[0] >= 0 && s[0] != 2)) c.fail("seed must have shape [2], not ", s.str());
  c.add_output(DType::kInt64, {3});
}

// A sampler (shape, state), attr dtype: floats for uniform and normals, ints for full-range.
void infer_philox_sampler(OpCall& c) {
  need_state(c, 1);
  DType dt = c.attrs.get<DType>("dtype", DType::kFloat32);
  bool ints = c.def->id == OpId::StatelessRandomUniformFullIntV2;
  if (ints ? !is_int(dt) : !is_float(dt) && !is_half(dt))
    c.fail_type("dtype must be ", ints ? "int32 or int64" : "a float (float16, bfloat16, float32 or float64)",
                ", got ", dtype_name(dt));
  c.add_output(dt, shape_from_input(c, 0));
}

// StatelessRandomUniformIntV2(shape, state, minval, maxval): ints in [minval, maxval).
void infer_philox_uniform_int(OpCall& c) {
  need_state(c, 1);
  DType dt = c.in[2].dtype();
  if (!is_int(dt) || c.in[3].dtype() != dt)
    c.fail_type("minval and maxval must be both int32 or both int64, got ", dtype_name(dt), " and ",
                dtype_name(c.in[3].dtype()));
  if (c.in[2].rank() != 0) c.fail("minval must be 0-D, got shape ", c.in[2].shape().str());
  if (c.in[3].rank() != 0) c.fail("maxval must be 0-D, got shape ", c.in[3].shape().str());
  if (c.has_value(2) && c.has_value(3)) {
    int64_t lo = c.in[2].to_int64s()[0], hi = c.in[3].to_int64s()[0];
    if (lo >= hi) c.fail("Need minval < maxval: ", lo, " >= ", hi);
  }
  c.add_output(dt, shape_from_input(c, 0));
}

// Gamma(alpha, state), Poisson(lam, state), Binomial(counts, probs, state): one sample per
// element of the (already broadcast) parameters, in their dtype.
void infer_philox_elementwise(OpCall& c) {
  size_t n = c.in.size();
  need_state(c, n - 1);
  DType dt = c.in[0].dtype();
  if (!c.claims(dt)) c.fail_type("the distribution's parameters must be a float type, got ", dtype_name(dt));
  for (size_t i = 1; i + 1 < n; ++i)
    if (c.in[i].dtype() != dt || c.in[i].shape() != c.in[0].shape())
      c.fail("the parameters must have one dtype and shape, got ", c.input_desc());
  c.add_output(dt, c.in[0].shape());
}

// StatelessShuffle(value, state): value with its first dim permuted.
void infer_philox_shuffle(OpCall& c) {
  need_state(c, 1);
  c.add_output(c.in[0].dtype(), c.in[0].shape());
}

// RandomIndexShuffle(index, seed, max_index): TF's raw op. seed is int[3] or a batch int[n, 3];
// index and max_index are scalars or [n] vectors of one int dtype; any batched input makes the
// output [n] (scalars broadcast), else it is a scalar.
void infer_index_shuffle(OpCall& c) {
  DType dt = c.in[0].dtype();
  if (!c.claims(dt)) c.fail_type("index must be int32, int64, uint32 or uint64, got ", dtype_name(dt));
  const DType st = c.in[1].dtype();
  if (!is_int(st) && st != DType::kUInt32 && st != DType::kUInt64)
    c.fail_type("seed must be int32, int64, uint32 or uint64, got ", dtype_name(st));
  if (c.in[2].dtype() != dt)
    c.fail_type("max_index must have index's dtype ", dtype_name(dt), ", got ", dtype_name(c.in[2].dtype()));
  const Shape& seed = c.in[1].shape();
  bool batched = false;
  int64_t n = -1;  // the batch size, -1 while unknown
  auto batch = [&](int64_t d, const char* what) {
    batched = true;
    if (d < 0) return;
    if (n >= 0 && d != n) c.fail("batch sizes differ: ", what, " has ", d, " elements, another input ", n);
    n = d;
  };
  if (c.in[0].rank() > 1) c.fail("index must be a scalar or a vector, got shape ", c.in[0].shape().str());
  if (c.in[2].rank() > 1) c.fail("max_index must be a scalar or a vector, got shape ", c.in[2].shape().str());
  if (c.in[0].rank() == 1) batch(c.in[0].shape()[0], "index");
  if (c.in[2].rank() == 1) batch(c.in[2].shape()[0], "max_index");
  const bool seed_ok = (seed.rank() == 1 && (seed[0] < 0 || seed[0] == 3)) ||
                       (seed.rank() == 2 && (seed[1] < 0 || seed[1] == 3));
  if (!seed_ok) c.fail("Seed must be a vector of size [3] or a matrix of size [n, 3] but got ", seed.str());
  if (seed.rank() == 2) batch(seed[0], "seed");
  if (batched)
    c.add_output(dt, Shape{n});
  else
    c.add_output(dt, Shape{});
}

// RandomPhiloxState(), attrs seed, seed2: a fresh int64[3] state per run.
void infer_random_philox_state(OpCall& c) { c.add_output(DType::kInt64, {3}); }

// RngReadAndSkip([delta]), attrs var_id and delta: the state variable's value before the skip
// of `delta` blocks (the int64 scalar input when given, else the attr).
void infer_rng_read_and_skip(OpCall& c) {
  if (c.in.size() > 1) c.fail("takes at most one input (delta), got ", c.in.size());
  if (c.in.size() == 1 && (c.in[0].dtype() != DType::kInt64 || c.in[0].rank() != 0))
    c.fail("delta must be an int64 scalar, got ", dtype_name(c.in[0].dtype()), c.in[0].shape().str());
  DType dt;
  Shape s;
  std::string name;
  variable_info(c.attrs.get<int64_t>("var_id", 0), &dt, &s, &name);
  if (dt != DType::kInt64 || s != Shape{3})
    c.fail("a Philox generator state is an int64[3] variable, '", name, "' is ", dtype_name(dt), s.str());
  c.add_output(DType::kInt64, {3});
}

}  // namespace jf
