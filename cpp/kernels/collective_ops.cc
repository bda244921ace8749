// CollectiveAllReduce: jf.distribute's all-reduce across the processes of an MPI job. One node
// reduces one bucket: tensors of one dtype, fused into one contiguous buffer (Horovod's tensor
// fusion), reduced by one MPI_Iallreduce and handed back as views of the reduced buffer. It is
// stateful and never compiled, so the executor runs it between compiled clusters.
//
// jitflow does not link MPI. The process that runs these nodes has imported mpi4py, which
// loaded libmpi; its functions are found with dlsym at the first call, and the communicator,
// datatype and op handles come from mpi4py as integer attrs. The calls below pass handles as
// pointer-sized values and read no MPI struct, so both Open MPI's pointer handles and MPICH's
// integer handles go through (on the 64-bit ABIs where an int argument travels in a register).
//
// The wait never blocks in MPI: the request is polled, and between polls the node looks for a
// failure notice from a peer (a message on the notices communicator, sent by jf.distribute's
// excepthook) and for its deadline, so a dead or failed peer ends the wait with an error naming
// it instead of a hang.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ir/op_registry.h"
#include "kernels/collective.h"
#include "kernels/dispatch.h"

namespace jf {
namespace {

using Handle = void*;
struct Mpi {
  int (*iallreduce)(const void*, void*, int, Handle, Handle, Handle, void*) = nullptr;
  int (*test)(void*, int*, void*) = nullptr;
  int (*iprobe)(int, int, Handle, int*, void*) = nullptr;
  int (*recv)(void*, int, Handle, int, int, Handle, void*) = nullptr;
  int (*isend)(const void*, int, Handle, int, int, Handle, void*) = nullptr;
};

template <class F>
void find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
}

// The MPI functions of the library mpi4py loaded (also when it loaded it RTLD_LOCAL).
const Mpi& mpi(const OpCall& c) {
  static Mpi m;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = RTLD_DEFAULT;  // (a null handle)
    if (!dlsym(lib, "MPI_Iallreduce")) {
      lib = nullptr;
      for (const char* name : {"libmpi.so.40", "libmpi.so.12", "libmpi.so"}) {
        if ((lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD))) break;
      }
      if (!lib) return;
    }
    find(lib, "MPI_Iallreduce", &m.iallreduce);
    find(lib, "MPI_Test", &m.test);
    find(lib, "MPI_Iprobe", &m.iprobe);
    find(lib, "MPI_Recv", &m.recv);
    find(lib, "MPI_Isend", &m.isend);
  });
  if (!m.iallreduce || !m.test || !m.iprobe || !m.recv || !m.isend)
    c.fail(
        "MPI is not loaded in this process (jf.distribute.MultiWorkerMirroredStrategy imports mpi4py, "
        "which loads it)");
  return m;
}

constexpr int kFailTag = 7301;  // python/jitflow/distribute/collective.py's tags
constexpr int kAckTag = 7302;
std::atomic<int> g_failed_rank{-1};
std::mutex g_mu;          // one collective at a time on the communicator, in the order nodes run
CollectiveStats g_stats;  // guarded by g_mu

// The buffers of an all-reduce abandoned by an error: MPI cannot cancel it and may still write
// into them, so they are never freed (the process is expected to end).
void abandon(std::vector<Tensor> buffers) {
  static auto* kept = new std::vector<Tensor>();
  for (Tensor& t : buffers) kept->push_back(std::move(t));
}

Handle handle(const OpCall& c, const char* name) {
  const AttrValue* v = c.attrs.find(name);
  const int64_t* h = v ? std::get_if<int64_t>(v) : nullptr;
  if (!h) c.fail("the ", name, " attr must be an MPI handle (an integer from mpi4py)");
  return reinterpret_cast<Handle>(static_cast<intptr_t>(*h));
}

// A peer's failure notice, if one has arrived: receives it, acknowledges it and throws.
void check_notices(const OpCall& c, const Mpi& m, Handle notices, Handle byte, int rank, int size) {
  alignas(16) char status[256];
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    int flag = 0;
    m.iprobe(r, kFailTag, notices, &flag, status);
    if (!flag) continue;
    std::vector<char> buf(8192, 0);
    m.recv(buf.data(), static_cast<int>(buf.size()) - 1, byte, r, kFailTag, notices, status);
    static const char kAck[] = "ack";
    alignas(16) static char request[64];
    m.isend(kAck, 3, byte, r, kAckTag, notices, request);
    g_failed_rank = r;
    std::string text(buf.data());
    size_t nl = text.find('\n');
    if (nl != std::string::npos) text = text.substr(nl + 1);
    throw Error(ErrorKind::kUnavailable,
                str_cat("jf.distribute: worker rank ", r, " of ", size,
                        " failed, so the collective this worker (rank ", rank,
                        ") was waiting in cannot complete. Rank ", r, " raised:\n", text));
  }
}

