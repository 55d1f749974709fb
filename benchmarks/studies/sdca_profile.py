"""Where an SDCA step's time goes, per pairwise entry, against what each phase must do.

Question: Where does an SDCA step's time go, phase by phase, in cycles per entry?
Date: 2026-11-24
Commit: ccca0b5
Answer: With the loops indexing slices from 0 (numba wraps negative indices), 3.2-4.0
    cycles per pairwise entry in the bare pass (was 6.6-8.9) and an epoch 1.5-1.75x
    faster on every dataset (POS: 17.1 against 28.0 cycles per pairwise entry), each
    phase at the floor of its own loop.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/sdca_profile.py`.

A roofline in words (issue 15, item 1): for every phase of a step (oracle, gap pass,
primal direction, line search, update) the kernel's cycle counters give cycles per
pairwise marginal entry ((T-1) K^2 per sequence, which dominates every phase at K >= 9),
and the same kernels timed alone give two floors for the work each phase must do:

- "in cache": the phase's own loop on one sequence's block held in L1/L2, repeated; what
  the arithmetic (logarithms, divisions, multiply-adds) costs with no memory stall;
- "streamed": the same loop over a store-sized array, block after block, as a step meets
  the marginal store (its rows come from main memory once per step).

The run uses the permutation sampler by default, so an epoch visits every sequence once
and the entries per epoch are known exactly; ``--sampler gap`` profiles SDCA-GAP itself
(its draws favour some sequences, so per entry then means per epoch's worth of entries).
The line search's evaluations per step are those of the run. Cycles are the time stamp
counter's.

    python benchmarks/studies/sdca_profile.py [--datasets ...] [--epochs 2] [--sampler perm]
                                      [--store-dtype float64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from common import DATASETS, best_time, featurized_problems, machine, markdown_table
from numba import njit

from crfsdca.model.objective import oracle_pass
from crfsdca.runtime.jit import NJIT, cycles
from crfsdca.solvers.registry import SAMPLERS
from crfsdca.solvers.sdca import SDCA
from crfsdca.solvers.sdca_kernel import (
    PHASES,
    _move_dual,
    _pair_scores,
    _to_delta,
)
from crfsdca.solvers.sdca_linesearch import _entropy_terms

# What each phase does per pairwise entry (the loops of solvers/sdca_kernel.py and
# sdca_linesearch.py).
WORK = {
    "oracle": "3 multiply-adds (forward, backward, marginal), 1 store of nu",
    "gap": "2 multiply-adds, read mu (first touch of the store), nu - mu stored",
    "direction": "delta summed over edges (per token: the sparse emission direction)",
    "line_search": "per evaluation: 1 log, 1 division, 4 multiply-adds",
    "update": "mu += gamma delta written back to the store",
}


# The floors' loops are compiled afresh each run: numba's cache is keyed on this file
# alone, so a cached loop would keep an old copy of the kernel it times.
_FRESH = dict(NJIT, cache=False)


def tsc_hz() -> float:
    """Ticks per second of the cycle counter."""
    c0, t0 = cycles(), time.perf_counter()
    time.sleep(0.3)
    return (cycles() - c0) / (time.perf_counter() - t0)


@njit(**_FRESH)
def _gap_loop(mu, nu, delta_sum, blocks, size, tw, KK, repeats):
    """The gap pass's pairwise loops (E_mu[score], then delta = nu - mu summed over
    edges) over ``blocks`` consecutive blocks, ``repeats`` times; cycles per entry."""
    rows = size // KK
    acc = 0.0
    c0 = cycles()
    for _ in range(repeats):
        for b in range(blocks):
            acc += _pair_scores(mu, b * size, rows, KK, tw, 0)
            _to_delta(mu, b * size, nu, size, delta_sum, KK)
    return (cycles() - c0) / (repeats * blocks * size), acc


@njit(**_FRESH)
def _eval_loop(mu, d, blocks, size, repeats):
    """One line-search evaluation per block; cycles per entry."""
    acc = 0.0
    c0 = cycles()
    for _ in range(repeats):
        for b in range(blocks):
            fp, fpp, h = _entropy_terms(mu, b * size, d, size, 0.3)
            acc += fp + fpp + h
    return (cycles() - c0) / (repeats * blocks * size), acc


@njit(**_FRESH)
def _update_loop(mu, d, mu_u, d_u, blocks, size, K, repeats):
    """mu += gamma delta over each block (the update when the line search knows the new
    entropy); cycles per entry."""
    T = size // (K * K) + 1
    c0 = cycles()
    for r in range(repeats):
        g = 1e-9 if r % 2 == 0 else -1e-9
        for b in range(blocks):
            _move_dual(mu_u, 0, mu, b * size, d_u, d, T, K, g)
    return (cycles() - c0) / (repeats * blocks * size)


def floors(size: int, K: int, store_entries: int, dtype) -> dict[str, tuple[float, float]]:
    """(in cache, streamed) cycles per entry of the gap, line-search and update loops on
    blocks of ``size`` entries; streamed over a store of ``store_entries``."""
    rng = np.random.default_rng(0)
    KK = K * K
    size = max(size // KK, 1) * KK
    blocks = max(store_entries // size, 1)
    mu = rng.dirichlet(np.ones(KK), size=blocks * (size // KK)).ravel().astype(dtype)
    nu = rng.dirichlet(np.ones(KK), size=size // KK).ravel()
    d = nu - mu[:size].astype(np.float64)
    tw = rng.normal(size=KK)
    delta_sum = np.zeros(KK)
    unary = np.zeros((size // KK + 1) * K)
    out = {}
    for name, run in (
        ("gap", lambda b, r: _gap_loop(mu, nu.copy(), delta_sum, b, size, tw, KK, r)[0]),
        ("line_search", lambda b, r: _eval_loop(mu, d, b, size, r)[0]),
        ("update", lambda b, r: _update_loop(mu, d, unary, unary, b, size, K, r)),
    ):
        run(1, 1)
        in_cache = min(run(1, 200) for _ in range(3))
        streamed = min(run(blocks, 1) for _ in range(3))
        out[name] = (in_cache, streamed)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs (after one warm-up)")
    ap.add_argument("--sampler", default="perm", choices=tuple(SAMPLERS))
    ap.add_argument("--store-dtype", default="float64", choices=("float64", "float32"))
    args = ap.parse_args(argv)
    hz = tsc_hz()
    rows = []
    for name, problem in featurized_problems(args.datasets):
        K = problem.n_labels
        lengths = np.diff(problem.train.offsets)
        entries = int(((lengths - 1) * K * K).sum())
        s = SDCA(problem, sampler=args.sampler, store_dtype=args.store_dtype, seed=0)
        s.run(problem.n)  # warm-up epoch: compile, leave the initial regime
        before = s.phase_cycles()
        evals0 = s.counters()["ls_evals"]
        s.run(args.epochs * problem.n)
        after = s.phase_cycles()
        evals = (s.counters()["ls_evals"] - evals0) / (args.epochs * problem.n)
        per_entry = {k: (after[k] - before[k]) / (args.epochs * entries) for k in PHASES}
        w = s.weights().copy()
        t_pass = best_time(lambda: oracle_pass(w, problem.train, problem.n_attributes, K))  # noqa: B023
        bare = t_pass * hz / entries
        size = int(np.median(lengths) - 1) * K * K
        fl = floors(size, K, entries, np.dtype(args.store_dtype))
        total = sum(per_entry.values())
        for phase in PHASES:
            c = per_entry[phase]
            cache, stream = fl.get(phase, (np.nan, np.nan))
            if phase == "line_search":
                cache, stream = cache * evals, stream * evals
            rows.append({
                "dataset": name, "phase": phase, "work per pairwise entry": WORK[phase],
                "cycles/entry": f"{c:.2f}", "share": f"{100 * c / total:.0f}%",
                "in cache": "" if np.isnan(cache) else f"{cache:.2f}",
                "streamed": "" if np.isnan(stream) else f"{stream:.2f}",
            })
        rows.append({"dataset": name, "phase": "step (sum)",
                     "work per pairwise entry": f"{evals:.2f} evaluations per step; "
                     f"a bare oracle pass: {bare:.2f} cycles/entry",
                     "cycles/entry": f"{total:.2f}", "share": "100%",
                     "in cache": "", "streamed": f"epoch / pass = {total / bare:.2f}"})
    print(f"# {machine()}; cycle counter at {hz / 1e9:.2f} GHz; store {args.store_dtype}; "
          f"sampler {args.sampler}\n")
    print(markdown_table(rows, list(rows[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
