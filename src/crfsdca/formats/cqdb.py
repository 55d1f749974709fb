"""CRFsuite's constant quark database (CQDB): a read-only two-way map string <-> id.

A CRFsuite model keeps its labels and its attributes in one CQDB chunk each. The layout,
as CRFsuite 0.12's ``lib/cqdb/src/cqdb.c`` writes it (integers are little-endian uint32;
offsets count from the start of the chunk)::

    header (24 bytes)   "CQDB", chunk size, flag (0), byte-order mark 0x62445371,
                        bwd_size (number of ids), bwd_offset (of the backward array; 0: none)
    table refs          256 x (offset of the table's buckets, 0 if empty; number of buckets)
    records (at 2072)   per key, in the order put: id, key size, key bytes with a final NUL
    hash tables         for each non-empty table t in order: 2 m buckets (hash, record
                        offset) for the m keys with hash % 256 == t; a key sits in bucket
                        (hash >> 8) % 2m or the next free one (linear probing, in put
                        order); a free bucket has offset 0
    backward array      bwd_size x record offset, by id (id -> string)

The hash is Bob Jenkins' lookup3 ``hashlittle`` of the key with its NUL, initial value 0.
Nothing is aligned: a chunk ends where its last table or backward entry does.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataFormatError

CHUNK_ID = b"CQDB"
BYTE_ORDER_MARK = 0x62445371
NUM_TABLES = 256
HEADER_SIZE = 24
DATA_OFFSET = HEADER_SIZE + 8 * NUM_TABLES  # 2072: where the first record starts
_MASK = 0xFFFFFFFF
_TAIL = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF], dtype=np.uint32)  # bytes kept


# ---------------------------------------------------------------------------------------
# lookup3 hashlittle


def _rotl(x, k: int):
    """32-bit left rotation (Python int or numpy uint32 array)."""
    if isinstance(x, int):
        return ((x << k) | (x >> (32 - k))) & _MASK
    return (x << np.uint32(k)) | (x >> np.uint32(32 - k))


def _mix(a, b, c, wrap):
    """lookup3's ``mix``: scramble the state between 12-byte blocks."""
    a = wrap(a - c) ^ _rotl(c, 4)
    c = wrap(c + b)
    b = wrap(b - a) ^ _rotl(a, 6)
    a = wrap(a + c)
    c = wrap(c - b) ^ _rotl(b, 8)
    b = wrap(b + a)
    a = wrap(a - c) ^ _rotl(c, 16)
    c = wrap(c + b)
    b = wrap(b - a) ^ _rotl(a, 19)
    a = wrap(a + c)
    c = wrap(c - b) ^ _rotl(b, 4)
    b = wrap(b + a)
    return a, b, c


def _final(a, b, c, wrap):
    """lookup3's ``final``: the last mixing, whose result is c."""
    c = wrap((c ^ b) - _rotl(b, 14))
    a = wrap((a ^ c) - _rotl(c, 11))
    b = wrap((b ^ a) - _rotl(a, 25))
    c = wrap((c ^ b) - _rotl(b, 16))
    a = wrap((a ^ c) - _rotl(c, 4))
    b = wrap((b ^ a) - _rotl(a, 14))
    c = wrap((c ^ b) - _rotl(b, 24))
    return c


def _int_wrap(x: int) -> int:
    return x & _MASK


def _array_wrap(x):
    return x  # uint32 arithmetic wraps by itself


def hashlittle(data: bytes, initval: int = 0) -> int:
    """lookup3's ``hashlittle`` of ``data`` (one key, plain Python: the reference that
    :func:`hash_keys` is tested against)."""
    n = len(data)
    a = b = c = (0xDEADBEEF + n + initval) & _MASK
    if n == 0:
        return c
    padded = data + b"\0" * (-n % 12)
    words = np.frombuffer(padded, dtype="<u4").tolist()
    for i in range(0, len(words) - 3, 3):
        a, b, c = (a + words[i]) & _MASK, (b + words[i + 1]) & _MASK, (c + words[i + 2]) & _MASK
        a, b, c = _mix(a, b, c, _int_wrap)
    a, b, c = (a + words[-3]) & _MASK, (b + words[-2]) & _MASK, (c + words[-1]) & _MASK
    return _final(a, b, c, _int_wrap)


