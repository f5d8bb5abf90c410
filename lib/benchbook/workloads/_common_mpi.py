"""One process or data-parallel MPI ranks: the launcher's rank count from the environment, the `World`
(mpi4py's collectives, imported only for more than one rank), each rank's shard, weight fingerprints."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

try:
    from ._common_data import synthetic
except ImportError:  # run as a script's sibling file (`import _common`), not as a package
    from _common_data import synthetic


# How MPI launchers tell each rank the size of the job: Open MPI (mpirun, mpiexec), MPICH's Hydra,
# Intel MPI and Slurm's PMI-2 (PMI_SIZE), MVAPICH2.
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
# Set on a rank by launchers that may not say the size (PMIx: `srun --mpi=pmix`, PRRTE).
RANK_VARS = ("PMIX_RANK", "PMI_RANK")


def launched_size(environ: dict | None = None) -> int | None:
    """How many ranks the MPI launcher started, from the environment alone (nothing is imported):
    1 outside MPI, N under `mpirun -np N`, None for a rank whose launcher does not say (ask MPI)."""
    env = os.environ if environ is None else environ
    for var in SIZE_VARS:
        value = env.get(var, "").strip()
        if value:
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"{var}={value!r} is not a number of MPI ranks")
            return int(value)
    if any(env.get(var) for var in RANK_VARS):
        tasks = env.get("SLURM_STEP_NUM_TASKS", "").strip()
        return int(tasks) if tasks.isdigit() and int(tasks) >= 1 else None
    return 1


def fingerprint(arrays: Iterable[np.ndarray]) -> str:
    """SHA-256 of the arrays' dtypes, shapes and bytes, in order: equal only for bit-identical weights."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def diverged(fingerprints: Sequence[str]) -> str | None:
    """None when every rank's fingerprint equals rank 0's, else a message naming the ranks that differ."""
    bad = [rank for rank, f in enumerate(fingerprints) if f != fingerprints[0]]
    if not bad:
        return None
    return (
        f"the model differs between MPI ranks: rank(s) {', '.join(map(str, bad))} hold other weights than "
        f"rank 0 (sha256 {fingerprints[0][:12]} vs {', '.join(fingerprints[r][:12] for r in bad)})"
    )


ALIGN = 64  # bytes: what TensorFlow's CPU kernels (Eigen) expect of a buffer they use without a copy


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ALIGN-byte boundary (numpy's
    large arrays start 16 bytes past a page, which TensorFlow refuses to share)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.empty(count * dtype.itemsize + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)


class World:
    """One process: rank 0 of 1, whose collective operations return their input."""

    rank = 0
    size = 1

    def allreduce_sum(self, array: np.ndarray) -> np.ndarray:
        """The element-wise sum of every rank's `array` (same shape and dtype on all), on every rank."""
        return array

    def bcast(self, obj: Any) -> Any:
        """Rank 0's `obj` (a small Python object), on every rank."""
        return obj

    def bcast_array(self, array: np.ndarray) -> np.ndarray:
        """Rank 0's `array` (same shape and dtype on all), on every rank."""
        return array

    def allgather(self, obj: Any) -> list:
        """Every rank's `obj`, in rank order, on every rank."""
        return [obj]

    def check_same(self, arrays: Iterable[np.ndarray]) -> None:
        """Raise RuntimeError on every rank unless all ranks hold bit-identical `arrays`."""
        message = diverged(self.allgather(fingerprint(arrays)))
        if message:
            raise RuntimeError(message)

    @contextlib.contextmanager
    def guard(self):
        """Around a rank's work: one process needs nothing."""
        yield


class MpiWorld(World):
    """The ranks of MPI_COMM_WORLD, through mpi4py's buffer (upper-case) calls for arrays."""

    def __init__(self, mpi, comm):
        self.mpi = mpi
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def allreduce_sum(self, array: np.ndarray) -> np.ndarray:
        send = np.ascontiguousarray(array)
        out = aligned_empty(send.shape, send.dtype)
        self.comm.Allreduce(send, out, op=self.mpi.SUM)
        return out

    def bcast(self, obj: Any) -> Any:
        return self.comm.bcast(obj, root=0)

    def bcast_array(self, array: np.ndarray) -> np.ndarray:
        buf = np.array(array, copy=True, order="C")
        self.comm.Bcast(buf, root=0)
        return buf

    def allgather(self, obj: Any) -> list:
        return self.comm.allgather(obj)

    @contextlib.contextmanager
    def guard(self):
        """An exception on one rank aborts the whole job (MPI_Abort) instead of leaving the other
        ranks waiting in a collective call for ever; SystemExit (argument errors) passes through."""
        try:
            yield
        except Exception:
            traceback.print_exc()
            print(f"error: MPI rank {self.rank} of {self.size} failed; aborting all ranks", file=sys.stderr, flush=True)
            sys.stdout.flush()
            self.comm.Abort(1)


def connect(size: int | None = None) -> World:
    """This process's `World`: one process when `size` is 1 (mpi4py is not imported), else the MPI
    job, whose size must be `size` when given (None: the launcher did not say)."""
    if size == 1:
        return World()
    try:
        from mpi4py import MPI  # lazily: only multi-rank runs need MPI
    except ImportError as e:
        raise RuntimeError(
            f"this process is one of {size or 'several'} MPI ranks but mpi4py cannot be imported ({e}); "
            "install the pinned requirements and an MPI library (Debian: openmpi-bin)"
        ) from e
    comm = MPI.COMM_WORLD
    if size is not None and comm.Get_size() != size:
        raise RuntimeError(f"the launcher started {size} ranks but MPI_COMM_WORLD has {comm.Get_size()}")
    return MpiWorld(MPI, comm) if comm.Get_size() > 1 else World()


def shard(indices: np.ndarray, world: World) -> np.ndarray:
    """This rank's part of a global batch of `batch_size x world.size` indices: rows
    rank*b .. (rank+1)*b-1, so that the ranks' parts, in rank order, are the global batch."""
    per = len(indices) // world.size
    return indices[world.rank * per : (world.rank + 1) * per]


def synthetic_shard(
    batch_size: int, image_size: int, num_classes: int, seed: int, world: World, layout: str = "NHWC"
):
    """This rank's `batch_size` rows of the global synthetic batch (`batch_size x world.size` images of
    `seed`): different data on every rank, and with one process exactly `synthetic(batch_size, ...)`."""
    x, y = synthetic(batch_size * world.size, image_size, num_classes, seed, layout)
    rows = shard(np.arange(len(y)), world)
    return np.ascontiguousarray(x[rows]), np.ascontiguousarray(y[rows])
