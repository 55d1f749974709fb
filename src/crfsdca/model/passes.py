"""Full-batch passes that give the same bits on any number of threads.

A pass cuts the split into chunks of about :data:`CHUNK_TOKENS` tokens
(:func:`chunk_bounds`): fixed by the data, never by the thread count. The threads claim
chunks one after the other (:func:`claim`: a counter under a lock, so that a thread slowed
by another process takes fewer), and a chunk writes only outputs of its own: per
sequence, per token, or its row of a small table. Partial results are then added in a
fixed order (of sequences, tokens or chunks), so that a result does not depend on the
thread count or the scheduling.

The gradient (:func:`gradient_pass`) takes two phases, so that no thread holds a
gradient of the weights' size of its own (CoNLL-2000 has 7.4 million weights):

1. over chunks: forward-backward of each sequence i; per token t, the K entries
   ``G[t] = c_i (mu_t - e_{y_t})`` (an N x K table: the marginals minus the gold labels,
   so that the gold statistics are not summed apart); the sequence's loss; and the
   chunk's bias and transition statistics (the 3K + K^2 weights every sequence touches)
   in its row of a small table;
2. over buckets of attributes (:class:`Buckets`: the entries' positions sorted by
   bucket, once per split): each attribute's row is the sum from 0 of value x G[t] over
   its entries in token order, finished where it is written (/ n + lam w, times the
   feature mask); a dense block's rows likewise over every token, its columns cut among
   the threads; the bias and transition entries add the chunks' rows in chunk order.

A split with transition attributes (:mod:`crfsdca.data.transitions`) keeps each edge's
pairwise marginals, which its W_B rows read; its gradient runs on one thread
(:func:`_serial_gradient`), its loss on all.

One thread runs both in one loop (:func:`_serial_gradient`): a sequence's entries go
into their rows as soon as its G is known, the same sums in the same order, without the
N x K table. One thread also adds the losses in sequence order and ||w||^2 in
:func:`dot`'s order: P(w) is the value of the serial loop of before, bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..data.sequences import Sequences
from ..runtime.jit import NJIT, aligned_empty, dot, lock, unlock
from ..runtime.threads import run_parallel
from .oracle import (
    NO_LABELS,
    chain_marginals,
    edge_potentials,
    edge_tables,
    forward_logz,
    labeling_score,
    make_workspace,
    prefetch_scores,
    strided_labeling_score,
    strided_logz,
    strided_marginals,
    transition_offset,
    transition_potentials,
    unary_scores,
)
from .stats import add_dense_outer, add_edge_label_stats, add_edge_marginal_stats

CHUNK_TOKENS = 512
"""Tokens of a pass's chunk: small enough to feed 64 threads on CoNLL-2000 (413 chunks)."""
BUCKETS_PER_THREAD = 2
"""Buckets of attributes per thread in the gradient's second phase (claimed in turn; a
bucket walks every token, so more of them cost more: on CoNLL-2000 on two threads, 4
buckets took 41 ms, 16 took 59)."""
ROW_WORK = 8
"""An attribute's row in the gradient's second phase costs about as much as 8 of its
entries (its zeroing, its finishing and the first touch of its cache lines): on CoNLL-2000
(22 labels) the bucket of the 305,579 rarest attributes took 30 ms and each other bucket
of as many entries 11-13 ms, counting a row as one entry; counting it as 8, the 4 buckets
take 13-17 ms and the phase 41 -> 35 ms on two threads."""


@njit(inline="always", **NJIT)
def sequence_weight(seq, i):
    """c_i, the weight of sequence i (1.0 when ``seq`` is unweighted: a product with it is
    exact, so the unweighted arithmetic is unchanged)."""
    return seq.weights[i] if len(seq.weights) > 0 else 1.0