def _word(base: np.ndarray, at: np.ndarray, rest: np.ndarray, k: int) -> np.ndarray:
    """Word k of the 12-byte block at byte ``at`` of each key (read at any byte offset
    from the aligned words ``base``), the bytes past the key's end (``rest`` bytes left
    from ``at``) masked to zero as lookup3 reads them."""
    p = at + 4 * k
    q, shift = p >> 2, ((p & 3) * 8).astype(np.uint64)
    pair = base[q].astype(np.uint64) | (base[q + 1].astype(np.uint64) << np.uint64(32))
    return (pair >> shift).astype(np.uint32) & _TAIL[np.clip(rest - 4 * k, 0, 4)]


def hash_joined(joined: bytes, lengths: np.ndarray) -> np.ndarray:
    """hashlittle (initial value 0) of each key of ``joined``, the keys laid end to end
    with ``lengths`` bytes each (all >= 1): uint32 array, vectorized over the keys.

    Round i adds block i of every key that has one: keys with more blocks go on mixing,
    those ending there take lookup3's final mix.
    """
    n = len(lengths)
    out = np.empty(n, dtype=np.uint32)
    if n == 0:
        return out
    base = np.frombuffer(joined + bytes(16 - len(joined) % 4), dtype="<u4")
    blocks = (lengths + 11) // 12
    order = np.argsort(-blocks, kind="stable")  # most blocks first: active keys = a prefix
    neg_blocks = -blocks[order]
    start = (np.cumsum(lengths) - lengths)[order]
    left = lengths[order]
    a = (np.uint32(0xDEADBEEF) + left.astype(np.uint32)).astype(np.uint32)
    b, c = a.copy(), a.copy()
    for i in range(int(-neg_blocks[0])):
        active = int(np.searchsorted(neg_blocks, -(i + 1), side="right"))
        more = int(np.searchsorted(neg_blocks, -(i + 2), side="right"))
        at, rest = start[:active] + 12 * i, left[:active] - 12 * i
        a = a[:active] + _word(base, at, rest, 0)
        b = b[:active] + _word(base, at, rest, 1)
        c = c[:active] + _word(base, at, rest, 2)
        out[order[more:active]] = _final(a[more:], b[more:], c[more:], _array_wrap)
        a, b, c = _mix(a[:more], b[:more], c[:more], _array_wrap)
    return out


def hash_keys(keys: list[bytes]) -> np.ndarray:
    """hashlittle (initial value 0) of every key (none empty), vectorized: uint32 array."""
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    if len(keys) and lengths.min() == 0:
        raise ValueError("hash_keys: a CQDB key is never empty (it ends with NUL)")
    return hash_joined(b"".join(keys), lengths)


# ---------------------------------------------------------------------------------------
# Writing


def _place(hashes: np.ndarray, n_buckets: int) -> list[int]:
    """Bucket of each key of one table, in put order: its home bucket (hash >> 8) % n or
    the next free one, as cqdb_writer_close places them (a plain loop: linear probing
    depends on the keys placed before)."""
    taken = bytearray(n_buckets)
    where = []
    for h in ((hashes >> np.uint32(8)) % np.uint32(n_buckets)).tolist():
        while taken[h]:
            h = h + 1 if h + 1 < n_buckets else 0
        taken[h] = 1
        where.append(h)
    return where


def _hash_tables(hashes: np.ndarray, offsets: np.ndarray, base: int):
    """The 256 table refs (offset, size) and the buckets of all tables (uint32 pairs) for
    keys with ``hashes`` whose records lie at ``offsets``; the first table starts at
    ``base`` (chunk-relative)."""
    table = hashes & np.uint32(0xFF)
    order = np.argsort(table, kind="stable")  # put order within each table
    counts = np.bincount(table, minlength=NUM_TABLES)
    first = np.cumsum(counts) - counts
    refs = np.zeros((NUM_TABLES, 2), dtype="<u4")
    buckets = np.zeros((2 * len(hashes), 2), dtype="<u4")
    at = 0
    for t in np.flatnonzero(counts).tolist():
        members = order[first[t]:first[t] + counts[t]]
        n = 2 * int(counts[t])
        slot = at + np.asarray(_place(hashes[members], n), dtype=np.int64)
        buckets[slot, 0] = hashes[members]
        buckets[slot, 1] = offsets[members]
        refs[t] = (base + 8 * at, n)
        at += n
    return refs, buckets


