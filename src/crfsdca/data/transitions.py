"""Transition attributes: the attributes of a token that score the transition into it.

CRF++'s ``B`` templates that read the input (``B01:%x[0,1]``) and Wapiti's ``b`` and
``*`` lines make a transition score W[y_{t-1}, y_t] + sum_e x_{t,e} W_B[e, y_{t-1}, y_t]
that depends on the token. In items they are attributes like any other, named with a
prefix (the CRF's ``transition_prefix``; the templates' :data:`TRANSITION_PREFIX`), so
that they travel through ``fit``, pipelines and streams unchanged; after encoding,
:func:`split_transitions` moves them out of the attribute CSR into the split's
transition CSR (:class:`~crfsdca.data.sequences.Sequences`), with ids of their own.
The first token of a sequence has no transition into it: its transition attributes are
dropped, as CRF++ and Wapiti drop them.
"""

from __future__ import annotations

import numpy as np

from .sequences import Sequences

TRANSITION_PREFIX = "B~"
"""The prefix of the transition attributes that the templates generate (no attribute of
a ``U`` line starts with it: CRF++'s start with ``U``, Wapiti's with ``u``)."""


def transition_mask(names: list[str], prefix: str | None) -> np.ndarray:
    """Which of ``names`` are transition attributes (bool per name)."""
    if not prefix:
        return np.zeros(len(names), dtype=bool)
    return np.fromiter((n.startswith(prefix) for n in names), dtype=bool, count=len(names))


def split_transitions(seq: Sequences, is_edge: np.ndarray) -> tuple[Sequences, np.ndarray,
                                                                     np.ndarray]:
    """``seq`` with the attributes where ``is_edge`` (indexed by attribute id) moved into
    its transition CSR, and the old ids of the attributes kept (in order: the new ids
    0, 1, ...) and of the transition attributes (likewise). Entries on the first token of
    a sequence go; a transition attribute seen only there keeps its id (a weight block
    that no token reads)."""
    is_edge = np.asarray(is_edge, dtype=bool)
    if seq.n_dense and np.any(is_edge[seq.dense_attr]):
        raise ValueError("a transition attribute cannot be an array attribute (a dense "
                         "column)")
    unary_ids = np.flatnonzero(~is_edge)
    edge_ids = np.flatnonzero(is_edge)
    new_id = np.empty(len(is_edge), dtype=np.int32)
    new_id[unary_ids] = np.arange(len(unary_ids), dtype=np.int32)
    new_id[edge_ids] = np.arange(len(edge_ids), dtype=np.int32)
    entry_edge = is_edge[seq.attr_indices]
    token = np.repeat(np.arange(seq.n_tokens), np.diff(seq.attr_indptr))
    first = np.zeros(seq.n_tokens, dtype=bool)
    first[seq.offsets[:-1]] = True
    keep_edge = entry_edge & ~first[token]
    valued = not seq.binary
    unary = ~entry_edge
    indptr = _indptr(token[unary], seq.n_tokens)
    edge_indptr = _indptr(token[keep_edge], seq.n_tokens)
    dense_attr = new_id[seq.dense_attr] if seq.n_dense else seq.dense_attr
    out = seq._replace(
        attr_indptr=indptr, attr_indices=new_id[seq.attr_indices[unary]],
        attr_values=seq.attr_values[unary] if valued else seq.attr_values,
        dense_attr=dense_attr, edge_indptr=edge_indptr,
        edge_indices=new_id[seq.attr_indices[keep_edge]],
        edge_values=seq.attr_values[keep_edge] if valued else seq.attr_values[:0])
    if valued and len(out.edge_values) and np.all(out.edge_values == 1.0):
        out = out._replace(edge_values=out.edge_values[:0])
    if valued and len(out.attr_values) and np.all(out.attr_values == 1.0):
        out = out._replace(attr_values=out.attr_values[:0])
    return out, unary_ids, edge_ids


def _indptr(tokens: np.ndarray, n_tokens: int) -> np.ndarray:
    """The CSR pointer of entries whose tokens are ``tokens`` (ascending)."""
    out = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(tokens, minlength=n_tokens), out=out[1:])
    return out


def known_split(seq: Sequences, n_attributes: int, n_transition_attributes: int) -> Sequences:
    """``seq`` encoded with a model's vocabulary of its A attributes then its E transition
    attributes (ids A to A + E - 1), with the latter moved into its transition CSR."""
    if not n_transition_attributes:
        return seq
    is_edge = np.zeros(n_attributes + n_transition_attributes, dtype=bool)
    is_edge[n_attributes:] = True
    return split_transitions(seq, is_edge)[0]


def unary_entries(entries: np.ndarray, is_edge: np.ndarray) -> np.ndarray:
    """(attribute, token) rows whose attribute is not a transition attribute, the
    attribute ids renumbered as :func:`split_transitions` does."""
    is_edge = np.asarray(is_edge, dtype=bool)
    new_id = np.cumsum(~is_edge) - 1
    keep = ~is_edge[entries[:, 0]]
    out = entries[keep].copy()
    out[:, 0] = new_id[out[:, 0]]
    return out