template <class T>
void divide(T* p, int64_t n, int64_t by) {
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(by));
}

}  // namespace

int collective_failed_rank() { return g_failed_rank.load(); }

CollectiveStats collective_stats() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_stats;
}

void infer_collective_all_reduce(OpCall& c) {
  if (c.in.empty()) c.fail("an all-reduce needs at least one tensor");
  c.check_claimed(0);
  for (size_t i = 0; i < c.in.size(); ++i) {
    if (c.in[i].dtype() != c.in[0].dtype())
      c.fail("the tensors of one all-reduce bucket share a dtype: input ", i, " is ",
             dtype_name(c.in[i].dtype()), ", input 0 ", dtype_name(c.in[0].dtype()));
    c.add_output(c.in[i].dtype(), c.in[i].shape());
  }
}

void k_CollectiveAllReduce(OpCall& c) {
  const Mpi& m = mpi(c);
  Handle comm = handle(c, "comm"), notices = handle(c, "notices"), datatype = handle(c, "datatype");
  Handle op = handle(c, "op"), byte = handle(c, "byte_type");
  const int rank = static_cast<int>(c.attrs.get<int64_t>("rank", 0));
  const int size = static_cast<int>(c.attrs.get<int64_t>("size", 1));
  const double timeout = c.attrs.get<double>("timeout", 60.0);
  const bool mean = c.attrs.get<bool>("mean", false);
  const DType dt = c.in[0].dtype();
  const size_t item = dtype_size(dt);
  int64_t total = 0;
  for (const Tensor& t : c.in) {
    if (!t.on_host()) c.fail("jf.distribute reduces host tensors (a bucket holds a device tensor)");
    total += t.num_elements();
  }
  if (total > INT32_MAX)
    c.fail("a bucket of ", total, " elements exceeds MPI's int count: lower bytes_per_pack");

  // One tensor: reduced from its own buffer. Several: copied once into a fused send buffer.
  Tensor fused;
  const void* send = c.in[0].raw();
  if (c.in.size() > 1) {
    fused = Tensor::empty(dt, Shape{total});
    char* p = static_cast<char*>(fused.raw());
    for (const Tensor& t : c.in) {
      std::memcpy(p, t.raw(), t.nbytes());
      p += t.nbytes();
    }
    send = fused.raw();
  }
  Tensor out = Tensor::empty(dt, Shape{total});

  {
    std::lock_guard<std::mutex> lock(g_mu);
    const auto t0 = std::chrono::steady_clock::now();
    alignas(16) char request[64] = {};
    alignas(16) char status[256];
    if (m.iallreduce(send, out.raw(), static_cast<int>(total), datatype, op, comm, request) != 0)
      c.fail("MPI_Iallreduce failed");
    const auto start = std::chrono::steady_clock::now();
    double pause = 0;
    for (;;) {
      int done = 0;
      if (m.test(request, &done, status) != 0) c.fail("MPI_Test failed");
      if (done) {
        g_stats.calls += 1;
        g_stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        break;
      }
      try {
        check_notices(c, m, notices, byte, rank, size);
      } catch (...) {
        abandon({fused, out, c.in[0]});
        throw;
      }
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > timeout) {
        abandon({fused, out, c.in[0]});
        // MPI cannot cancel a collective: the process is expected to end.
        throw Error(ErrorKind::kDeadlineExceeded,
                    str_cat("jf.distribute: rank ", rank, " of ", size, " waited ", timeout,
                            " s in an all-reduce of ", total, " ", dtype_name(dt),
                            " values without every peer joining it (a peer died, hangs, or runs a different "
                            "program). Set the limit with CommunicationOptions(timeout_seconds=...) or "
                            "JF_DISTRIBUTE_TIMEOUT."));
      }
      if (waited > 1e-3) {  // spin briefly, then yield the core to the peers
        pause = std::min(std::max(pause * 2, 1e-5), 2e-3);
        std::this_thread::sleep_for(std::chrono::duration<double>(pause));
      }
    }
  }
  if (mean) {
    JF_SWITCH_CLAIMED(op_types(OpId::CollectiveAllReduce), dt, T, divide<T>(out.data<T>(), total, size));
  }
  c.results.resize(c.in.size());
  size_t offset = 0;
  for (size_t i = 0; i < c.in.size(); ++i) {  // the outputs are views of the reduced buffer
    c.results[i] = Tensor(dt, c.in[i].shape(), out.buffer(), offset);
    offset += c.in[i].num_elements() * item;
  }
}

}  // namespace jf