def _records(joined: bytes, lengths: np.ndarray, ids: np.ndarray) -> bytes:
    """The records (id, key size, key) of the keys laid end to end in ``joined``: the
    8-byte heads and the keys interleaved by two boolean-mask copies."""
    n = len(lengths)
    starts = np.cumsum(8 + lengths) - (8 + lengths)
    heads = np.empty((n, 2), dtype="<u4")
    heads[:, 0] = ids
    heads[:, 1] = lengths
    out = np.empty(len(joined) + 8 * n, dtype=np.uint8)
    is_key = np.ones(len(out), dtype=bool)
    for j in range(8):
        is_key[starts + j] = False
    out[is_key] = np.frombuffer(joined, dtype=np.uint8)
    out[~is_key] = heads.view(np.uint8).ravel()
    return out.tobytes()


def build_cqdb(strings: list[str], ids=None) -> bytes:
    """The bytes of a CQDB chunk mapping ``strings[i]`` <-> ``ids[i]`` (default: i), with
    records in the order given, as CRFsuite's writer puts them. A string must not contain
    NUL (keys are C strings)."""
    n = len(strings)
    joined = ("\0".join(strings) + "\0").encode("utf-8") if n else b""
    ends = np.flatnonzero(np.frombuffer(joined, dtype=np.uint8) == 0) + 1
    if len(ends) != n:
        raise ValueError("build_cqdb: a string contains NUL, which a CQDB key cannot hold")
    lengths = np.diff(ends, prepend=0)  # with the NUL
    ids = np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
    if ids.shape != (n,) or (n and (ids.min() < 0 or ids.max() > _MASK)):
        raise ValueError("build_cqdb: ids must be one non-negative uint32 per string")
    offsets = DATA_OFFSET + np.cumsum(8 + lengths) - (8 + lengths)
    records = _records(joined, lengths, ids)
    tables_at = DATA_OFFSET + len(records)
    refs, buckets = _hash_tables(hash_joined(joined, lengths), offsets, tables_at)
    bwd = b""
    bwd_size = bwd_offset = 0
    if n:
        bwd_size = int(ids.max()) + 1
        back = np.zeros(bwd_size, dtype="<u4")
        back[ids] = offsets
        bwd, bwd_offset = back.tobytes(), tables_at + buckets.nbytes
    size = tables_at + buckets.nbytes + len(bwd)
    header = CHUNK_ID + np.array([size, 0, BYTE_ORDER_MARK, bwd_size, bwd_offset],
                                 dtype="<u4").tobytes()
    return b"".join((header, refs.tobytes(), records, buckets.tobytes(), bwd))


# ---------------------------------------------------------------------------------------
# Reading


def u32_at(buf: np.ndarray, positions) -> np.ndarray:
    """The little-endian uint32 at each byte position of ``buf`` (uint8; in range)."""
    positions = np.asarray(positions, dtype=np.int64)
    return buf[positions[..., None] + np.arange(4)].view("<u4")[..., 0].astype(np.int64)


