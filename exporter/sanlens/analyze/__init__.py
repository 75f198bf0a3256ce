"""`sanlens analyze`: offline logs and captures read, diagnosed and reported.

Its array work is elementwise (no matrix products), so OpenBLAS's worker threads have nothing to
do; started at numpy's import they still spin, about 0.1 CPU-s of a short run on two cores. One
thread, unless the user chose otherwise.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
