"""Mini-batch SDCA: what lets SDCA use every core and still give one model per seed.

A batch is ``batch_size`` distinct sequences drawn one after another by the sampler: a
drawn sequence's stored gap is set to 0 until its step is applied (so the gap samplers
do not draw it again), and a sequence drawn again is drawn anew. Every step of the batch
is computed against the same weights, the batch's start: its oracle, block gap,
direction and line search, by whichever thread claims it first (the longest sequences
first, so that no thread is left with a long step at the end), each in its own buffers.
Then the steps are applied in draw order. Before applying a step, the quadratic term of
its line search is rebased on the weights as they are then (<w, u>, and with the elastic
net the change of its quadratic at the step, ``l1_change``), and the step is applied
only if it raises the dual exactly (else it is not taken, a null step, as the sequential
kernel does with a step that rounding made negative): the dual never falls, and the
duality gap certifies the weights as with one step at a time.

The apply runs on every thread (:func:`_apply_lanes`) for the default dual, the ridge
with a float64 store: the rows of w are dealt into ``LANES`` lanes fixed by the row
(never by the thread count), the threads own contiguous runs of lanes, and for each
step in turn every thread sums <w, u> over its lanes' rows, the threads meet, each adds
the lanes' sums in lane order (so every thread reaches the same decision, and the same
bits on any thread count), then moves its lanes' rows, and the thread that computed the
step moves its dual block. The elastic net's split and the float32 store's re-read
direction stay on one thread (:func:`_apply`).

Nothing of a step depends on the thread that computed it, so the model is a function of
the seed and ``batch_size`` alone; ``batch_size = 1`` is sequential SDCA step for step
(it runs :func:`.sdca_kernel.sdca_run`). The steps of a batch see weights up to
``batch_size - 1`` steps old, as the racing threads of Hogwild-style SDCA do, but in an
order fixed by the draws (``docs/math.md`` section 9; the epochs it costs:
``docs/benchmarks.md``, "Mini-batch SDCA").

The threads meet on a spin barrier (:mod:`~crfsdca.runtime.barrier`) after the draws,
after the steps are computed, and once per step of the apply.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.objective import sequence_weight
from ..model.oracle import Workspace, transition_offset
from ..runtime.barrier import atomic_add, wait
from ..runtime.jit import NJIT
from .sampling import draw, record_gap
from .sdca_kernel import (
    LS_EVALS,
    NULL_STEPS,
    SUM_ENTROPY,
    SUM_GAPS,
    SUM_STEP,
    UPDATES,
    W_NORM2,
    SDCABuffers,
    _direction,
    _gap,
    _move_dual,
    _oracle,
    _stride,
    _update,
    l1_split_search,
    pair_start,
    refuses_losses,
)
from .sdca_linesearch import Block, l1_change, line_search, soft

REDRAWS = 8  # draws a batch may take, per step, before it settles for fewer steps
LANES = 64  # the apply's lanes: row r of w (an attribute's K, the bias block, the
# transitions, a transition attribute's K*K) is in lane (its row number) % LANES


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
    order: np.ndarray  # int64 (batch_size): the steps in the order the threads claim them
    computed_by: np.ndarray  # int64 (batch_size): the thread that computed each step
    sums: np.ndarray  # float64 (batch_size * LANES): each step's <w, u> by lane


def make_batch(batch_size: int) -> Batch:
    return Batch(np.zeros(batch_size, dtype=np.int64), np.zeros(2, dtype=np.int64),
                 *(np.zeros(batch_size) for _ in range(5)),
                 np.zeros(batch_size, dtype=np.int64), np.zeros(batch_size, dtype=np.int64),
                 np.zeros(batch_size * LANES))


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
def _draw_batch(sampler, rng, batch, offsets, members):
    """batch_size distinct sequences: each drawn one's stored gap is set to 0 until its
    step (so the gap samplers do not draw it again), and a sequence drawn again is drawn
    anew (at most ``REDRAWS`` times the batch size in all; the batch is smaller if they
    run out, which only a batch about as large as the sequences makes likely). The claim
    order puts the longest sequences first (:func:`_longest_first`)."""
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
    _longest_first(batch, m, offsets, members)


@njit(**NJIT)
def _longest_first(batch, m, offsets, members):
    """``batch.order``: the m steps by decreasing length, ties in draw order (longest
    processing time first: the threads end a batch's computing at about the same time;
    who computes a step does not change it)."""
    for q in range(m):
        i = members[batch.drawn[q]]
        length = offsets[i + 1] - offsets[i]
        p = q
        while p > 0:
            o = members[batch.drawn[batch.order[p - 1]]]
            if offsets[o + 1] - offsets[o] >= length:
                break
            batch.order[p] = batch.order[p - 1]
            p -= 1
        batch.order[p] = q


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
    logz = _oracle(w, n_attr, K, idx, st, buf, i, u0, p0, T, l1_split_search(opt))
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


@njit(inline="always", **NJIT)
def _weight(a, j, kappa, thresholded):
    """Weight j: ``a[j]`` of w, or with ``thresholded`` S_kappa(a[j]) of v."""
    return soft(a[j], kappa) if thresholded else a[j]


@njit(**NJIT)
def _rebased(w, n_attr, K, idx, st, buf, opt, i, vv, gamma, thresholded=False):
    """The Block of sequence i's computed direction (in ``buf``) on the current weights,
    and with the elastic net Q(gamma) - Q(0) there (NaN without it): <w, u> again, or the
    change of the elastic net's quadratic at the step (:func:`l1_change`). With
    ``thresholded`` the weights are read as S_kappa(v) (w is left to the end of a run)."""
    start = idx.offsets[i]
    lam_n = opt.lam_n / sequence_weight(idx, i)
    wv, q = 0.0, np.nan
    split = l1_split_search(opt)
    if not split:  # <w, u> (with the elastic net's bound, w = S(v))
        a = st.v if thresholded else w
        kappa = opt.kappa
        ua0 = idx.uniq_ptr[i]
        for r in range(idx.uniq_ptr[i + 1] - ua0):
            base = idx.uniq_attr[ua0 + r] * K
            for k in range(K):
                wv += _weight(a, base + k, kappa, thresholded) * buf.v_emission[r * K + k]
        ob = n_attr * K
        for j in range(3 * K):
            wv += _weight(a, ob + j, kappa, thresholded) * buf.v_bias[j]
        ow = ob + 3 * K
        for j in range(K * K):
            wv += _weight(a, ow + j, kappa, thresholded) * buf.v_trans[j]
        if len(idx.edge_indptr) > 0:
            wv += _edge_products(w, ow + K * K, K * K, idx, i, buf.v_rows)
    else:
        q = l1_change(st.v, idx, i, K, n_attr, opt.kappa, gamma, buf.v_emission,
                      buf.v_bias, buf.v_trans)
    return Block(i, start * K, pair_start(start, i, K, opt.compact),
                 idx.offsets[i + 1] - start, K, n_attr, lam_n, wv, vv,
                 opt.kappa if split else 0.0, 0.0, 0.0, 0), q


@njit(inline="always", **NJIT)
def _count_step(st, gamma):
    """The counters of a step taken with step size gamma (0: a null step)."""
    if gamma == 0.0:
        st.counters[NULL_STEPS] += 1
    st.counters[UPDATES] += 1
    st.sums[SUM_STEP] += gamma


@njit(**NJIT)
def _record_gaps(st, sampler, batch):
    """Each step's fresh gap into the sampler, in draw order, and their sum."""
    for q in range(batch.size[0]):
        j = batch.drawn[q]
        record_gap(sampler, j, batch.gaps[q])
        st.scalars[SUM_GAPS] += sampler.gaps[j] - batch.stored[q]


