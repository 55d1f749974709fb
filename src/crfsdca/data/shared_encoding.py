"""Encodings shared by the fits of one search: inside ``with shared_encoding():``, a fit
that encodes the very same sequences as an earlier fit in the block (the same objects, in
the same order, with the same label lists: what ``GridSearchCV`` gives every candidate's
clone on a fold) takes that encoding instead of encoding the items again.

The encoding is a function of the items alone, so a fit gives the same model to the last
bit with or without the block. The block holds the sequences it has seen (so that no
other object takes their identity) and their encodings; it forgets them at its end.
Inside it, the items must not change: a sequence is known by its identity, not by its
content. It is the process's: the fits of a search in worker processes (``n_jobs`` > 1
with joblib's default backend) each encode their own copies, as without it.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

from .items import Encoded, Vocabulary, encode

_state = threading.local()


@contextlib.contextmanager
def shared_encoding(max_entries: int = 16):
    """Share the training encodings of the fits inside the block (this thread's), up to
    ``max_entries`` distinct training sets (the least recently used forgotten first)."""
    if int(max_entries) < 1:
        raise ValueError(f"max_entries must be at least 1, got {max_entries}")
    outer = getattr(_state, "cache", None)
    _state.cache = (int(max_entries), OrderedDict())
    try:
        yield
    finally:
        _state.cache = outer


def encode_training(X: list, y: list, attributes: Vocabulary, labels: Vocabulary,
                    digests: bool = False) -> Encoded:
    """``encode(X, y, attributes, labels, grow=True, digests=digests)``, from the active
    block's encoding of the same sequences when it has one (only for a fit that starts
    from empty vocabularies and asks no digests: continued training encodes anew)."""
    cache = getattr(_state, "cache", None)
    if cache is None or digests or len(attributes) or len(labels):
        return encode(X, y, attributes, labels, grow=True, digests=digests)
    limit, entries = cache
    key = (tuple(map(id, X)), tuple(map(id, y)))
    hit = entries.get(key)
    if hit is None:
        encoded = encode(X, y, attributes, labels, grow=True)
        # the sequences are kept, so that their identities stay theirs
        hit = (list(X), list(y), encoded, dict(attributes.ids), dict(labels.ids))
        entries[key] = hit
        while len(entries) > limit:
            entries.popitem(last=False)
        return encoded
    entries.move_to_end(key)
    attributes.ids.update(hit[3])
    labels.ids.update(hit[4])
    return hit[2]


__all__ = ["encode_training", "shared_encoding"]
