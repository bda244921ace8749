// Stateful kernels: variable reads and writes, and PrintV2 (handed to the Python layer,
// which owns sys.stdout / sys.stderr).
#include "core/variables.h"
#include "ir/op_registry.h"
#include "kernels/kernels.h"

namespace jf {
namespace {
PrintFn g_print = nullptr;
}

void set_print_fn(PrintFn fn) { g_print = fn; }

void infer_read_variable(OpCall& c) {
  DType dt;
  Shape s;
  variable_info(c.attrs.get<int64_t>("var_id", 0), &dt, &s, nullptr);
  c.add_output(dt, s);
}
void infer_assign_variable(OpCall& c) {
  DType dt;
  Shape s;
  std::string name;
  variable_info(c.attrs.get<int64_t>("var_id", 0), &dt, &s, &name);
  if (c.in[0].dtype() != dt)
    c.fail("cannot assign a value of type ", c.in[0].desc(), " to variable '", name, "' of type ",
           dtype_name(dt), s.str());
  // TF: no broadcasting, for assign_add and assign_sub either. A dim unknown when tracing is
  // checked by the kernel when it runs.
  const Shape& v = c.in[0].shape();
  bool ok = v.rank() == s.rank();
  for (int i = 0; ok && i < s.rank(); ++i) ok = v[i] < 0 || v[i] == s[i];
  if (!ok)
    c.fail("Cannot update variable '", name, "' with shape ", s.str(), " using a Tensor with shape ", v.str(),
           ", shapes must be equal.");
}
void infer_print(OpCall&) {}
void infer_control_flow(OpCall& c) { c.fail("If/While nodes are built by jf.cond / jf.while_loop"); }

void k_ReadVariableOp(OpCall& c) { c.results[0] = read_variable(c.attrs.get<int64_t>("var_id", 0)); }
// The run-time shape checks, in TF's kernels' words (the shape function saw unknown dims).
void k_AssignVariableOp(OpCall& c) {
  int64_t id = c.attrs.get<int64_t>("var_id", 0);
  DType dt;
  Shape s;
  variable_info(id, &dt, &s, nullptr);
  if (c.in[0].shape() != s)
    c.fail("Trying to assign to variable with tensor with wrong shape. Expected ", s.str(), " got ",
           c.in[0].shape().str());
  assign_variable(id, c.in[0], c.name());
}
static void assign_op(OpCall& c, OpId op) {
  const Tensor& delta = c.in[0];
  update_variable(
      c.attrs.get<int64_t>("var_id", 0),
      [&](const Tensor& cur) {
        if (delta.shape() != cur.shape())
          c.fail("Cannot update variable with shape ", cur.shape().str(), " using a Tensor with shape ",
                 delta.shape().str(), ", shapes must be equal.");
        return run_kernel(op_def(op), {cur, delta}, Attrs())[0];
      },
      c.name());
}
void k_AssignAddVariableOp(OpCall& c) { assign_op(c, OpId::AddV2); }
void k_AssignSubVariableOp(OpCall& c) { assign_op(c, OpId::Sub); }
void k_PrintV2(OpCall& c) {
  if (g_print) g_print(c.in, c.attrs);
}
// Graph ops run by the executor itself; called eagerly they raise.
void k_If(OpCall& c) { c.fail("If runs only inside a traced function"); }
void k_While(OpCall& c) { c.fail("While runs only inside a traced function"); }
void k_XlaLaunch(OpCall& c) { c.fail("XlaLaunch runs only inside a traced function"); }

}  // namespace jf