@njit(**NJIT)
def _apply(w, n_attr, K, idx, st, bufs, sampler, opt, members, batch):
    """The batch's steps in draw order on one thread, each rebased on the weights the
    steps before it left and taken only where it raises the dual; the stored gaps
    recorded."""
    for q in range(batch.size[0]):
        buf = _step_buffers(bufs, q)
        i = members[batch.drawn[q]]
        gamma = batch.gammas[q]
        if gamma != 0.0:
            blk, change = _rebased(w, n_attr, K, idx, st, buf, opt, i, batch.vv[q], gamma)
            gamma = _update(w, idx, st, buf, blk, buf.ws.unary, buf.ws.pair, gamma,
                            batch.entropies[q], st.entropies[i], opt, sequence_weight(idx, i),
                            change)
        _count_step(st, gamma)
    _record_gaps(st, sampler, batch)


@njit(inline="always", **NJIT)
def _lane_row(w, base, u, u0, width, gamma, move, sums, slot):
    """One row of w against u[u0:u0 + width]: w += gamma u when ``move``, else
    sums[slot] += <w, u>."""
    w_r = w[base:base + width]
    u_r = u[u0:u0 + width]
    if move:
        for j in range(width):
            w_r[j] += gamma * u_r[j]
    else:
        s = 0.0
        for j in range(width):
            s += w_r[j] * u_r[j]
        sums[slot] += s


