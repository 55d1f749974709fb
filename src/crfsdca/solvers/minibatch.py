"""Mini-batch SDCA: what lets SDCA use every core and still give one model per seed.

A batch is ``batch_size`` distinct sequences drawn one after another by the sampler: a
drawn sequence's stored gap is set to 0 until its step is applied (so the gap samplers
do not draw it again), and a sequence drawn again is drawn anew. Every step of the batch
is computed against the same weights, the batch's start: its oracle, block gap,
direction and line search, by whichever thread claims it first, each in its own
buffers. Then one thread applies the steps in draw order. Before applying a step, the quadratic
term of its line search is rebased on the weights as they are then (<w, u>, and with
the elastic net the split of ``l1_split``), and the step is applied only if it raises
the dual exactly (else it is taken back, a null step, as the sequential kernel does
with a step that rounding made negative): the dual never falls, and the duality gap
certifies the weights as with one step at a time.

Nothing of a step depends on the thread that computed it, so the model is a function of
the seed and ``batch_size`` alone; ``batch_size = 1`` is sequential SDCA step for step
(it runs :func:`.sdca_kernel.sdca_run`). The steps of a batch see weights up to
``batch_size - 1`` steps old, as the racing threads of Hogwild-style SDCA do, but in an
order fixed by the draws (``docs/math.md`` section 9; the epochs it costs:
``docs/benchmarks.md``, "Mini-batch SDCA").

The threads meet twice per batch on a spin barrier (:mod:`~crfsdca.runtime.barrier`):
after the draws, and after the steps are computed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.objective import sequence_weight
from ..model.oracle import Workspace
from ..runtime.barrier import atomic_add, wait
from ..runtime.jit import NJIT
from .sampling import draw, record_gap
from .sdca_kernel import (
    LS_EVALS,
    NULL_STEPS,
    SUM_GAPS,
    SUM_STEP,
    UPDATES,
    SDCABuffers,
    _direction,
    _gap,
    _oracle,
    _stride,
    _update,
)
from .sdca_linesearch import Block, l1_split, line_search

REDRAWS = 8  # draws a batch may take, per step, before it settles for fewer steps


class Batch(NamedTuple):
    """The current batch: its draws and what each step's compute left for the apply."""

    drawn: np.ndarray  # int64 (batch_size): the sampler's indices, all distinct
    size: np.ndarray  # int64 (2): how many of ``drawn`` are in the batch; the next step
    # that no thread has claimed yet
    gaps: np.ndarray  # float64 (batch_size): each step's fresh block gap (weighted)
    gammas: np.ndarray  # its line search's step size
    entropies: np.ndarray  # the entropy at that step (NaN: not evaluated)
    vv: np.ndarray  # ||u||^2 of its direction
    stored: np.ndarray  # the stored gap of its sequence before the batch drew it


def make_batch(batch_size: int) -> Batch:
    return Batch(np.zeros(batch_size, dtype=np.int64), np.zeros(2, dtype=np.int64),
                 *(np.zeros(batch_size) for _ in range(5)))


class StepBuffers(NamedTuple):
    """The buffers of every step of a batch: row q of each array is a field of step q's
    :class:`~.sdca_kernel.SDCABuffers` (one type for every batch size, so the kernels
    compile once)."""

    scores: np.ndarray
    emit: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    scale: np.ndarray
    trans: np.ndarray
    unary: np.ndarray
    pair: np.ndarray
    path: np.ndarray
    back: np.ndarray
    v_emission: np.ndarray
    v_bias: np.ndarray
    v_trans: np.ndarray
    w_trans: np.ndarray
    v_rows: np.ndarray
    cross_v: np.ndarray
    cross_u: np.ndarray


def make_step_buffers(batch_size: int, like: SDCABuffers) -> StepBuffers:
    """``batch_size`` buffers of the sizes of ``like``."""
    rows = [*like.ws, *like[1:]]
    return StepBuffers(*(np.zeros((batch_size, len(a)), dtype=a.dtype) for a in rows))


@njit(inline="always", **NJIT)
def _step_buffers(sb, q):
    """Step q's buffers: views of row q."""
    ws = Workspace(sb.scores[q], sb.emit[q], sb.alpha[q], sb.beta[q], sb.scale[q],
                   sb.trans[q], sb.unary[q], sb.pair[q], sb.path[q], sb.back[q])
    return SDCABuffers(ws, sb.v_emission[q], sb.v_bias[q], sb.v_trans[q], sb.w_trans[q],
                       sb.v_rows[q], sb.cross_v[q], sb.cross_u[q])


@njit(**NJIT)
def _draw_batch(sampler, rng, batch):
    """batch_size distinct sequences: each drawn one's stored gap is set to 0 until its
    step (so the gap samplers do not draw it again), and a sequence drawn again is drawn
    anew (at most ``REDRAWS`` times the batch size in all; the batch is smaller if they
    run out, which only a batch about as large as the sequences makes likely)."""
    m = 0
    size = len(batch.drawn)
    for _ in range(REDRAWS * size):
        j = draw(sampler, rng)
        seen = False
        for q in range(m):
            seen = seen or batch.drawn[q] == j
        if not seen:
            batch.drawn[m] = j
            batch.stored[m] = sampler.gaps[j]
            record_gap(sampler, j, 0.0)
            m += 1
            if m == size:
                break
    batch.size[0] = m
    batch.size[1] = 0