def chunk_bounds(seq: Sequences, tokens: int | None = None) -> np.ndarray:
    """Sequence indices cutting the split into chunks of about ``tokens`` tokens
    (:data:`CHUNK_TOKENS`; a pass's work is about proportional to them), each at the
    nearest sequence boundary: chunk c runs from ``bounds[c]`` to ``bounds[c + 1]``."""
    size = CHUNK_TOKENS if tokens is None else tokens
    chunks = -(-seq.n_tokens // size)
    if chunks <= 1:  # what the cut below gives, without its numpy calls (a predict_single)
        return np.array([0, seq.n_sequences], dtype=np.int64)
    targets = np.arange(chunks + 1) * (seq.n_tokens / chunks)
    bounds = np.searchsorted(seq.offsets, targets).astype(np.int64)
    bounds[0], bounds[-1] = 0, seq.n_sequences
    return np.unique(bounds)


def claims() -> tuple[np.ndarray, np.ndarray]:
    """A fresh counter and its lock for :func:`claim` (each on a cache line of its own)."""
    return np.zeros(8, dtype=np.int64), np.zeros(16, dtype=np.int32)


@njit(inline="always", **NJIT)
def claim(counter, locks):
    """The next unclaimed item (0, 1, 2, ...) of the threads sharing ``counter``."""
    lock(locks, 0)
    c = counter[0]
    counter[0] = c + 1
    unlock(locks, 0)
    return c


def workspace(seq: Sequences, n_labels: int):
    """An oracle workspace for the longest sequence of a split."""
    return make_workspace(int(np.max(seq.lengths())), n_labels, edges=seq.has_edges)


def tables(seq: Sequences, n_labels: int) -> np.ndarray:
    """The per-edge log-potentials' buffer for the longest sequence of a split (empty
    without transition attributes)."""
    return edge_tables(int(np.max(seq.lengths())), n_labels, seq.has_edges)


class Buckets(NamedTuple):
    """The entries of a split cut by attribute ranges: bucket b holds attributes
    ``bounds[b]`` to ``bounds[b + 1]`` and its entries' positions in the CSR index
    ``entries[ptr[b]:ptr[b + 1]]``, ascending (so in token order)."""

    bounds: np.ndarray
    ptr: np.ndarray
    entries: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self)


@njit(**NJIT)
def _fill_buckets(indices, bucket_of, ptr, entries):
    """Counting sort of the entries' positions by the bucket of their attribute (stable:
    each bucket's positions ascending); ``ptr`` (zeros, B + 1) gets the buckets' starts."""
    B = len(ptr) - 1
    for j in range(len(indices)):
        ptr[bucket_of[indices[j]] + 1] += 1
    for b in range(B):
        ptr[b + 1] += ptr[b]
    fill = ptr[:B].copy()
    for j in range(len(indices)):
        b = bucket_of[indices[j]]
        entries[fill[b]] = j
        fill[b] += 1


def buckets(seq: Sequences, n_attr: int, count: int) -> Buckets:
    """The split's entries in ``count`` buckets of attributes of about equal work (an
    entry costs one unit, a row :data:`ROW_WORK`)."""
    work = np.zeros(n_attr + 1, dtype=np.int64)
    np.cumsum(np.bincount(seq.attr_indices, minlength=n_attr) + ROW_WORK, out=work[1:])
    bounds = np.searchsorted(work, np.arange(count + 1) * (work[-1] / count)).astype(np.int64)
    bounds[0], bounds[-1] = 0, n_attr
    bounds = np.unique(bounds)
    bucket_of = np.repeat(np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds))
    ptr = np.zeros(len(bounds), dtype=np.int64)
    entries = np.empty(seq.nnz, dtype=np.int32 if seq.nnz < 2**31 else np.int64)
    _fill_buckets(seq.attr_indices, bucket_of, ptr, entries)
    return Buckets(bounds, ptr, entries)


