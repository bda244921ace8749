// TF's debugging ops: CheckNumerics (its input, or TF's error naming NaN/Inf) and Assert
// (a stateful check of a scalar bool that prints its data the way TF's kernel does).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/shape_fns.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

namespace jf {

// CheckNumerics: a float input, the same value out. TF's op takes half and bfloat16 too;
// jitflow has neither.
void infer_check_numerics(OpCall& c) {
  if (!c.claims(c.in[0].dtype()))
    c.fail_type("Value for attr 'T' of ", dtype_name(c.in[0].dtype()),
                " is not in the list of allowed values: float, double");
  c.add_output(c.in[0].dtype(), c.in[0].shape());
}

// TF's words for what a tensor held: shared with the compiled form's error (cluster_runner).
std::string check_numerics_error(const std::string& message, bool nan, bool inf) {
  const char* what = inf && nan ? "Inf and NaN" : inf ? "Inf" : "NaN";
  return str_cat(message, " : Tensor had ", what, " values");
}

namespace {
template <class T>
void scan(const Tensor& t, bool* nan, bool* inf) {
  const T* p = t.data<T>();
  for (int64_t i = 0, n = t.num_elements(); i < n; ++i) {
    // Most tensors are all finite: one test per element, the kind sorted out on a hit.
    const auto v = static_cast<std::conditional_t<kEigenHalf<T>, float, T>>(p[i]);
    if (!std::isfinite(v)) (std::isnan(v) ? *nan : *inf) = true;
  }
}
}  // namespace

void k_CheckNumerics(OpCall& c) {
  const Tensor& x = c.in[0];
  Tensor host = x.on_host() ? x : x.to_device(Device{});
  bool nan = false, inf = false;
  JF_SWITCH_CLAIMED(op_types(OpId::CheckNumerics), x.dtype(), T, scan<T>(host, &nan, &inf));
  if (nan || inf) throw_invalid(check_numerics_error(c.attrs.get<std::string>("message", ""), nan, inf));
  // A copy, not the shared input: a GradientTape keys eager tensors by buffer and skips ops
  // that return their input's, and this op's gradient is not the identity (it checks).
  Tensor& out = c.alloc(0);
  if (x.nbytes()) std::memcpy(out.raw(), host.raw(), x.nbytes());
  if (!x.on_host()) c.results[0] = out.to_device(x.device());
}

// Assert: input 0 the condition, the others the data. It has no outputs.
void infer_assert(OpCall& c) {
  if (c.in.empty()) c.fail("needs a condition");
  if (!c.claims(c.in[0].dtype()))
    c.fail_type("Input 'condition' of 'Assert' Op has type ", dtype_name(c.in[0].dtype()),
                " that does not match expected type of bool");
  // TF finds a non-scalar condition only when the op runs; a static shape says it now.
  if (c.in[0].rank() > 0 || (c.has_value(0) && c.in[0].num_elements() != 1))
    c.fail("In[0] expects a scalar condition, but it has shape ", c.in[0].shape().str());
}

namespace {
// TF's StrCat of a number: the shortest %g form that reads back as the same value.
std::string format_number(const Tensor& t, int64_t i) {
  char buf[64];
  switch (t.dtype()) {
    case DType::kFloat32: {
      float v = t.data<float>()[i];
      std::snprintf(buf, sizeof buf, "%.6g", v);
      if (std::isfinite(v) && std::strtof(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.9g", v);
      break;
    }
    case DType::kFloat64: {
      double v = t.data<double>()[i];
      std::snprintf(buf, sizeof buf, "%.15g", v);
      if (std::isfinite(v) && std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
      break;
    }
    case DType::kBool:
      return t.data<bool>()[i] ? "1" : "0";
    default:
      return std::to_string(t.get_int(i));
  }
  return buf;
}

// TF's Tensor::SummarizeValue: the first `limit` elements, nested brackets per dim below the
// first, "..." where elements were left out.
void one_dim(const Tensor& t, int dim, int64_t limit, int64_t* index, std::string* out) {
  if (*index >= limit) return;
  const int64_t count = t.shape()[dim];
  if (dim == t.rank() - 1) {
    for (int64_t i = 0; i < count; ++i) {
      if (*index >= limit) {
        if (dim != 0) *out += "...";
        return;
      }
      if (i > 0) *out += " ";
      *out += format_number(t, (*index)++);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    bool open = false;
    if (*index < limit) *out += "[", open = true;
    one_dim(t, dim + 1, limit, index, out);
    if (*index < limit || open) *out += "]";
  }
}

std::string summarize(const Tensor& t, int64_t max_entries) {
  const int64_t n = t.num_elements();
  const int64_t limit = max_entries < 0 ? n : std::min(max_entries, n);
  std::string s;
  if (t.rank() == 0) {
    if (limit > 0) s = format_number(t, 0);
  } else {
    int64_t index = 0;
    one_dim(t, 0, limit, &index, &s);
  }
  if (n > limit) s += "...";
  return s;
}

const char kTensorSlot[] = {'\0'};

// A string datum as TF's Assert shows it: C-escaped (quotes, backslashes, control and
// non-ASCII bytes), so the message reads as the literal that would produce it.
std::string c_escape(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    switch (ch) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (ch < 0x20 || ch >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out;
}
}  // namespace

void k_Assert(OpCall& c) {
  Tensor cond = c.in[0].on_host() ? c.in[0] : c.in[0].to_device(Device{});
  if (cond.data<bool>()[0]) return;
  std::vector<std::string> parts;
  if (const AttrValue* v = c.attrs.find("parts")) {
    if (auto* list = std::get_if<std::vector<std::string>>(v)) parts = *list;
    if (auto* one = std::get_if<std::string>(v)) parts = {*one};
  }
  const int64_t max_entries = c.attrs.get<int64_t>("summarize", 3);
  std::string msg = "assertion failed: ";
  size_t next = 1;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) msg += " ";
    if (parts[i] == std::string(kTensorSlot, 1) && next < c.in.size()) {
      const Tensor& d = c.in[next++];
      msg += "[" + summarize(d.on_host() ? d : d.to_device(Device{}), max_entries) + "]";
    } else {
      msg += "[" + c_escape(parts[i]) + "]";
    }
  }
  throw_invalid(msg);
}

}  // namespace jf