@njit(**NJIT)
def _compute(q, w, n_attr, K, idx, st, buf, opt, members, batch):
    """Step q of the batch against the current weights, into its buffers and the batch
    (reads the shared state, writes only ``buf``, ``batch[q]`` and ``st.counters``)."""
    i = members[batch.drawn[q]]
    weight = sequence_weight(idx, i)
    lam_n = opt.lam_n / weight
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    u0, p0 = start * K, (start - i) * K * K
    logz = _oracle(w, n_attr, K, idx, st, buf, i, u0, p0, T, opt.kappa != 0.0)
    gap = _gap(st, buf, i, u0, p0, T, K, logz, _stride(idx, K))
    blk = _direction(w, n_attr, K, idx, i, u0, p0, T, st, buf, buf.ws.unary, buf.ws.pair,
                     False, opt, lam_n)
    gamma, evals, h_ls = line_search(blk, st, idx, buf, buf.ws.unary, buf.ws.pair, gap,
                                     st.entropies[i], opt)
    st.counters[LS_EVALS] += evals
    batch.gaps[q] = weight * gap
    batch.gammas[q] = gamma
    batch.entropies[q] = h_ls
    batch.vv[q] = blk.vv


@njit(**NJIT)
def _edge_products(w, oe, KK, idx, i, v_edges):
    """<w, u> over the rows of sequence i's transition attributes (W_B from ``oe``)."""
    e0 = idx.edge_uniq_ptr[i]
    wv = 0.0
    for r in range(idx.edge_uniq_ptr[i + 1] - e0):
        base = oe + idx.edge_uniq_attr[e0 + r] * KK
        for j in range(KK):
            wv += w[base + j] * v_edges[r * KK + j]
    return wv


@njit(**NJIT)
def _rebased(w, n_attr, K, idx, st, buf, opt, i, vv):
    """The Block of sequence i's computed direction (in ``buf``) on the current weights:
    <w, u> again, or with the elastic net the split of v's entries again."""
    start = idx.offsets[i]
    lam_n = opt.lam_n / sequence_weight(idx, i)
    a0, b0, n_cross = 0.0, 0.0, 0
    if opt.kappa == 0.0:
        ua0 = idx.uniq_ptr[i]
        wv = 0.0
        for r in range(idx.uniq_ptr[i + 1] - ua0):
            base = idx.uniq_attr[ua0 + r] * K
            for k in range(K):
                wv += w[base + k] * buf.v_emission[r * K + k]
        ob = n_attr * K
        for j in range(3 * K):
            wv += w[ob + j] * buf.v_bias[j]
        ow = ob + 3 * K
        for j in range(K * K):
            wv += w[ow + j] * buf.v_trans[j]
        if len(idx.edge_indptr) > 0:
            wv += _edge_products(w, ow + K * K, K * K, idx, i, buf.v_rows)
    else:
        a0, b0, wv, n_cross = l1_split(st.v, idx, i, K, n_attr, opt.kappa,
                                       max(1.0, opt.fixed_step), buf.v_emission, buf.v_bias,
                                       buf.v_trans, buf.v_rows, buf.cross_v, buf.cross_u)
    return Block(i, start * K, (start - i) * K * K, idx.offsets[i + 1] - start, K, n_attr,
                 lam_n, wv, vv, opt.kappa, a0, b0, n_cross)


@njit(**NJIT)
def _apply(w, n_attr, K, idx, st, bufs, sampler, opt, members, batch):
    """The batch's steps in draw order, each rebased on the weights the steps before it
    left and taken only where it raises the dual; the stored gaps recorded."""
    for q in range(batch.size[0]):
        buf = _step_buffers(bufs, q)
        j = batch.drawn[q]
        i = members[j]
        gamma = batch.gammas[q]
        if gamma != 0.0:
            blk = _rebased(w, n_attr, K, idx, st, buf, opt, i, batch.vv[q])
            gamma = _update(w, idx, st, buf, blk, buf.ws.unary, buf.ws.pair, gamma,
                            batch.entropies[q], st.entropies[i], opt, sequence_weight(idx, i))
        if gamma == 0.0:
            st.counters[NULL_STEPS] += 1
        st.counters[UPDATES] += 1
        st.sums[SUM_STEP] += gamma
        record_gap(sampler, j, batch.gaps[q])
        st.scalars[SUM_GAPS] += sampler.gaps[j] - batch.stored[q]


@njit(**NJIT)
def batch_run(thread, threads, n_batches, w, n_attr, K, idx, st, own, bufs, sampler, rng,
              opt, members, batch, barrier):
    """Thread ``thread`` of ``threads``' share of ``n_batches`` batches: thread 0 draws and
    applies; the threads claim the steps of each batch one at a time and compute them
    (with ``own``: the state with the thread's own counters)."""
    for _ in range(n_batches):
        if thread == 0:
            _draw_batch(sampler, rng, batch)
        wait(barrier, threads)
        q = atomic_add(batch.size, 1, 1)
        while q < batch.size[0]:
            _compute(q, w, n_attr, K, idx, own, _step_buffers(bufs, q), opt, members,
                     batch)
            q = atomic_add(batch.size, 1, 1)
        wait(barrier, threads)
        if thread == 0:
            _apply(w, n_attr, K, idx, st, bufs, sampler, opt, members, batch)


__all__ = ["Batch", "StepBuffers", "batch_run", "make_batch", "make_step_buffers"]
