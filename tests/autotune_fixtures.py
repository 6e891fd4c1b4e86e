"""A small graph to tune in tests, also runnable as a script (for kill/concurrency tests):
``python tests/autotune_fixtures.py DB TRIALS SEED [TUNER]``."""

from __future__ import annotations

import sys

from hlotune import dsl


def matmul_tanh(n: int = 48, m: int = 40, k: int = 32):
    A = dsl.placeholder((n, k), "float32", name="A")
    B = dsl.placeholder((k, m), "float32", name="B")
    r = dsl.reduce_axis(k, name="r")
    C = dsl.compute((n, m), lambda i, j: dsl.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = dsl.compute((n, m), lambda i, j: dsl.tanh(C[i, j]) + 1.0, name="D")
    return [D], [A, B]


def main(argv):
    from hlotune.autotune.database import Database
    from hlotune.autotune.tune import tune_graph
    from hlotune.runtime.targets import get_target
    db, trials, seed = argv[0], int(argv[1]), int(argv[2])
    tuner = argv[3] if len(argv) > 3 else "random"
    outs, ins = matmul_tanh()
    tune_graph(outs, ins, get_target("cpu"), trials, Database(db), tuner, seed, batch=2, repeat=2,
               min_repeat_ms=1.0, progress=False, module_key="fixture")


if __name__ == "__main__":
    main(sys.argv[1:])
