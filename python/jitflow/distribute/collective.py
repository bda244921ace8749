"""The MPI side of jf.distribute: one communicator per process group, whose collectives never
hang on a failed peer.

Every collective is non-blocking (MPI's Iallreduce / Ibcast / Iallgather) and is polled until
it completes, until a peer announces its failure, or until the deadline passes. A worker whose
Python raises an uncaught exception sends a failure notice (its rank and the exception's text)
to every peer on a separate communicator before it exits, so a peer waiting in a collective
raises UnavailableError naming that rank instead of waiting forever; a worker that dies without
a word (killed) is caught by the deadline (DeadlineExceededError), and by mpirun, which ends the
job when one of its processes dies. Buffers go to MPI as numpy arrays (the buffer protocol): no
element passes through a Python object."""
import os
import sys
import threading
import time
import traceback

import numpy as np

from .. import _C
from ..core import errors as _errors

_FAIL_TAG = 7301
_ACK_TAG = 7302
DEFAULT_TIMEOUT = float(os.environ.get("JF_DISTRIBUTE_TIMEOUT", "60"))


def _mpi():
    """mpi4py's MPI module (imported on first use: single-process code never needs it)."""
    from mpi4py import MPI
    return MPI


class Communicator:
    """COMM_WORLD with deadlines and failure notices. One per process (see world())."""

    def __init__(self, timeout=DEFAULT_TIMEOUT):
        mpi = _mpi()
        self.MPI = mpi
        self.comm = mpi.COMM_WORLD.Dup()
        self.notices = mpi.COMM_WORLD.Dup()  # failure notices travel apart from the data
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout = timeout
        self._py_seconds, self._py_calls = 0.0, 0  # all-reduces run here (allreduce_)
        self._node_base = _C.collective_stats()     # and by CollectiveAllReduce nodes since
        self._lock = threading.Lock()
        self._failed = None
        self._install_excepthook()

    # ---- what the all-reduces cost (for the benchmark and the tests) ---------------------------
    @property
    def allreduce_calls(self):
        return self._py_calls + _C.collective_stats()[0] - self._node_base[0]

    @allreduce_calls.setter
    def allreduce_calls(self, value):
        self._py_calls, self._node_base = value, (_C.collective_stats()[0], self._node_base[1])

    @property
    def allreduce_seconds(self):
        return self._py_seconds + _C.collective_stats()[1] - self._node_base[1]

    @allreduce_seconds.setter
    def allreduce_seconds(self, value):
        self._py_seconds, self._node_base = value, (self._node_base[0], _C.collective_stats()[1])

    # ---- failure notices ---------------------------------------------------------------------
    def _install_excepthook(self):
        previous = sys.excepthook

        def hook(kind, value, tb):
            previous(kind, value, tb)
            sys.stderr.flush()
            if self.size > 1:
                self.announce_failure("".join(traceback.format_exception_only(kind, value)).strip())
            # MPI_Finalize waits for every peer; a failed worker leaves at once instead.
            os._exit(1)
        sys.excepthook = hook

    def announce_failure(self, text):
        """Tells every peer that this rank failed, and waits (a few seconds at most) for them
        to take note, so mpirun does not end them before they report it."""
        if self._failed is not None or _C.collective_failed_rank() >= 0:
            return  # already failing because a peer failed (told here or to a node): no echo
        message = f"{self.rank}\n{text[-2000:]}".encode()
        peers = [r for r in range(self.size) if r != self.rank]
        sends = [self.notices.Isend([message, self.MPI.BYTE], dest=r, tag=_FAIL_TAG) for r in peers]
        deadline = time.monotonic() + 3.0
        acked = set()
        while time.monotonic() < deadline and len(acked) < len(peers):
            status = self.MPI.Status()
            if self.notices.Iprobe(source=self.MPI.ANY_SOURCE, tag=_ACK_TAG, status=status):
                self.notices.Recv(bytearray(status.Get_count()), source=status.Get_source(), tag=_ACK_TAG)
                acked.add(status.Get_source())
            elif self.notices.Iprobe(source=self.MPI.ANY_SOURCE, tag=_FAIL_TAG, status=status):
                # a peer failed at the same time: it is leaving too, so it counts as told
                self.notices.Recv(bytearray(status.Get_count()), source=status.Get_source(), tag=_FAIL_TAG)
                acked.add(status.Get_source())
            else:
                time.sleep(0.01)
        for s in sends:
            s.Test()

    def _check_notices(self):
        status = self.MPI.Status()
        if not self.notices.Iprobe(source=self.MPI.ANY_SOURCE, tag=_FAIL_TAG, status=status):
            return
        buf = bytearray(status.Get_count())
        self.notices.Recv([buf, self.MPI.BYTE], source=status.Get_source(), tag=_FAIL_TAG)
        rank, _, text = buf.decode(errors="replace").partition("\n")
        self._failed = int(rank)
        self.notices.Isend([b"ack", self.MPI.BYTE], dest=int(rank), tag=_ACK_TAG)
        raise _errors.UnavailableError(
            f"jf.distribute: worker rank {rank} of {self.size} failed, so the collective this worker "
            f"(rank {self.rank}) was waiting in cannot complete. Rank {rank} raised:\n{text}")

    # ---- collectives -------------------------------------------------------------------------
    def _wait(self, request, what):
        """Polls request until done; raises on a peer's failure notice or at the deadline."""
        start = time.monotonic()
        deadline = start + self.timeout
        pause = 0.0
        while not request.Test():
            self._check_notices()
            now = time.monotonic()
            if now > deadline:  # (MPI cannot cancel a collective: the process is expected to end)
                raise _errors.DeadlineExceededError(
                    f"jf.distribute: rank {self.rank} of {self.size} waited {self.timeout:g} s in {what} "
                    "without every peer joining it (a peer died, hangs, or runs a different program). "
                    "Set the limit with CommunicationOptions(timeout_seconds=...) or JF_DISTRIBUTE_TIMEOUT.")
            if now - start > 1e-3:  # spin briefly, then yield the core to the peers
                pause = min(max(pause * 2, 1e-5), 2e-3)
                time.sleep(pause)

    def allreduce_(self, array, op="sum"):
        """Sums (or max / min) a contiguous numpy array across the ranks, in place."""
        t0 = time.perf_counter()
        mpi_op = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
        with self._lock:
            request = self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=mpi_op)
            self._wait(request, f"an all-reduce of {array.size} {array.dtype} values")
        self._py_seconds += time.perf_counter() - t0
        self._py_calls += 1
        return array

    def broadcast_(self, array, root=0):
        with self._lock:
            self._wait(self.comm.Ibcast(array, root=root), f"a broadcast of {array.size} {array.dtype} values")
        return array

    def allgather_bytes(self, data):
        """Every rank's bytes (a list indexed by rank)."""
        with self._lock:
            sizes = np.zeros(self.size, np.int64)
            self._wait(self.comm.Iallgather(np.array([len(data)], np.int64), sizes), "an all-gather of sizes")
            out = np.zeros(int(sizes.sum()), np.uint8)
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            self._wait(self.comm.Iallgatherv(np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8),
                                             [out, sizes, offsets, self.MPI.BYTE]), "an all-gather")
        return [out[o:o + s].tobytes() for o, s in zip(offsets, sizes)]

    def barrier(self):
        with self._lock:
            self._wait(self.comm.Ibarrier(), "a barrier")


_world = []


def world(timeout=None):
    """The process's communicator (created on first use, which initialises MPI)."""
    if not _world:
        _world.append(Communicator(DEFAULT_TIMEOUT if timeout is None else timeout))
    elif timeout is not None:
        _world[0].timeout = timeout
    return _world[0]


def current():
    """The communicator if one was created (a multi-worker strategy exists), else None."""
    return _world[0] if _world else None
