"""Pipelined SDCA: two cores on SDCA's one chain of steps, the same model on one.

Sequential SDCA's step k reads the weights, computes its oracle, gap, direction and line
search, then moves the weights and its dual block; step k + 1 reads the moved weights.
Here step k + 1 is computed (oracle, gap, direction, line search) against the weights of
before step k's move: one step older, a mini-batch of two (``math.md`` section 9). Its
move is then rebased on the weights as they are (<w, u> again, or the change of the
elastic net's quadratic at its step) and taken only where it still raises the dual
exactly (as a mini-batch's steps): the dual never falls and the duality gap certifies
the weights as sequential SDCA's does.

What needs the weights of a step is read in one place (R below): a copy of its
sequence's rows of the weights and of the bias and transitions, from which its compute
sums its oracle's scores and transition potentials (the next step's move waits for the
copy alone; on one thread no move waits, and R sums them as it reads, the same sums
without a second pass over the rows). <w, u> then comes from them, <w, u> =
(-1 / lam n) (sum_t <delta_t, s_t> + <W, sum_t delta_t^pair>), the scores s_t holding
every weight of token t's features (a weight outside the feature set is 0, where the
direction is masked). With the elastic net, R copies v alone (the rows its exact split
needs too) and thresholds them, A reads S_kappa(v) and moves v alone: w = S_kappa(v) is
set on the feature set when w is next read (:func:`settle_weights`), so the steps touch
one array of the weights' size rather than two (the same sums, the same model). So with
two threads, step k + 1's oracle and line search overlap step k's, and the threads wait on
two counters (:func:`~crfsdca.runtime.barrier.wait_at_least`) only where the order of
reads and writes of the weights says:

- D(k), R(k): step k draws its sequence and reads w after steps 0..k-2 have moved
  (``APPLIED`` >= k - 1) and step k - 1 has read (``READ`` >= k); then ``READ`` = k + 1;
- A(k): step k moves after step k - 1 (``APPLIED`` >= k) and after step k + 1 has read
  (``READ`` >= k + 2); then ``APPLIED`` = k + 1.

One thread runs the same operations in an order that keeps those constraints (R(k + 1),
then A(k), then the rest of step k + 1's computing, which reads no weight), so the model
is a function of the seed, never of the number of threads. A draw never takes the
sequence whose step is in flight: its stored gap reads 0 from its draw to its move (as
in a mini-batch; the uniform share of a sampler may still draw it, then it is drawn
anew), since its block must not move between its oracle and its own move.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.objective import sequence_weight
from ..model.oracle import (
    add_dense_scores,
    add_end_bias,
    add_token_rows,
    transition_offset,
    transition_potentials,
    unary_scores,
)
from ..runtime.barrier import publish, wait_at_least
from ..runtime.jit import NJIT, NJIT_FAST, aligned_zeros, prefetch_range
from .compact_store import chain_score_entropy
from .minibatch import REDRAWS, _count_step, _rebased
from .sampling import draw, record_gap
from .sdca_kernel import (
    LS_EVALS,
    ORACLE,
    SUM_GAPS,
    SDCABuffers,
    _chain,
    _edge_direction,
    _gap,
    _prefetch_rows,
    _primal_direction,
    _read_potentials,
    _stride,
    _update,
    l1_split_search,
    pair_rows,
    pair_start,
    store_line_search,
)
from .sdca_linesearch import Block, _split_range, soft

APPLIED, READ = 0, 1  # the counters of :class:`Flow` (then the barrier's sleepers)


@njit(inline="always", **NJIT)
def defers_w(opt):
    """Whether the steps leave w to be set later (:func:`settle_weights`) and read
    S_kappa(v): with the elastic net."""
    return opt.kappa != 0.0


class Flow(NamedTuple):
    """The pipeline's counters, and what each of its two slots holds from a step's draw
    to its move (step k's in slot k % 2)."""

    counters: np.ndarray  # int32 (3): steps moved, steps that read w, sleepers
    drawn: np.ndarray  # int64 (2): the sampler index of each slot's step
    stored: np.ndarray  # float64 (2): its stored gap before the draw set it to 0
    gaps: np.ndarray  # float64 (2): its fresh block gap (weighted)
    gammas: np.ndarray  # float64 (2): its line search's step size
    entropies: np.ndarray  # float64 (2): the entropy there (NaN: not evaluated)
    vv: np.ndarray  # float64 (2): ||u||^2 of its direction
    v_small: np.ndarray  # float64 (2, 3K + K^2): the bias and transitions of v (of w
    #                      without the elastic net) as the step read them
    kept: np.ndarray  # float64 (rows + 3K + K^2): the weights a move changed, as they were
    #                   (one move at a time), put back where the dual would fall


def make_flow(n_labels: int, rows: int) -> Flow:
    """The counters and slots for ``n_labels`` labels, steps of up to ``rows`` entries of
    emission weights."""
    K = n_labels
    return Flow(np.zeros(3, dtype=np.int32), np.zeros(2, dtype=np.int64),
                *(np.zeros(2) for _ in range(5)), np.zeros((2, 3 * K + K * K)),
                np.zeros(rows + 3 * K + K * K))


def make_slots(like: SDCABuffers) -> tuple[SDCABuffers, SDCABuffers]:
    """The two slots' buffers: ``like`` and another of its sizes (each array aligned)."""
    ws = type(like.ws)(*(aligned_zeros(len(a), a.dtype) for a in like.ws))
    return like, SDCABuffers(ws, *(aligned_zeros(len(a), a.dtype) for a in like[1:]))


@njit(**NJIT)
def _draw(k, sampler, rng, flow, n):
    """D(k): step k's sequence, never step k - 1's; its stored gap 0 until its move."""
    slot = k % 2
    busy = flow.drawn[1 - slot] if k > 0 else -1
    j = draw(sampler, rng)
    tries = 1
    while j == busy:
        if tries == REDRAWS:
            j = (busy + 1) % n
            break
        j = draw(sampler, rng)
        tries += 1
    flow.drawn[slot] = j
    flow.stored[slot] = sampler.gaps[j]
    record_gap(sampler, j, 0.0)


@njit(inline="always", **NJIT)
def _sums_at_read(direct, idx, opt):
    """Whether R sums step k's scores and potentials itself rather than copying what
    they read: with transition attributes, and on one thread (``direct``), where no move
    waits for R and a copy is a second pass over the rows (the same sums,
    :func:`~crfsdca.model.oracle.unary_scores`: a fit on CoNLL-2002 Dutch at c1 = 0
    about 10% sooner on one thread with :func:`_rebase_and_move`); not with the elastic
    net, whose copy thresholds each row once (no faster summed at once), or the dense
    columns."""
    if len(idx.edge_indptr) > 0:
        return True
    return direct and not defers_w(opt) and len(idx.dense_attr) == 0


@njit(**NJIT)
def _read(k, w, n_attr, K, idx, st, buf, opt, members, flow, direct):
    """R(k): step k's copy of the weights it reads, its sequence's rows (of v with the
    elastic net, thresholded: :func:`_gather`) and the bias and transitions, into its
    slot; what it computes from them waits for its compute (:func:`_potentials`), since
    the next step's move waits for this read. The store block it reads next is fetched
    meanwhile. Where it sums the scores and potentials itself (:func:`_sums_at_read`)
    it returns their max (0 otherwise)."""
    slot = k % 2
    i = members[flow.drawn[slot]]
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    p0 = pair_start(start, i, K, opt.compact)
    prefetch_range(st.mu_pair, p0, p0 + pair_rows(T, opt.compact) * K * K)
    prefetch_range(st.mu_unary, start * K, (start + T) * K)
    if _sums_at_read(direct, idx, opt):  # the same sums as the copy's (a test)
        _prefetch_rows(w, idx, i, K)
        unary_scores(w, n_attr, K, idx, i, buf.ws.scores)
        return _read_potentials(w, n_attr, K, idx, i, buf)
    thresholded = defers_w(opt)
    _gather(st.v if thresholded else w, n_attr, K, idx, i, buf, flow.v_small[slot],
            opt.kappa, thresholded, l1_split_search(opt))
    return 0.0


@njit(**NJIT)
def _gather(v, n_attr, K, idx, i, buf, small, kappa, thresholded, split):
    """Sequence i's rows of ``v`` into ``buf.v_emission`` (free until the step's
    direction), thresholded where the moves leave w (the elastic net: w = S_kappa(v) is
    made at the next reading of w, :func:`settle_weights`), and the bias and transitions
    as they are into ``small``; with the exact ``split`` the rows as they are too
    (``buf.v_rows``). So the pipeline's steps touch one array of the weights' size, not
    two, and hold the chain of reads and moves for the copy alone."""
    _prefetch_rows(v, idx, i, K)
    ua0 = idx.uniq_ptr[i]
    for r in range(idx.uniq_ptr[i + 1] - ua0):
        base = idx.uniq_attr[ua0 + r] * K
        src = v[base:base + K]
        rows = buf.v_emission[r * K:(r + 1) * K]
        if thresholded:
            for c in range(K):
                rows[c] = soft(src[c], kappa)
        else:
            for c in range(K):
                rows[c] = src[c]
        if split:
            dst = buf.v_rows[r * K:(r + 1) * K]
            for c in range(K):
                dst[c] = src[c]
    ob = n_attr * K
    for j in range(3 * K + K * K):
        small[j] = v[ob + j]


@njit(**NJIT)
def _potentials(K, idx, i, buf, small, kappa, thresholded):
    """The rest of R after its copy (:func:`_gather`): the bias (``buf.v_bias``) and W
    (``buf.w_trans``) from ``small``, thresholded with the elastic net, the scores from
    the gathered rows, the same sums in the same order as :func:`unary_scores` on w, and
    the transition potentials; returns their max."""
    for j in range(3 * K):
        buf.v_bias[j] = soft(small[j], kappa) if thresholded else small[j]
    for j in range(K * K):
        x = small[3 * K + j]
        buf.w_trans[j] = soft(x, kappa) if thresholded else x
    _gathered_scores(buf.v_emission, buf.v_bias, K, idx, i, buf.ws.scores)
    return transition_potentials(buf.w_trans, 0, K, buf.ws.trans)


@njit(**NJIT)
def _gathered_scores(rows, bias, K, idx, i, out):
    """:func:`~crfsdca.model.oracle.unary_scores` of sequence i from its gathered rows of
    the weights (row r of its distinct attributes at ``rows[r * K:]``, the index's
    ``local``) and the bias ``bias``."""
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    real = len(idx.attr_values) > 0
    for t in range(T):
        o = out[t * K:(t + 1) * K]
        for c in range(K):
            o[c] = bias[3 * c]
        add_end_bias(bias, K, t, T, o)
        add_token_rows(rows, K, idx.attr_indptr, idx.local, idx.attr_values, real, start + t,
                       o)
    if len(idx.dense_attr) > 0:  # the dense columns: the sequence's first rows
        add_dense_scores(rows, 1.0, K, idx.dense, idx.dense_rows, start, T, out)


@njit(**NJIT)
def settle_weights(v, w, kappa, entries, n_attr, K):
    """w = S_kappa(v) where the pipeline's moves may have changed v: ``entries`` (empty:
    every weight) and the bias and transitions."""
    if len(entries) == 0:
        for j in range(len(v)):
            w[j] = soft(v[j], kappa)
        return
    for e in range(len(entries)):
        j = entries[e]
        w[j] = soft(v[j], kappa)
    settle_bias_transitions(v, w, kappa, n_attr, K)


@njit(**NJIT)
def settle_bias_transitions(v, w, kappa, n_attr, K):
    """w = S_kappa(v) on the bias and transitions, which the steps move whatever the
    feature set (:func:`settle_weights`' last part, after a pass that set the rest)."""
    for j in range(n_attr * K, n_attr * K + 3 * K + K * K):
        w[j] = soft(v[j], kappa)


@njit(**NJIT_FAST)
def _gathered_split(buf, small, m, K, kappa, g_max):
    """:func:`~.sdca_linesearch.l1_split` on the rows of v that R gathered (``m`` entries
    of the emission rows in ``buf.v_rows``, the bias and transitions in ``small``)."""
    a0, b0, wv, n = _split_range(buf.v_rows[:m], buf.v_emission[:m], kappa, g_max, 0.0,
                                 0.0, 0.0, 0, buf.cross_v, buf.cross_u)
    a0, b0, wv, n = _split_range(small[:3 * K], buf.v_bias, kappa, g_max, a0, b0, wv, n,
                                 buf.cross_v, buf.cross_u)
    return _split_range(small[3 * K:], buf.v_trans, kappa, g_max, a0, b0, wv, n,
                        buf.cross_v, buf.cross_u)


@njit(**NJIT_FAST)
def _squares(a, n):
    s = 0.0
    for j in range(n):
        s += a[j] * a[j]
    return s


@njit(**NJIT_FAST)
def _old_products(K, idx, i, T, buf, stride, scale):
    """<w, u> for the weights R read: scale (sum_t <delta_t, s_t> + the pairwise delta
    against the transition potentials read, per edge at ``stride``, or W)."""
    d = buf.ws.unary
    s = buf.ws.scores
    wv = 0.0
    for j in range(T * K):
        wv += d[j] * s[j]
    wv *= scale
    KK = K * K
    if stride == 0:
        for j in range(KK):
            wv += buf.v_trans[j] * buf.w_trans[j]
    else:
        e = 0.0
        for t in range(T - 1):
            for j in range(KK):
                e += buf.ws.pair[t * KK + j] * buf.w_trans[t * stride + j]
        wv += scale * e
    return wv


@njit(**NJIT)
def _compute(k, w, n_attr, K, idx, st, own, buf, opt, members, flow, tmax, direct):
    """Step k against the weights R(k) read: the rest of its oracle (forward-backward,
    marginals, log Z), its block gap and delta, its direction and its line search, into
    its slot (reads of the state: its own dual block and entropy only)."""
    slot = k % 2
    i = members[flow.drawn[slot]]
    start = idx.offsets[i]
    T = idx.offsets[i + 1] - start
    u0, p0 = start * K, pair_start(start, i, K, opt.compact)
    stride = _stride(idx, K)
    if not _sums_at_read(direct, idx, opt):  # R's copy, read
        tmax = _potentials(K, idx, i, buf, flow.v_small[slot], opt.kappa, defers_w(opt))
    logz = _chain(buf, T, K, tmax, stride, opt.compact)
    own.counters[ORACLE] += 1
    h_nu = chain_score_entropy(buf.ws, buf.w_trans, T, K, logz) if opt.compact else 0.0
    gap = _gap(st, buf, i, u0, p0, T, K, logz, stride, pair_rows(T, opt.compact))
    weight = sequence_weight(idx, i)
    lam_n = opt.lam_n / weight
    scale = -1.0 / lam_n
    d_unary, d_pair = buf.ws.unary, buf.ws.pair
    _primal_direction(w, n_attr, K, idx, i, T, d_unary, d_pair, scale, buf.v_emission,
                      buf.v_bias, buf.v_trans, False, opt.mask, False)  # reads no weight
    nu = idx.uniq_ptr[i + 1] - idx.uniq_ptr[i]
    vv = (_squares(buf.v_emission, nu * K) + _squares(buf.v_bias, 3 * K)
          + _squares(buf.v_trans, K * K))
    if len(idx.edge_indptr) > 0:
        _edge_direction(w, transition_offset(n_attr, K) + K * K, K, idx, i, T, d_pair,
                        scale, buf.v_rows, False)  # reads no weight
        ne = idx.edge_uniq_ptr[i + 1] - idx.edge_uniq_ptr[i]
        vv += _squares(buf.v_rows, ne * K * K)
    a0, b0, n_cross = 0.0, 0.0, 0
    split = l1_split_search(opt)
    if split:  # the split on the rows of v that R gathered
        a0, b0, wv, n_cross = _gathered_split(buf, flow.v_small[slot], nu * K, K, opt.kappa,
                                              max(1.0, opt.fixed_step))
    else:  # <w, u> (with the elastic net's bound, w = S(v) as R read it)
        wv = _old_products(K, idx, i, T, buf, stride, scale)
    blk = Block(i, u0, p0, T, K, n_attr, lam_n, wv, vv, opt.kappa if split else 0.0, a0, b0,
                n_cross)
    gamma, evals, h_ls = store_line_search(blk, st, idx, buf, d_unary, d_pair, gap,
                                           st.entropies[i], h_nu, opt)
    own.counters[LS_EVALS] += evals
    flow.gaps[slot] = weight * gap
    flow.gammas[slot] = gamma
    flow.entropies[slot] = h_ls
    flow.vv[slot] = vv


@njit(inline="always", **NJIT)
def _moves_while_rebasing(direct, idx, opt):
    """Whether A reads <w, u> in the pass that moves the weights (:func:`_rebase_and_move`):
    on one thread (``direct``; on two, where the rows come from the other core, the one
    pass took 6% longer than a pass of reads and then the moves), and not with the
    elastic net's exact split (Q's change at the step), transition attributes (their
    rows), or a rounded store (whose update makes the direction anew)."""
    return (direct and len(idx.edge_indptr) == 0 and not l1_split_search(opt)
            and (opt.compact or opt.exact_store))


@njit(**NJIT)
def _rebase_and_move(v, n_attr, K, idx, i, buf, gamma, kappa, thresholded, kept):
    """v += gamma u on sequence i's direction, its entries as they were into ``kept``;
    returns <w, u> at them (w = S_kappa(v) with ``thresholded``), summed in the order of
    :func:`~.minibatch._rebased`: the same bits, in one pass over the rows rather than
    two (the move is put back, :func:`_put_back`, where it would lower the dual)."""
    wv = 0.0
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        row = v[base:base + K]
        u = buf.v_emission[r * K:(r + 1) * K]
        old = kept[r * K:(r + 1) * K]
        for c in range(K):
            x = row[c]
            old[c] = x
            wv += (soft(x, kappa) if thresholded else x) * u[c]
            row[c] = x + gamma * u[c]
    ob = n_attr * K
    m = nu * K
    for j in range(3 * K):
        x = v[ob + j]
        kept[m + j] = x
        wv += (soft(x, kappa) if thresholded else x) * buf.v_bias[j]
        v[ob + j] = x + gamma * buf.v_bias[j]
    ow = ob + 3 * K
    m += 3 * K
    for j in range(K * K):
        x = v[ow + j]
        kept[m + j] = x
        wv += (soft(x, kappa) if thresholded else x) * buf.v_trans[j]
        v[ow + j] = x + gamma * buf.v_trans[j]
    return wv


@njit(**NJIT)
def _put_back(v, n_attr, K, idx, i, kept):
    """The entries :func:`_rebase_and_move` moved, as they were."""
    ua0 = idx.uniq_ptr[i]
    nu = idx.uniq_ptr[i + 1] - ua0
    for r in range(nu):
        base = idx.uniq_attr[ua0 + r] * K
        for c in range(K):
            v[base + c] = kept[r * K + c]
    ob = n_attr * K
    for j in range(3 * K + K * K):
        v[ob + j] = kept[nu * K + j]


@njit(**NJIT)
def _move(k, w, n_attr, K, idx, st, bufs, opt, members, flow, sampler, direct):
    """A(k): step k rebased on the weights as they are (<w, u> again, or the elastic
    net's change at its step) and taken where it raises the dual there (sequential SDCA's
    move); its fresh gap recorded."""
    slot = k % 2
    buf = bufs[slot]
    j = flow.drawn[slot]
    i = members[j]
    gamma = flow.gammas[slot]
    if gamma != 0.0 and _moves_while_rebasing(direct, idx, opt):
        _prefetch_rows(st.v, idx, i, K)
        start = idx.offsets[i]
        wv = _rebase_and_move(st.v, n_attr, K, idx, i, buf, gamma, opt.kappa, defers_w(opt),
                              flow.kept)
        blk = Block(i, start * K, pair_start(start, i, K, opt.compact),
                    idx.offsets[i + 1] - start, K, n_attr,
                    opt.lam_n / sequence_weight(idx, i), wv, flow.vv[slot], 0.0, 0.0, 0.0,
                    0)
        gamma = _update(w, idx, st, buf, blk, buf.ws.unary, buf.ws.pair, gamma,
                        flow.entropies[slot], st.entropies[i], opt, sequence_weight(idx, i),
                        np.nan, not defers_w(opt), True)
        if gamma == 0.0:
            _put_back(st.v, n_attr, K, idx, i, flow.kept)
    elif gamma != 0.0:
        _prefetch_rows(st.v, idx, i, K)
        blk, change = _rebased(w, n_attr, K, idx, st, buf, opt, i, flow.vv[slot], gamma,
                               defers_w(opt))
        gamma = _update(w, idx, st, buf, blk, buf.ws.unary, buf.ws.pair, gamma,
                        flow.entropies[slot], st.entropies[i], opt, sequence_weight(idx, i),
                        change, not defers_w(opt))
    _count_step(st, gamma)
    record_gap(sampler, j, flow.gaps[slot])
    st.scalars[SUM_GAPS] += sampler.gaps[j] - flow.stored[slot]


@njit(**NJIT)
def _read_step(k, w, n_attr, K, idx, st, buf, opt, members, flow, sampler, rng, direct):
    """D(k) and R(k); returns the transitions' max."""
    _draw(k, sampler, rng, flow, len(members))
    return _read(k, w, n_attr, K, idx, st, buf, opt, members, flow, direct)


@njit(**NJIT)
def pipeline_run(thread, threads, n_steps, w, n_attr, K, idx, st, own, bufs, sampler, rng,
                 opt, members, flow):
    """Thread ``thread`` of ``threads`` (1 or 2): its share of ``n_steps`` pipelined steps
    (module docstring); ``own`` is the state with the thread's own counters."""
    if threads == 1:  # R(k + 1) before A(k), the rest of step k + 1 after it
        tmax = 0.0
        if n_steps > 0:
            tmax = _read_step(0, w, n_attr, K, idx, st, bufs[0], opt, members, flow,
                              sampler, rng, True)
            _compute(0, w, n_attr, K, idx, st, own, bufs[0], opt, members, flow, tmax,
                     True)
        for k in range(n_steps):
            if k + 1 < n_steps:
                tmax = _read_step(k + 1, w, n_attr, K, idx, st, bufs[(k + 1) % 2], opt,
                                  members, flow, sampler, rng, True)
            _move(k, w, n_attr, K, idx, st, bufs, opt, members, flow, sampler, True)
            if k + 1 < n_steps:
                _compute(k + 1, w, n_attr, K, idx, st, own, bufs[(k + 1) % 2], opt,
                         members, flow, tmax, True)
        return
    c = flow.counters
    for k in range(thread, n_steps, 2):
        buf = bufs[k % 2]
        wait_at_least(c, APPLIED, k - 1)
        wait_at_least(c, READ, k)
        tmax = _read_step(k, w, n_attr, K, idx, st, buf, opt, members, flow, sampler, rng,
                          False)
        publish(c, READ, k + 1)
        _compute(k, w, n_attr, K, idx, st, own, buf, opt, members, flow, tmax, False)
        wait_at_least(c, APPLIED, k)
        if k + 1 < n_steps:
            wait_at_least(c, READ, k + 2)
        _move(k, w, n_attr, K, idx, st, bufs, opt, members, flow, sampler, False)
        publish(c, APPLIED, k + 1)


__all__ = ["Flow", "defers_w", "make_flow", "make_slots", "pipeline_run", "settle_weights"]