def read_cqdb(buf: np.ndarray, start: int, path, what: str, count: int) -> list[str]:
    """The strings of ids 0..count-1 of the CQDB chunk at ``start`` of the file ``buf``
    (uint8), checked as far as CRFsuite relies on them; DataFormatError naming ``path``
    and ``what`` (e.g. "labels") otherwise."""

    def bad(message: str):
        return DataFormatError(path, f"{what} (CQDB chunk at offset {start}): {message}")

    if start < 0 or start + DATA_OFFSET > len(buf):
        raise bad(f"the chunk's {DATA_OFFSET}-byte header runs past the end of the file "
                  f"({len(buf)} bytes)")
    if bytes(buf[start:start + 4]) != CHUNK_ID:
        raise bad(f"no {CHUNK_ID.decode()} chunk id (found {bytes(buf[start:start + 4])!r})")
    size, _flag, mark, bwd_size, bwd_offset = u32_at(buf, start + 4 + 4 * np.arange(5))
    if mark != BYTE_ORDER_MARK:
        raise bad(f"byte-order mark {mark:#x}, expected {BYTE_ORDER_MARK:#x}")
    if size < DATA_OFFSET or start + size > len(buf):
        raise bad(f"chunk size {size} is outside [{DATA_OFFSET}, {len(buf) - start}] (the "
                  "rest of the file)")
    chunk = buf[start:start + size]
    refs = u32_at(chunk, HEADER_SIZE + 4 * np.arange(2 * NUM_TABLES)).reshape(-1, 2)
    used = refs[:, 0] != 0
    if np.any(refs[used, 0] + 8 * refs[used, 1] > size):
        t = int(np.flatnonzero(used & (refs[:, 0] + 8 * refs[:, 1] > size))[0])
        raise bad(f"hash table {t} ({refs[t, 1]} buckets at offset {refs[t, 0]}) runs past "
                  "the chunk's end")
    if refs[used, 1].sum() != 2 * count:  # CRFsuite counts the keys by the buckets
        raise bad(f"{count} strings expected, the hash tables hold {refs[used, 1].sum() // 2}")
    if count == 0:
        return []
    if bwd_offset == 0 or bwd_size < count:
        found = bwd_size if bwd_offset else 0
        raise bad(f"{count} strings expected, the backward array has {found}")
    if bwd_offset + 4 * count > size:
        raise bad(f"the backward array (offset {bwd_offset}) runs past the chunk's end")
    offsets = u32_at(chunk, bwd_offset + 4 * np.arange(count))
    if np.any(offsets < DATA_OFFSET) or np.any(offsets + 8 > size):
        i = int(np.flatnonzero((offsets < DATA_OFFSET) | (offsets + 8 > size))[0])
        raise bad(f"id {i}: record offset {offsets[i]} is outside the chunk")
    rec_ids, lengths = u32_at(chunk, offsets), u32_at(chunk, offsets + 4)
    wrong = np.flatnonzero(rec_ids != np.arange(count))
    if len(wrong):
        raise bad(f"id {wrong[0]}: its record holds id {rec_ids[wrong[0]]}")
    ends = offsets + 8 + lengths
    if np.any(lengths < 1) or np.any(ends > size):
        i = int(np.flatnonzero((lengths < 1) | (ends > size))[0])
        raise bad(f"id {i}: a key of {lengths[i]} bytes at offset {offsets[i]} runs past "
                  "the chunk's end")
    if np.any(chunk[ends - 1] != 0):
        i = int(np.flatnonzero(chunk[ends - 1] != 0)[0])
        raise bad(f"id {i}: the key is not NUL-terminated")
    return _keys(chunk, offsets + 8, ends, bad)


def _keys(chunk: np.ndarray, starts: np.ndarray, ends: np.ndarray, bad) -> list[str]:
    """The keys at ``chunk[starts[i]:ends[i] - 1]`` (each followed by its NUL), decoded
    at once: the key bytes picked in record order by one mask, decoded as UTF-8 and
    split at the NULs (which UTF-8 never uses inside a character)."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    if np.any(s[1:] < e[:-1]):
        raise bad("two records overlap")
    edges = np.zeros(len(chunk) + 1, dtype=np.int8)  # +1 where a key starts, -1 after
    edges[s] = 1
    edges[e] -= 1  # the ends are distinct, and may be another key's start
    text = chunk[np.cumsum(edges[:-1], dtype=np.int8).view(bool)].tobytes()
    try:
        parts = text.decode("utf-8").split("\0")
    except UnicodeDecodeError as err:
        raise bad(f"a key is not UTF-8 ({err.reason} at byte {err.start} of the keys)") \
            from None
    if len(parts) != len(order) + 1:
        raise bad("a key holds a NUL byte before its end")
    keys = np.empty(len(order), dtype=object)
    keys[order] = parts[:-1]
    return keys.tolist()


def cqdb_lookup(chunk: bytes, key: str) -> int:
    """The id of ``key`` in the CQDB ``chunk`` through its hash tables, -1 if absent: what
    CRFsuite's ``cqdb_to_id`` does when the tagger maps an attribute or label to its id."""
    data = key.encode("utf-8") + b"\0"
    hv = hashlittle(data)
    buf = np.frombuffer(chunk, dtype=np.uint8)
    ref = HEADER_SIZE + 8 * (hv % NUM_TABLES)
    offset, n = u32_at(buf, [ref, ref + 4]).tolist()
    if offset == 0 or n == 0:
        return -1
    k = (hv >> 8) % n
    for _ in range(n):
        h, rec = u32_at(buf, [offset + 8 * k, offset + 8 * k + 4]).tolist()
        if rec == 0:
            return -1
        if h == hv:
            size = int(u32_at(buf, [rec + 4])[0])
            if chunk[rec + 8:rec + 8 + size] == data:
                return int(u32_at(buf, [rec])[0])
        k = (k + 1) % n
    return -1
