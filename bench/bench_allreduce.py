#!/usr/bin/env python3
"""The cost of one gradient reduction: og_comm_allreduce (MPI_Iallreduce completed by
libonnxgrad_mpi's polling wait, the path the trainer's buckets take) of float32 buffers of the
sizes the MLP of bench_mpi.py reduces per step, between the ranks of this mpirun.  Prints, on
rank 0, the median and 10th percentile of the milliseconds per reduction and the bandwidth
(bytes of the buffer / time), the CPU time rank 0's thread spent per reduction (copies, sums,
polls: what overlapping with a backward pass on the same core cannot hide), and the load
average.  Compare Open MPI settings by running it
under different environments, e.g.:

  mpirun -np 2 --bind-to none python3 bench/bench_allreduce.py
  mpirun -np 2 --bind-to none --mca btl_vader_single_copy_mechanism none python3 ...
  mpirun -np 2 --bind-to none --mca coll_libnbc_iallreduce_algorithm 0 python3 ...

(libonnxgrad_mpi asks for algorithm 3 when the environment names none; 0 is Open MPI's own
choice.)

(PYTHONPATH=python ONNXGRAD_LIBRARY=build/libonnxgrad.so.)"""
import os
import statistics
import sys
import time

import numpy as np

from onnxgrad.parallel import mpi_communicator

# the MLP 784-512-512-10's reductions: the step's losses and failure count, the gradients
# W1 + b1, W2 + b2, W3 + b3, and all of them in one bucket
SIZES = {"losses (16 B)": 4, "W3+b3 (20 KB)": 5130, "W2+b2 (1.0 MB)": 262656,
         "W1+b1 (1.6 MB)": 401920, "all (2.7 MB)": 669706}


def main():
    comm = mpi_communicator(timeout=60)
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    if comm.rank == 0:
        print("ranks %d, load average %.2f %.2f %.2f, OMPI_MCA: %s" % (
            comm.size, *os.getloadavg(),
            " ".join("%s=%s" % (k[9:], v) for k, v in sorted(os.environ.items())
                     if k.startswith(("OMPI_MCA_btl", "OMPI_MCA_coll"))) or "defaults"))
    for name, n in SIZES.items():
        buf = np.ones(n, dtype=np.float32)
        for _ in range(5):
            comm.allreduce(buf)
        times, cpu = [], 0.0
        for _ in range(reps):
            buf[:] = 1
            comm.allreduce(np.zeros(1, dtype=np.float32))  # line the ranks up first
            c, t = time.thread_time(), time.perf_counter()
            comm.allreduce(buf)
            times.append(time.perf_counter() - t)
            cpu += time.thread_time() - c
        assert buf[0] == comm.size
        med = statistics.median(times)
        if comm.rank == 0:
            print("  %-16s median %.3f ms, p10 %.3f ms, %.2f GB/s, rank 0's CPU %.3f ms" % (
                name, 1e3 * med, 1e3 * np.percentile(times, 10), 4 * n / med / 1e9,
                1e3 * cpu / reps), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
