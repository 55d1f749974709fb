"""Decoding beyond the plain Viterbi labeling: under constraints, and the n best labelings.

A constraint (:mod:`crfsdca.model.constraints`) is a mask of log-potentials: -inf on the
forbidden transitions, on the labels that may not begin or end a sequence (the first and
last unary scores) and on every label but the forced one at a forced position; 0
elsewhere. The oracle's kernels (:mod:`crfsdca.model.oracle`) then run unchanged on the
masked chain: Viterbi finds the best allowed labeling, forward-backward gives log Z and
the marginals of the distribution restricted to the allowed labelings (a forbidden
labeling has probability exp(-inf) = 0). A masked chain is a :class:`Chain`: the weight
vector the kernels read the transitions from (the model's own, or one of no attributes
and zero bias whose transition block is W + mask), exp(W + mask - max) and the two
position masks.

The n best labelings come from the exact list Viterbi (not a beam): every label of every
position keeps its k best partial labelings, sorted, merged from the k best of each
label before; ties are broken as :func:`~crfsdca.model.oracle.viterbi` breaks them (the
smaller previous label, then the better rank), so that the best of the n is Viterbi's
labeling, with its score bit for bit.

A model with transition attributes (:mod:`crfsdca.data.transitions`) has a table of
log-potentials per edge (:func:`~crfsdca.model.oracle.edge_potentials`); a constraint
masks each of them as it masks W (:func:`masked_edge_tables`), and the kernels read edge
t's table at ``t * K*K`` (the oracle's ``strided_*`` functions). Which labelings a
constraint allows does not depend on the weights, so :func:`feasible` reads the masked W.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..errors import ConfigError
from ..runtime.jit import NJIT, aligned_zeros
from .constraints import Forced, Masks
from .oracle import (
    NO_LABELS,
    edge_potentials,
    edge_tables,
    forward_backward,
    forward_logz,
    make_workspace,
    prefetch_scores,
    strided_labeling_score,
    strided_logz,
    strided_marginals,
    strided_viterbi,
    transition_offset,
    transition_potentials,
    unary_scores,
    viterbi,
)

NO_MASK = np.zeros(0)
"""A position mask that masks nothing."""


class Chain(NamedTuple):
    """The transitions and position masks of a (possibly constrained) chain.

    ``tw``: the weight vector the oracle's kernels read the transition block of, with
    ``tA`` attributes (the model's weights and A, or a vector of 3K + K*K entries and 0);
    ``trans`` = exp(W - ``tmax``) of its transitions (:func:`transition_potentials`);
    ``first`` and ``last``: K log-masks added to the first and last unary scores, or
    :data:`NO_MASK`; ``pairs``: the K*K log-mask of the transitions (:data:`NO_MASK`:
    none), which :func:`masked_edge_tables` adds to every edge's table of a model with
    transition attributes."""

    tw: np.ndarray
    tA: int
    trans: np.ndarray
    tmax: float
    first: np.ndarray
    last: np.ndarray
    pairs: np.ndarray


def make_chain(w: np.ndarray, A: int, K: int, masks: Masks | None) -> Chain:
    """The chain of the model's weights ``w`` (A attributes, K labels) under ``masks``
    (None: the model's own chain, whose kernels read ``w`` itself)."""
    trans = aligned_zeros(K * K)
    ow = transition_offset(A, K)
    if masks is None:
        return Chain(w, A, trans, transition_potentials(w, ow, K, trans), NO_MASK, NO_MASK,
                     NO_MASK)
    tw = aligned_zeros(3 * K + K * K)
    tw[3 * K:] = np.where(masks.allowed.ravel(), w[ow:ow + K * K], -np.inf)
    tmax = transition_potentials(tw, 3 * K, K, trans)
    return Chain(tw, 0, trans, tmax, _log_mask(masks.first), _log_mask(masks.last),
                 _log_mask(masks.allowed.ravel()))


def _log_mask(allowed: np.ndarray) -> np.ndarray:
    return NO_MASK if allowed.all() else np.where(allowed, 0.0, -np.inf)


NO_FORCED = Forced(np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64),
                   np.zeros(0, dtype=np.int32))
"""No forced label, for one sequence."""


def infeasible(which: str) -> ConfigError:
    """The error of a sequence (``which``: "sequence 3") that no labeling satisfies."""
    return ConfigError(f"{which}: no labeling satisfies the constraints and the forced labels")


def check_n_best(k) -> int:
    """``k`` as the number of labelings to find, or ConfigError: an integer >= 1."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"n_best must be an integer >= 1, got {str(k)[:40]}")
    return int(k)


# ---------------------------------------------------------------------------- kernels

@njit(**NJIT)
def mask_scores(scores, T, K, first, last, positions, labels, lo, hi):
    """Mask the unary scores ``scores[:T*K]`` of one sequence: add the K log-masks
    ``first`` and ``last`` (empty: none) to the first and last token's scores, and set
    -inf on every label but ``labels[j]`` at position ``positions[j]``, j in [lo, hi)."""
    if len(first):
        for k in range(K):
            scores[k] += first[k]
    if len(last):
        o = scores[(T - 1) * K:T * K]
        for k in range(K):
            o[k] += last[k]
    for j in range(lo, hi):
        o = scores[positions[j] * K:(positions[j] + 1) * K]
        keep = labels[j]
        for k in range(K):
            if k != keep:
                o[k] = -np.inf


@njit(**NJIT)
def feasible(T, K, tw, tA, first, last, positions, labels, lo, hi):
    """Whether a labeling of T items has every transition of ``tw`` finite and satisfies
    the position masks and forced labels of :func:`mask_scores` (reachability)."""
    if T == 0:
        return True
    ow = transition_offset(tA, K)
    only = np.full(T, -1, dtype=np.int64)
    for j in range(lo, hi):
        only[positions[j]] = labels[j]
    reach = np.zeros(K, dtype=np.bool_)
    nxt = np.zeros(K, dtype=np.bool_)
    for k in range(K):
        reach[k] = (only[0] < 0 or only[0] == k) and (len(first) == 0 or first[k] == 0.0)
    for t in range(1, T):
        for l in range(K):
            nxt[l] = False
            if only[t] >= 0 and only[t] != l:
                continue
            for k in range(K):
                if reach[k] and tw[ow + k * K + l] > -np.inf:
                    nxt[l] = True
                    break
        reach[:] = nxt
    for k in range(K):
        if reach[k] and (len(last) == 0 or last[k] == 0.0):
            return True
    return False


@njit(**NJIT)
def n_best(scores, T, K, tw, ow, stride, k, delta, size, back, head, hval, paths, best):
    """The ``k`` best labelings of the chain of unary scores ``scores[:T*K]`` and the
    transition log-potentials ``tw[ow + t * stride:]`` of edge t (``stride`` 0: one
    table for all), by the list Viterbi; returns how many it found: k, or fewer where
    fewer labelings have a finite score.

    Labeling r goes to ``paths[r*T:(r+1)*T]``, its score to ``best[r]``, best first.
    Scratch: ``delta`` 2*K*k scores (per label, its partial labelings' scores, sorted),
    ``size`` 2*K counts, ``back`` T*K*k codes (previous label * k + its rank), ``head``
    and ``hval`` K each (the merge's position and value in each previous label's list).
    """
    kk = K * k
    for l in range(K):
        delta[l * k] = scores[l]
        size[l] = 1 if scores[l] > -np.inf else 0
    cur = 0
    for t in range(1, T):
        nxt = 1 - cur
        prev = delta[cur * kk:(cur + 1) * kk]
        nsize = size[cur * K:(cur + 1) * K]
        s = scores[t * K:(t + 1) * K]
        e0 = ow + (t - 1) * stride
        for l in range(K):
            out = delta[nxt * kk + l * k:nxt * kk + (l + 1) * k]
            arg = back[(t * K + l) * k:(t * K + l + 1) * k]
            n = 0
            if s[l] > -np.inf:
                for j in range(K):
                    head[j] = 0
                    hval[j] = prev[j * k] + tw[e0 + j * K + l] if nsize[j] > 0 else -np.inf
                while n < k:
                    top = -np.inf
                    at = -1
                    for j in range(K):
                        if hval[j] > top:
                            top = hval[j]
                            at = j
                    if at < 0:
                        break
                    out[n] = top + s[l]
                    arg[n] = at * k + head[at]
                    n += 1
                    head[at] += 1
                    hval[at] = (prev[at * k + head[at]] + tw[e0 + at * K + l]
                                if head[at] < nsize[at] else -np.inf)
            size[nxt * K + l] = n
        cur = nxt
    last = delta[cur * kk:(cur + 1) * kk]
    lsize = size[cur * K:(cur + 1) * K]
    for j in range(K):
        head[j] = 0
        hval[j] = last[j * k] if lsize[j] > 0 else -np.inf
    found = 0
    while found < k:
        top = -np.inf
        at = -1
        for j in range(K):
            if hval[j] > top:
                top = hval[j]
                at = j
        if at < 0:
            break
        best[found] = top
        label, rank = at, head[at]
        path = paths[found * T:(found + 1) * T]
        path[T - 1] = label
        for t in range(T - 1, 0, -1):
            code = back[(t * K + label) * k + rank]
            label, rank = code // k, code % k
            path[t - 1] = label
        found += 1
        head[at] += 1
        hval[at] = last[at * k + head[at]] if head[at] < lsize[at] else -np.inf
    return found


@njit(**NJIT)
def masked_edge_tables(w, A, K, seq, i, pairs, G, trans):
    """:func:`~crfsdca.model.oracle.edge_potentials` of sequence i with the K*K log-mask
    ``pairs`` (empty: none) on every edge: -inf in ``G`` and 0 in ``trans`` (unless
    empty) where it forbids. Returns the tables' max, as ``edge_potentials``."""
    tmax = edge_potentials(w, A, K, seq, i, G, trans)
    if len(pairs):
        KK = K * K
        for t in range(seq.offsets[i + 1] - seq.offsets[i] - 1):
            g = G[t * KK:(t + 1) * KK]
            for j in range(KK):
                if pairs[j] < 0.0:
                    g[j] = -np.inf
            if len(trans):
                e = trans[t * KK:(t + 1) * KK]
                for j in range(KK):
                    if pairs[j] < 0.0:
                        e[j] = 0.0
    return tmax


@njit(**NJIT)
def _labels_all(w, A, K, seq, tw, tA, first, last, pairs, indptr, positions, labels, ws, G,
                out):
    """Viterbi under the masks of every sequence into ``out``; -1, or the first sequence
    with no allowed labeling. ``G``: a per-edge buffer (empty: the model has no
    transition attributes). The next sequence's rows of w are fetched meanwhile."""
    n = len(seq.offsets) - 1
    for i in range(n):
        prefetch_scores(w, K, seq, i + 1)
        T = unary_scores(w, A, K, seq, i, ws.scores)
        mask_scores(ws.scores, T, K, first, last, positions, labels, indptr[i], indptr[i + 1])
        if len(G):
            masked_edge_tables(w, A, K, seq, i, pairs, G, G[:0])
            best = strided_viterbi(ws.scores, T, K, G, 0, K * K, ws.emit, ws.back, ws.path)
        else:
            best = viterbi(ws.scores, T, K, tw, tA, ws.emit, ws.back, ws.path)
        if not best > -np.inf:
            return i
        start = seq.offsets[i]
        for t in range(T):
            out[start + t] = ws.path[t]
    return -1


@njit(**NJIT)
def _n_best_all(w, A, K, seq, tw, tA, tmax, first, last, pairs, indptr, positions, labels, k,
                ws, G, delta, size, back, head, hval, pbuf, sbuf, paths, probs, counts):
    ow = transition_offset(tA, K)
    KK = K * K
    for i in range(len(seq.offsets) - 1):
        T = unary_scores(w, A, K, seq, i, ws.scores)
        mask_scores(ws.scores, T, K, first, last, positions, labels, indptr[i], indptr[i + 1])
        if len(G):
            gmax = masked_edge_tables(w, A, K, seq, i, pairs, G, ws.trans)
            m = n_best(ws.scores, T, K, G, 0, KK, k, delta, size, back, head, hval, pbuf, sbuf)
            logz = strided_logz(ws, T, K, gmax, G, 0, KK) if m else 0.0
        else:
            m = n_best(ws.scores, T, K, tw, ow, 0, k, delta, size, back, head, hval, pbuf, sbuf)
            logz = forward_logz(ws, T, K, tmax, tw, ow) if m else 0.0
        if m == 0:
            return i
        start = seq.offsets[i]
        for r in range(m):
            probs[i, r] = np.exp(sbuf[r] - logz)
            for t in range(T):
                paths[r, start + t] = pbuf[r * T + t]
        counts[i] = m
    return -1


@njit(**NJIT)
def _marginals_one(w, A, K, seq, i, tw, tA, tmax, first, last, pairs, positions, labels, lo,
                   hi, ws, G):
    T = unary_scores(w, A, K, seq, i, ws.scores)
    mask_scores(ws.scores, T, K, first, last, positions, labels, lo, hi)
    if len(G):
        gmax = masked_edge_tables(w, A, K, seq, i, pairs, G, ws.trans)
        return strided_marginals(ws, T, K, G, 0, gmax, 0.0, NO_LABELS, 0, False, K * K)[0]
    return forward_backward(ws, T, K, tmax, tw, tA)


@njit(**NJIT)
def _scores_all(w, A, K, seq, y, ws, G, out):
    """score(x_i, y_i) of every sequence for the labels ``y`` (a label per token)."""
    ow = transition_offset(A, K)
    for i in range(len(seq.offsets) - 1):
        T = unary_scores(w, A, K, seq, i, ws.scores)
        start = seq.offsets[i]
        if len(G):
            edge_potentials(w, A, K, seq, i, G, G[:0])
            out[i] = strided_labeling_score(ws.scores, T, K, G, 0, K * K, y, start)
        else:
            out[i] = strided_labeling_score(ws.scores, T, K, w, ow, 0, y, start)


# ---------------------------------------------------------------------------- a split

def _max_len(seq) -> int:
    return int(np.max(np.diff(seq.offsets))) if len(seq.offsets) > 1 else 1


def _raise_infeasible(bad: int, numbers) -> None:
    if bad >= 0:
        raise infeasible(f"sequence {int(numbers[bad]) if numbers is not None else bad}")


def constrained_labels(w, A: int, K: int, seq, chain: Chain, forced: Forced,
                       numbers=None) -> np.ndarray:
    """The best allowed labeling of every sequence of the split ``seq`` (int32 per token),
    under ``chain`` and ``forced`` (one entry per sequence); ConfigError names the first
    sequence that has none (``numbers[i]``: how the caller numbers sequence i)."""
    out = np.empty(int(seq.offsets[-1]), dtype=np.int32)
    T = _max_len(seq)
    ws = make_workspace(T, K)
    bad = _labels_all(w, A, K, seq, chain.tw, chain.tA, chain.first, chain.last, chain.pairs,
                      forced.indptr, forced.positions, forced.labels, ws,
                      edge_tables(T, K, seq.has_edges), out)
    _raise_infeasible(bad, numbers)
    return out


class NBest(NamedTuple):
    """The n best labelings of a split: labeling r of sequence i is
    ``paths[r, offsets[i]:offsets[i + 1]]`` with probability ``probs[i, r]``, for r below
    ``counts[i]`` (k, or fewer where the sequence has fewer allowed labelings)."""

    paths: np.ndarray
    probs: np.ndarray
    counts: np.ndarray


def n_best_labels(w, A: int, K: int, seq, k: int, chain: Chain, forced: Forced,
                  numbers=None) -> NBest:
    """The ``k`` best allowed labelings of every sequence of ``seq``, with their
    probabilities under the (constrained) model; ConfigError names the first sequence
    with no allowed labeling."""
    n, N = len(seq.offsets) - 1, int(seq.offsets[-1])
    T = _max_len(seq)
    ws = _workspace(seq, T, K, chain)
    paths = np.zeros((k, N), dtype=np.int32)
    probs = np.zeros((n, k))
    counts = np.zeros(n, dtype=np.int64)
    bufs = n_best_buffers(T, K, k)
    bad = _n_best_all(w, A, K, seq, chain.tw, chain.tA, chain.tmax, chain.first, chain.last,
                      chain.pairs, forced.indptr, forced.positions, forced.labels, k, ws,
                      edge_tables(T, K, seq.has_edges), *bufs, paths, probs, counts)
    _raise_infeasible(bad, numbers)
    return NBest(paths, probs, counts)


def _workspace(seq, T: int, K: int, chain: Chain):
    """A workspace for the sequences of ``seq`` under ``chain``: its ``trans`` the
    chain's, or a table per edge for a split with transition attributes."""
    if seq.has_edges:
        return make_workspace(T, K, edges=True)
    return make_workspace(T, K)._replace(trans=chain.trans)


def labeling_scores(w, A: int, K: int, seq, y) -> np.ndarray:
    """score(x_i, y_i) of every sequence of ``seq`` for the labels ``y`` (a label per
    token), transition attributes included."""
    T = _max_len(seq)
    out = np.empty(len(seq.offsets) - 1)
    _scores_all(w, A, K, seq, np.ascontiguousarray(y, dtype=np.int32),
                make_workspace(T, K), edge_tables(T, K, seq.has_edges), out)
    return out


def n_best_buffers(T: int, K: int, k: int) -> tuple:
    """The scratch and output buffers of :func:`n_best` for up to T items (delta, size,
    back, head, hval, paths, scores)."""
    T = max(T, 1)
    return (np.empty(2 * K * k), np.zeros(2 * K, dtype=np.int64),
            np.empty(T * K * k, dtype=np.int32), np.zeros(K, dtype=np.int64), np.empty(K),
            np.empty(k * T, dtype=np.int32), np.empty(k))


class MarginalPass:
    """The marginals of one sequence after another of a split under one chain, in one
    workspace: :meth:`__call__` gives (log Z, unary (T, K), pairwise (T-1, K, K))."""

    def __init__(self, w, A: int, K: int, seq, chain: Chain, forced: Forced, numbers=None):
        self.args = (w, A, K, seq)
        self.chain, self.forced, self.numbers = chain, forced, numbers
        self.K = K
        T = _max_len(seq)
        self.ws = _workspace(seq, T, K, chain)
        self.G = edge_tables(T, K, seq.has_edges)
        self.offsets = seq.offsets

    def __call__(self, i: int):
        c, f, ws, K = self.chain, self.forced, self.ws, self.K
        logz = _marginals_one(*self.args, i, c.tw, c.tA, c.tmax, c.first, c.last, c.pairs,
                              f.positions, f.labels, f.indptr[i], f.indptr[i + 1], ws, self.G)
        if not logz > -np.inf:
            _raise_infeasible(i, self.numbers)
        T = int(self.offsets[i + 1] - self.offsets[i])
        return (float(logz), ws.unary[:T * K].reshape(T, K).copy(),
                ws.pair[:(T - 1) * K * K].reshape(T - 1, K, K).copy())
