// Shape inference for Bitcast: TF's rule for reading the same bytes as another dtype.
#include <string>

#include "ir/op_registry.h"

namespace jf {

namespace {
// TF's Bitcast attrs take every numeric dtype (neither bool nor string); its error names the
// attr and lists them.
void check_bitcast_dtype(const OpCall& c, const char* attr, DType d) {
  if (has_type(kEveryNumericType, d)) return;
  c.fail("Value for attr '", attr, "' of ", dtype_name(d),
         " is not in the list of allowed values: bfloat16, half, float, double, int64, int32, uint8, uint16, "
         "uint32, uint64, int8, int16, complex64, complex128");
}
}  // namespace

// A wider output consumes the last dim (which must be the size ratio); a narrower one appends
// a dim of the ratio; equal sizes keep the shape.
void infer_bitcast(OpCall& c) {
  DType from = c.in[0].dtype();
  DType to = c.attrs.get<DType>("type", DType::kInvalid);
  check_bitcast_dtype(c, "T", from);
  check_bitcast_dtype(c, "type", to);
  const int64_t in_size = static_cast<int64_t>(dtype_size(from)),
                out_size = static_cast<int64_t>(dtype_size(to));
  Shape s = c.in[0].shape();
  if (in_size == out_size) {
    c.add_output(to, s);
  } else if (in_size > out_size) {
    s.push_back(in_size / out_size);
    c.add_output(to, s);
  } else {
    const int64_t ratio = out_size / in_size;
    if (s.rank() == 0 || (s[s.rank() - 1] >= 0 && s[s.rank() - 1] != ratio))
      c.fail("Cannot bitcast from ", in_size, " to ", out_size);
    Shape out;
    for (int i = 0; i + 1 < s.rank(); ++i) out.push_back(s[i]);
    c.add_output(to, out);
  }
}

}  // namespace jf
