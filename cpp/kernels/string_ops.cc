// String kernels: StringJoin, StringLength and string comparisons here; StringFormat, AsString
// and StringToNumber through the Python hook (kernels/strings.h).
#include <vector>

#include "ir/op_registry.h"
#include "kernels/strings.h"

namespace jf {

namespace {
StringKernelFn g_string_kernel = nullptr;

// Element i of the output of shape `out`, read from `in` (numpy broadcasting: its dims of
// size 1, and the leading dims it lacks, repeat).
int64_t broadcast_index(const Shape& out, const Shape& in, int64_t i) {
  int64_t idx = 0, stride = 1;
  for (int d = out.rank() - 1, e = in.rank() - 1; d >= 0; --d, --e) {
    int64_t pos = i % out[d];
    i /= out[d];
    if (e < 0) continue;
    if (in[e] != 1) idx += pos * stride;
    stride *= in[e];
  }
  return idx;
}

// The one output, of the shape the inputs have now (the inferred spec may have unknown dims).
Tensor& result(OpCall& c, DType dt, const Shape& s) {
  c.check_num_elements(s);
  c.results.resize(1);
  c.results[0] = Tensor::empty(dt, s);
  return c.results[0];
}

void run_python(OpCall& c) {
  if (!g_string_kernel) throw Error(ErrorKind::kUnknown, str_cat(c.name(), ": Python is not available"));
  g_string_kernel(c);
  if (c.results.size() != c.num_outputs()) c.fail("the string kernel returned ", c.results.size(), " values");
  for (size_t i = 0; i < c.results.size(); ++i)
    if (c.results[i].dtype() != c.spec(i).dtype || c.results[i].is_symbolic() || !c.results[i].buffer())
      c.fail("the string kernel returned ", c.results[i].desc(), " for output ", i);
}
}  // namespace

void set_string_kernel_fn(StringKernelFn fn) { g_string_kernel = fn; }

void compare_strings(OpCall& c, bool ne) {
  const Tensor &a = c.in[0], &b = c.in[1];
  Shape s;
  if (!broadcast_shapes(a.shape(), b.shape(), &s))
    c.fail("Incompatible shapes: ", a.shape().str(), " vs. ", b.shape().str());
  Tensor& o = result(c, DType::kBool, s);
  const std::string *x = a.data<std::string>(), *y = b.data<std::string>();
  bool* r = o.data<bool>();
  for (int64_t i = 0, n = s.num_elements(); i < n; ++i)
    r[i] = (x[broadcast_index(s, a.shape(), i)] == y[broadcast_index(s, b.shape(), i)]) != ne;
}

void k_StringJoin(OpCall& c) {
  Shape s;  // the one non-scalar shape, checked now that every dim is known
  for (const Tensor& t : c.in)
    if (t.rank() > 0) {
      if (s.rank() > 0 && t.shape() != s)
        c.fail("Input shapes do not match: ", s.str(), " vs. ", t.shape().str());
      s = t.shape();
    }
  Tensor& o = result(c, DType::kString, s);
  const std::string sep = c.attrs.get<std::string>("separator", "");
  std::string* r = o.data<std::string>();
  for (int64_t i = 0, n = s.num_elements(); i < n; ++i) {
    std::string v;
    for (size_t k = 0; k < c.in.size(); ++k) {
      if (k) v += sep;
      v += c.in[k].data<std::string>()[c.in[k].rank() ? i : 0];
    }
    r[i] = std::move(v);
  }
}

void k_StringLength(OpCall& c) {
  const bool chars = c.attrs.get<std::string>("unit", "BYTE") == "UTF8_CHAR";
  const Tensor& x = c.in[0];
  Tensor& o = result(c, DType::kInt32, x.shape());
  const std::string* s = x.data<std::string>();
  int32_t* r = o.data<int32_t>();
  for (int64_t i = 0, n = x.num_elements(); i < n; ++i) {
    if (!chars) {
      r[i] = static_cast<int32_t>(s[i].size());
      continue;
    }
    int32_t k = 0;  // TF counts the bytes that start a character
    for (unsigned char ch : s[i]) k += (ch & 0xC0) != 0x80;
    r[i] = k;
  }
}

void k_StringFormat(OpCall& c) { run_python(c); }
void k_AsString(OpCall& c) { run_python(c); }
void k_StringToNumber(OpCall& c) { run_python(c); }

}  // namespace jf