@njit(**NJIT)
def _lane_rows(w, n_attr, K, idx, i, buf, gamma, move, sums, s0, lo, hi):
    """The rows of sequence i's direction (in ``buf``) whose lanes lie in [lo, hi): with
    ``move``, w += gamma u on them; else sums[s0 + lane] = <w, u> over each lane's rows."""
    if not move:
        for lane in range(lo, hi):
            sums[s0 + lane] = 0.0
    ua0 = idx.uniq_ptr[i]
    for r in range(idx.uniq_ptr[i + 1] - ua0):
        a = idx.uniq_attr[ua0 + r]
        lane = a % LANES
        if lo <= lane < hi:
            _lane_row(w, a * K, buf.v_emission, r * K, K, gamma, move, sums, s0 + lane)
    ob = n_attr * K
    lane = n_attr % LANES  # the bias block: row n_attr
    if lo <= lane < hi:
        _lane_row(w, ob, buf.v_bias, 0, 3 * K, gamma, move, sums, s0 + lane)
    KK = K * K
    ow = transition_offset(n_attr, K)
    lane = (n_attr + 1) % LANES  # the transitions: row n_attr + 1
    if lo <= lane < hi:
        _lane_row(w, ow, buf.v_trans, 0, KK, gamma, move, sums, s0 + lane)
    if len(idx.edge_indptr) > 0:  # transition attribute e: row n_attr + 2 + e
        e0 = idx.edge_uniq_ptr[i]
        for r in range(idx.edge_uniq_ptr[i + 1] - e0):
            e = idx.edge_uniq_attr[e0 + r]
            lane = (n_attr + 2 + e) % LANES
            if lo <= lane < hi:
                _lane_row(w, ow + KK + e * KK, buf.v_rows, r * KK, KK, gamma, move, sums,
                          s0 + lane)


@njit(**NJIT)
def _in_lanes(opt, batch):
    """Whether the batch applies in lanes: the ridge with a float64 store, and every
    step's entropy at its step size known from its line search."""
    if opt.kappa != 0.0 or not opt.exact_store:
        return False
    for q in range(batch.size[0]):
        if batch.gammas[q] != 0.0 and np.isnan(batch.entropies[q]):
            return False
    return True


@njit(**NJIT)
def _apply_lanes(thread, threads, w, n_attr, K, idx, st, bufs, sampler, opt, members,
                 batch, barrier):
    """Thread ``thread``'s share of applying the batch's steps in draw order: for each,
    <w, u> summed over its lanes, the meeting, then every thread adds the lanes' sums in
    lane order and decides the step as :func:`.sdca_kernel._update` does (taken only
    where it raises the dual, with a line search that can promise it), moves its lanes'
    rows of w, and the step's computing thread its dual block; thread 0 keeps the
    running scalars and the counters, and records the gaps."""
    lo, hi = thread * LANES // threads, (thread + 1) * LANES // threads
    for q in range(batch.size[0]):
        gamma = batch.gammas[q]
        if gamma != 0.0:
            buf = _step_buffers(bufs, q)
            i = members[batch.drawn[q]]
            h_old = st.entropies[i]  # read before the meeting: thread 0 writes it after
            s0 = q * LANES
            _lane_rows(w, n_attr, K, idx, i, buf, 0.0, False, batch.sums, s0, lo, hi)
            wait(barrier, threads)
            wv = 0.0
            for lane in range(LANES):
                wv += batch.sums[s0 + lane]
            weight = sequence_weight(idx, i)
            vv, h_new = batch.vv[q], batch.entropies[q]
            gain = (h_new - h_old) - opt.lam_n / weight * gamma * (wv + 0.5 * gamma * vv)
            if gain < 0.0 and refuses_losses(opt):  # a null step
                gamma = 0.0
            else:
                _lane_rows(w, n_attr, K, idx, i, buf, gamma, True, batch.sums, s0, lo, hi)
                if batch.computed_by[q] == thread:
                    start = idx.offsets[i]
                    _move_dual(st.mu_unary, start * K, st.mu_pair, (start - i) * K * K,
                               buf.ws.unary, buf.ws.pair, idx.offsets[i + 1] - start, K,
                               gamma)
                if thread == 0:
                    st.scalars[W_NORM2] += 2.0 * gamma * wv + gamma * gamma * vv
                    st.scalars[SUM_ENTROPY] += weight * (h_new - h_old)
                    st.entropies[i] = h_new
        if thread == 0:
            _count_step(st, gamma)
    if thread == 0:
        _record_gaps(st, sampler, batch)


@njit(**NJIT)
def batch_run(thread, threads, n_batches, w, n_attr, K, idx, st, own, bufs, sampler, rng,
              opt, members, batch, barrier):
    """Thread ``thread`` of ``threads``' share of ``n_batches`` batches: thread 0 draws;
    the threads claim the steps of each batch one at a time, longest first, and compute
    them (with ``own``: the state with the thread's own counters); then they apply them
    together in lanes, or thread 0 alone (:func:`_in_lanes`)."""
    for _ in range(n_batches):
        if thread == 0:
            _draw_batch(sampler, rng, batch, idx.offsets, members)
        wait(barrier, threads)
        c = atomic_add(batch.size, 1, 1)
        while c < batch.size[0]:
            q = batch.order[c]
            _compute(q, w, n_attr, K, idx, own, _step_buffers(bufs, q), opt, members,
                     batch)
            batch.computed_by[q] = thread
            c = atomic_add(batch.size, 1, 1)
        wait(barrier, threads)
        if _in_lanes(opt, batch):
            _apply_lanes(thread, threads, w, n_attr, K, idx, st, bufs, sampler, opt,
                         members, batch, barrier)
        elif thread == 0:
            _apply(w, n_attr, K, idx, st, bufs, sampler, opt, members, batch)


__all__ = ["Batch", "StepBuffers", "batch_run", "make_batch", "make_step_buffers"]
