// Shape and dtype inference for the string ops (TF's shape functions): StringJoin broadcasts
// scalars against inputs of one shape, the others keep their input's shape or give a scalar.
#include "ir/shape_fns.h"

namespace jf {

namespace {
void check_string_input(OpCall& c, size_t i) {
  if (c.in[i].dtype() != DType::kString)
    c.fail_type("input #", i, "(zero-based) was expected to be a string tensor but is a ",
                dtype_name(c.in[i].dtype()), " tensor");
}
}  // namespace

void infer_string_join(OpCall& c) {
  Shape out;
  bool have = false;
  for (size_t i = 0; i < c.in.size(); ++i) {
    check_string_input(c, i);
    const Shape& s = c.in[i].shape();
    if (s.rank() == 0) continue;
    if (!have) {
      out = s;
      have = true;
      continue;
    }
    bool ok = s.rank() == out.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      if (out[d] < 0) out[d] = s[d];
      ok = s[d] < 0 || s[d] == out[d];
    }
    if (!ok) c.fail("Input shapes do not match: ", out.str(), " vs. ", s.str());
  }
  c.add_output(DType::kString, out);
}

void infer_string_length(OpCall& c) {
  check_string_input(c, 0);
  std::string unit = c.attrs.get<std::string>("unit", "BYTE");
  if (unit != "BYTE" && unit != "UTF8_CHAR")
    c.fail("Value for attr 'unit' of \"", unit,
           "\" is not in the list of allowed values: \"BYTE\", \"UTF8_CHAR\"");
  c.add_output(DType::kInt32, c.in[0].shape());
}

void infer_string_format(OpCall& c) {
  for (size_t i = 0; i < c.in.size(); ++i)
    if (!c.claims(c.in[i].dtype())) c.check_claimed(i);
  c.add_output(DType::kString, Shape{});
}

void infer_as_string(OpCall& c) {
  c.check_claimed(0);
  c.add_output(DType::kString, c.in[0].shape());
}

void infer_string_to_number(OpCall& c) {
  check_string_input(c, 0);
  DType out = c.attrs.get<DType>("out_type", DType::kFloat32);
  if (!is_numeric(out) && out != DType::kUInt32 && out != DType::kUInt64)
    c.fail_type("Value for attr 'out_type' of ", dtype_name(out),
                " is not in the list of allowed values: float, double, int32, int64, uint32, uint64");
  c.add_output(out, c.in[0].shape());
}

void infer_string_to_hash_bucket(OpCall& c) {
  check_string_input(c, 0);
  const int64_t buckets = c.attrs.get<int64_t>("num_buckets", 0);
  if (buckets < 1) c.fail("Value for attr 'num_buckets' of ", buckets, " must be at least minimum 1");
  if (c.def->id == OpId::StringToHashBucketStrong && c.attrs.get<std::vector<int64_t>>("key", {}).size() != 2)
    c.fail("Key must have 2 elements");
  c.add_output(DType::kInt64, c.in[0].shape());
}

}  // namespace jf