@njit(**NJIT)
def _loss_chunks(w, n_attr, K, seq, bounds, ws, G, losses, counter, locks):
    """losses[i] = c_i NLL_i for the sequences of the chunks this thread claims (0 for a
    sequence of weight 0), log Z by the forward pass alone (the next sequence's rows of w
    fetched meanwhile: :func:`~.oracle.prefetch_scores`)."""
    ow = transition_offset(n_attr, K)
    tmax = transition_potentials(w, ow, K, ws.trans)
    while True:
        c = claim(counter, locks)
        if c >= len(bounds) - 1:
            return
        for i in range(bounds[c], bounds[c + 1]):
            prefetch_scores(w, K, seq, i + 1)
            weight = sequence_weight(seq, i)
            if weight == 0.0:  # out of the objective
                losses[i] = 0.0
                continue
            T = unary_scores(w, n_attr, K, seq, i, ws.scores)
            if len(seq.edge_indptr) > 0:
                emax = edge_potentials(w, n_attr, K, seq, i, G, ws.trans)
                logz = strided_logz(ws, T, K, emax, G, 0, K * K)
                score = strided_labeling_score(ws.scores, T, K, G, 0, K * K,
                                               seq.labels, seq.offsets[i])
                losses[i] = weight * (logz - score)
                continue
            logz = forward_logz(ws, T, K, tmax, w, ow)
            losses[i] = weight * (logz - labeling_score(ws.scores, T, K, w, n_attr,
                                                         seq.labels, seq.offsets[i]))


@njit(inline="always", **NJIT)
def _sequence_statistics(ws, g, weight, labels, start, T, K, bias, trans):
    """g[t] = c_i (mu_t - e_{y_t}) for the T tokens of a sequence (its unary marginals in
    ``ws.unary``, the sum of its pairwise marginals in ``ws.pair[:K*K]``), and its bias and
    transition statistics added into ``bias`` (3K) and ``trans`` (K^2)."""
    for t in range(T):
        u = ws.unary[t * K:(t + 1) * K]
        gt = g[t * K:(t + 1) * K]
        for k in range(K):
            gt[k] = weight * u[k]
        y = labels[start + t]
        gt[y] = weight * (u[y] - 1.0)
        for k in range(K):
            bias[3 * k] += gt[k]
    last = (T - 1) * K
    for k in range(K):
        bias[3 * k + 1] += g[k]
        bias[3 * k + 2] += g[last + k]
    if T > 1:
        pair = ws.pair[:K * K]
        for j in range(K * K):
            trans[j] += weight * pair[j]
        for t in range(T - 1):
            trans[labels[start + t] * K + labels[start + t + 1]] -= weight


@njit(inline="always", **NJIT)
def _add_entry(o, g, values, j, real):
    """o += value_j g: one entry's part of its attribute's row (the one expression of
    both paths, so that they round alike). A binary entry multiplies by 1.0, exactly:
    a branch on ``real`` in the loop made it 3x slower."""
    v = values[j] if real else 1.0
    for k in range(len(o)):
        o[k] += v * g[k]


@njit(**NJIT)
def _finish_rows(out, lo, hi, w, lam, n, mask):
    """out[j] = out[j] / n + lam w[j], times mask[j] when a mask is given, lo <= j < hi."""
    o = out[lo:hi]
    wj = w[lo:hi]
    if len(mask) > 0:
        m = mask[lo:hi]
        for j in range(hi - lo):
            o[j] = (o[j] / n + lam * wj[j]) * m[j]
    else:
        for j in range(hi - lo):
            o[j] = o[j] / n + lam * wj[j]


@njit(**NJIT)
def _zero(a, lo, hi):
    """a[lo:hi] = 0, on the calling thread (so that threads fault in their own pages)."""
    for j in range(lo, hi):
        a[j] = 0.0


@njit(**NJIT)
def _gradient_chunks(w, n_attr, K, seq, bounds, ws, losses, G, small, counter, locks):
    """Phase 1 over the chunks this thread claims: losses[i] as :func:`_loss_chunks`,
    G[t] = c_i (mu_t - e_{y_t}) for each token t (zeros for weight 0), and row c of
    ``small``: the chunk's bias and transition statistics, in sequence order.

    The pairwise marginals are summed over the edges as the chain computes them (one
    K x K table in cache instead of T - 1 written and read back); the next sequence's
    rows of w fetched meanwhile."""
    ow = transition_offset(n_attr, K)
    tmax = transition_potentials(w, ow, K, ws.trans)
    labels = seq.labels
    while True:
        c = claim(counter, locks)
        if c >= len(bounds) - 1:
            return
        part = small[c]
        for j in range(len(part)):
            part[j] = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            prefetch_scores(w, K, seq, i + 1)
            start = seq.offsets[i]
            T = seq.offsets[i + 1] - start
            g = G[start * K:(start + T) * K]
            weight = sequence_weight(seq, i)
            if weight == 0.0:  # out of the objective
                losses[i] = 0.0
                for j in range(T * K):
                    g[j] = 0.0
                continue
            unary_scores(w, n_attr, K, seq, i, ws.scores)
            logz = chain_marginals(ws, T, K, w, ow, tmax, 0.0, NO_LABELS, 0, True)[0]
            losses[i] = weight * (logz - labeling_score(ws.scores, T, K, w, n_attr, labels,
                                                         start))
            _sequence_statistics(ws, g, weight, labels, start, T, K, part[:3 * K],
                                 part[3 * K:])


