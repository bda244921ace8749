// The jitflow._C extension module: one bind_<topic> call per topic.
#include "python/bindings.h"
#include "python/convert.h"
#include "runtime/dispatch.h"
#include "tracing/trace_context.h"

PYBIND11_MODULE(_C, m) {
  using namespace jf::py_bridge;
  m.doc() = "jitflow C++ core";
  register_error_translator(m);
  bind_dtype(m);
  bind_tensor(m);
  bind_ops(m);
  bind_dlpack(m);
  bind_device(m);
  bind_runtime(m);
  bind_graph(m);
  bind_tracing(m);
  // While a trace is open the dispatcher hands each op to the tracer. Wired here, above both,
  // so that tracing/, which comes first in the pipeline, does not include runtime/.
  jf::set_trace_hook(&jf::record_traced_op);
  bind_function(m);
  bind_py_func(m);
  bind_data(m);
  bind_info(m);
}
