// The string kernels that hand their work to the Python layer (StringFormat, AsString,
// StringToNumber: TF's formatting and parsing rules live once, in python/jitflow/ops/strings.py),
// through a hook the bindings install, as PrintV2 does; and Equal/NotEqual on strings.
#pragma once
#include "ir/op_registry.h"

namespace jf {

// Fills c.results with the op's outputs (checked against c's specs by the caller).
using StringKernelFn = void (*)(OpCall& c);
void set_string_kernel_fn(StringKernelFn fn);

// Equal (ne false) or NotEqual (ne true) of two string tensors, numpy broadcasting.
void compare_strings(OpCall& c, bool ne);

}  // namespace jf