@njit(inline="always", **NJIT)
def _bucket_rows(G, K, indptr, indices, values, entries, e0, e1, out):
    """out's rows += value x G[t] for the entries ``entries[e0:e1]`` (ascending), t the
    token of each (``values`` empty: binary)."""
    t, end = 0, indptr[1]
    g = G[:K]
    for e in range(e0, e1):
        j = entries[e]
        if j >= end:  # the next token of this bucket
            while indptr[t + 1] <= j:
                t += 1
            end = indptr[t + 1]
            g = G[t * K:(t + 1) * K]
        a = indices[j]
        _add_entry(out[a * K:(a + 1) * K], g, values, j, len(values) > 0)


@njit(**NJIT)
def _emission_rows(G, K, seq, buckets, w, lam, n, mask, out, counter, locks):
    """Phase 2 over the buckets this thread claims: each attribute's row of the gradient,
    the sum of value x G[t] over its entries in token order, finished."""
    bounds, ptr, entries = buckets
    indptr, indices, values = seq.attr_indptr, seq.attr_indices, seq.attr_values
    while True:
        b = claim(counter, locks)
        if b >= len(bounds) - 1:
            return
        lo, hi = bounds[b] * K, bounds[b + 1] * K
        _zero(out, lo, hi)
        _bucket_rows(G, K, indptr, indices, values, entries, ptr[b], ptr[b + 1], out)
        _finish_rows(out, lo, hi, w, lam, n, mask)


@njit(**NJIT)
def _dense_rows(G, K, seq, d0, d1, w, lam, n, mask, out):
    """The rows of the dense columns d0 <= d < d1, summed over the sequences in order
    (:func:`~.stats.add_dense_outer`), finished."""
    cols, offsets = seq.dense_attr, seq.offsets
    for d in range(d0, d1):
        _zero(out, cols[d] * K, cols[d] * K + K)
    for i in range(len(offsets) - 1):
        start = offsets[i]
        add_dense_outer(out, 1.0, cols, seq.dense, start, G, start * K,
                        offsets[i + 1] - start, K, d0, d1)
    for d in range(d0, d1):
        _finish_rows(out, cols[d] * K, cols[d] * K + K, w, lam, n, mask)


@njit(**NJIT)
def _edge_chain(w, n_attr, K, seq, i, ws, G, weight, out):
    """log Z and score(x_i, y_i) of sequence i of a split with transition attributes, its
    unary marginals in ``ws.unary`` and its pairwise ones summed over the edges in
    ``ws.pair[:K*K]``; the edges' W_B rows of c_i (E_nu[F] - F(x_i, y_i)) added into
    ``out`` on the way (:mod:`.stats`' edge sums, the marginals' then the gold labels')."""
    KK = K * K
    oe = transition_offset(n_attr, K) + KK
    start = seq.offsets[i]
    T = seq.offsets[i + 1] - start
    emax = edge_potentials(w, n_attr, K, seq, i, G, ws.trans)
    logz = strided_marginals(ws, T, K, G, 0, emax, 0.0, NO_LABELS, 0, False, KK)[0]
    score = strided_labeling_score(ws.scores, T, K, G, 0, KK, seq.labels, start)
    add_edge_marginal_stats(out, weight, ws.pair, 0, K, oe, seq, i)
    add_edge_label_stats(out, -weight, K, oe, seq, i)
    first = ws.pair[:KK]
    for t in range(1, T - 1):
        pt = ws.pair[t * KK:(t + 1) * KK]
        for j in range(KK):
            first[j] += pt[j]
    return logz, score


@njit(**NJIT)
def _serial_gradient(w, n_attr, K, seq, bounds, ws, G, g, losses, small, lam, n, mask, out):
    """Both phases on one thread without G: each sequence's entries added into their rows
    as soon as its g is known. The same sums in the same order as the two phases
    (each row in token order from 0, the chunks' small rows in chunk order), so the same
    bits; a sequence of weight 0 adds only zeros there, and is skipped here."""
    ow = transition_offset(n_attr, K)
    tmax = transition_potentials(w, ow, K, ws.trans)
    indptr, indices, values = seq.attr_indptr, seq.attr_indices, seq.attr_values
    real = len(values) > 0
    labels = seq.labels
    dense = len(seq.dense_attr) > 0
    edges = len(seq.edge_indptr) > 0
    oe = ow + K * K
    _zero(out, 0, n_attr * K)
    _zero(out, oe, len(out))
    for c in range(len(bounds) - 1):
        part = small[c]
        for j in range(len(part)):
            part[j] = 0.0
        for i in range(bounds[c], bounds[c + 1]):
            prefetch_scores(w, K, seq, i + 1)
            start = seq.offsets[i]
            T = seq.offsets[i + 1] - start
            weight = sequence_weight(seq, i)
            if weight == 0.0:  # out of the objective
                losses[i] = 0.0
                continue
            unary_scores(w, n_attr, K, seq, i, ws.scores)
            if edges:
                logz, score = _edge_chain(w, n_attr, K, seq, i, ws, G, weight, out)
                losses[i] = weight * (logz - score)
            else:
                logz = chain_marginals(ws, T, K, w, ow, tmax, 0.0, NO_LABELS, 0, True)[0]
                losses[i] = weight * (logz - labeling_score(ws.scores, T, K, w, n_attr,
                                                             labels, start))
            _sequence_statistics(ws, g, weight, labels, start, T, K, part[:3 * K],
                                 part[3 * K:])
            for t in range(T):
                gt = g[t * K:(t + 1) * K]
                for j in range(indptr[start + t], indptr[start + t + 1]):
                    a = indices[j]
                    _add_entry(out[a * K:(a + 1) * K], gt, values, j, real)
            if dense:
                add_dense_outer(out, 1.0, seq.dense_attr, seq.dense, start, g, 0, T, K, 0,
                                len(seq.dense_attr))
    _finish_rows(out, 0, n_attr * K, w, lam, n, mask)
    _small_rows(small, w, n_attr * K, lam, n, mask, out)
    _finish_rows(out, oe, len(out), w, lam, n, mask)


@njit(**NJIT)
def _small_rows(small, w, ob, lam, n, mask, out):
    """The bias and transition entries of the gradient (from ``ob``): the chunks' rows of
    ``small`` added in chunk order, finished."""
    o = out[ob:ob + small.shape[1]]
    first = small[0]
    for j in range(len(o)):
        o[j] = first[j]
    for c in range(1, small.shape[0]):
        part = small[c]
        for j in range(len(o)):
            o[j] += part[j]
    _finish_rows(out, ob, ob + len(o), w, lam, n, mask)


@njit(**NJIT)
def loss_sum(losses, seq):
    """sum_i losses[i] in sequence order, over the sequences of nonzero weight."""
    total = 0.0
    for i in range(len(losses)):
        if sequence_weight(seq, i) != 0.0:
            total += losses[i]
    return total


class SlotBuffers:
    """What the passes over a split keep from one call to the next for one caller (an
    L-BFGS run): the chunks, the threads' workspaces, the per-sequence losses, the
    chunks' small table, and on several threads the N x K table G and the
    :class:`Buckets` of the entries. Fresh arrays would fault their pages in again on
    every call (and the buckets be sorted again). The gradient returned is a new array
    each call unless the caller gives its own (``into``)."""

    def __init__(self):
        self._seq = self._key = None
        self._count = 0
        self.bounds = np.zeros(0, dtype=np.int64)
        self.workspaces: list = []
        self.tables: list = []  # the threads' per-edge log-potentials (transition attributes)
        self.losses = self.small = self.g = self.table = self.buckets = None

    def get(self, seq: Sequences, n_attr: int, K: int, threads: int, want_grad: bool):
        """These buffers, made ready for passes over ``seq`` on ``threads`` threads."""
        if seq is not self._seq or (n_attr, K) != self._key:
            self.__init__()
            self._seq, self._key = seq, (n_attr, K)
            self.bounds = chunk_bounds(seq)
            self.losses = aligned_empty(seq.n_sequences)
        while len(self.workspaces) < threads:
            self.workspaces.append(workspace(seq, K))
            self.tables.append(tables(seq, K))
        if want_grad and self.small is None:
            chunks, S = len(self.bounds) - 1, 3 * K + K * K
            self.small = aligned_empty(chunks * S).reshape(chunks, S)
            self.g = aligned_empty(int(np.max(seq.lengths())) * K)
        if want_grad and threads > 1 and self.table is None:
            self.table = aligned_empty(seq.n_tokens * K)
        count = BUCKETS_PER_THREAD * threads
        if want_grad and threads > 1 and self._count != count:
            self.buckets, self._count = None, 0  # the old ones freed first
            self.buckets, self._count = buckets(seq, n_attr, count), count
        return self

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays kept for the gradient (G, the buckets, the small table)."""
        return sum(a.nbytes for a in (self.table, self.small, self.g) if a is not None) + (
            self.buckets.nbytes if self.buckets is not None else 0)


def gradient_pass(w, seq: Sequences, n_attr: int, K: int, lam: float, want_grad: bool,
                  mask: np.ndarray, threads: int, buffers: SlotBuffers | None,
                  into: np.ndarray | None):
    """(P(w) without its L1 term, grad P(w) restricted to ``mask`` (empty: none) in
    ``into`` or a new array, or None without ``want_grad``), on ``threads`` threads."""
    if want_grad and seq.has_edges:
        threads = 1  # the W_B rows are summed on one thread (the module's docstring)
    b = (buffers or SlotBuffers()).get(seq, n_attr, K, threads, want_grad)
    n = seq.n_sequences
    if want_grad and threads == 1:
        out = aligned_empty(len(w)) if into is None else into
        ww = dot(w, w)
        _serial_gradient(w, n_attr, K, seq, b.bounds, b.workspaces[0], b.tables[0], b.g,
                         b.losses, b.small, lam, float(n), mask, out)
        return 0.5 * lam * ww + loss_sum(b.losses, seq) / n, out
    counter, locks = claims()
    ww = [0.0]

    def phase1(s):
        if s == 0:  # ||w||^2 in dot's order, while the other threads start on the chunks
            ww[0] = dot(w, w)
        if want_grad:
            _gradient_chunks(w, n_attr, K, seq, b.bounds, b.workspaces[s], b.losses,
                             b.table, b.small, counter, locks)
        else:
            _loss_chunks(w, n_attr, K, seq, b.bounds, b.workspaces[s], b.tables[s], b.losses,
                         counter, locks)

    run_parallel([(lambda s=s: phase1(s)) for s in range(threads)])
    value = 0.5 * lam * ww[0] + loss_sum(b.losses, seq) / n
    if not want_grad:
        return value, None
    out = aligned_empty(len(w)) if into is None else into  # faulted in by the threads
    counter, locks = claims()
    G, nf = b.table, float(n)
    run_parallel([(lambda: _emission_rows(G, K, seq, b.buckets, w, lam, nf, mask, out,
                                          counter, locks))] * threads)
    _small_rows(b.small, w, n_attr * K, lam, nf, mask, out)
    if seq.n_dense:
        cuts = np.linspace(0, seq.n_dense, min(threads, seq.n_dense) + 1).astype(np.int64)
        run_parallel([(lambda s=s: _dense_rows(G, K, seq, cuts[s], cuts[s + 1], w, lam, nf,
                                               mask, out))
                      for s in range(len(cuts) - 1)])
    return value, out
