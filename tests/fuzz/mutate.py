"""Mutations of an input: byte-level edits, and edits of the little-endian uint32 and
float64 fields that binary model files are made of (sizes, counts, offsets, ids).

Each mutation stacks one to four edits drawn from :data:`EDITS`; all randomness comes from
the ``random.Random`` given, so a seed replays the same inputs.
"""

from __future__ import annotations

import random
import struct

INTERESTING_U32 = (0, 1, 2, 3, 4, 7, 8, 12, 16, 24, 48, 255, 256, 2071, 2072, 4096, 65535,
                   65536, 2**24, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1)
"""Values that trip sizes and offsets: zero, small counts, CRFsuite's header and CQDB
sizes, powers of two, the ends of int32 and uint32."""

INTERESTING_F64 = (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e308, -1e308,
                   5e-324, 1.0)

TEXT_TOKENS = (b"\t", b"\n", b"\r\n", b"\n\n", b":", b"\\:", b"\\\\", b"\\", b"@weight:",
               b"@weight:2", b"\x00", b"nan", b"inf", b"-inf", b"1e309", b"-0", b"0x1p3",
               b"1_0", b"\xc3\x28", b"\xef\xbb\xbf", b"\xee\x80\x80", b"\xee\x80\x82", b" ",
               b"- ", b"[", b"]", b"{", b"}", b", ", b": ", b"&a ", b"*a", b"!!python/",
               b"null", b"true", b"-1", b"99999999999999999999", b"'", b'"', b"#", b"pre0",
               b"suf12", b"w", b"pos", b"lower", b"shape", b"templates", b"reader", b"\x85",
               b"\xe2\x80\xa8", b"\x1c")
"""Fragments of the text formats: CRFsuite's separators and escapes, its declaration, a
NUL, numbers float() reads oddly, bad and odd UTF-8 (a BOM, the reader's private-use
stand-ins, line separators), YAML's syntax, template fields."""


def _u32(data: bytearray, at: int) -> int:
    return struct.unpack_from("<I", data, at)[0]


def _position(rng: random.Random, data: bytearray, width: int = 1, aligned: bool = False) -> int:
    top = len(data) - width
    if top < 0:
        return -1
    at = rng.randint(0, top)
    return at - at % 4 if aligned else at


def flip_bit(rng, data, corpus):
    at = _position(rng, data)
    if at >= 0:
        data[at] ^= 1 << rng.randrange(8)


def set_byte(rng, data, corpus):
    at = _position(rng, data)
    if at >= 0:
        data[at] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x09, 0x0A, 0x3A, 0x5C, rng.randrange(256)))


def set_u32(rng, data, corpus):
    """A 4-byte field set to an interesting value, to the file's size (give or take), to
    another field's value, or moved by a little."""
    at = _position(rng, data, 4, aligned=rng.random() < 0.75)
    if at < 0:
        return
    old = _u32(data, at)
    choice = rng.randrange(4)
    if choice == 0:
        value = rng.choice(INTERESTING_U32)
    elif choice == 1:
        value = len(data) + rng.randint(-24, 24)
    elif choice == 2:
        value = _u32(data, _position(rng, data, 4, aligned=True))
    else:
        value = old + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8, 20, 4096))
    struct.pack_into("<I", data, at, value & 0xFFFFFFFF)


def set_f64(rng, data, corpus):
    at = _position(rng, data, 8, aligned=rng.random() < 0.5)
    if at >= 0:
        struct.pack_into("<d", data, at, rng.choice(INTERESTING_F64))


def insert_token(rng, data, corpus):
    at = rng.randint(0, len(data))
    data[at:at] = rng.choice(TEXT_TOKENS) * rng.choice((1, 1, 1, 2, 64))


def replace_with_token(rng, data, corpus):
    at = _position(rng, data)
    if at >= 0:
        token = rng.choice(TEXT_TOKENS)
        data[at:at + len(token)] = token


def delete_range(rng, data, corpus):
    at = _position(rng, data)
    if at >= 0:
        del data[at:at + rng.choice((1, 2, 4, 8, rng.randint(1, 256)))]


def duplicate_range(rng, data, corpus):
    at = _position(rng, data)
    if at >= 0:
        n = rng.choice((1, 4, 8, rng.randint(1, 512)))
        data[at:at] = data[at:at + n]


def copy_range(rng, data, corpus):
    """A stretch of the input written over another (a chunk header over a chunk...)."""
    src, dst = _position(rng, data), _position(rng, data)
    if src >= 0:
        n = rng.choice((4, 8, 12, 24, rng.randint(1, 256)))
        piece = data[src:src + n]
        data[dst:dst + len(piece)] = piece


def truncate(rng, data, corpus):
    if data:
        del data[rng.randint(0, len(data) - 1):]


def splice(rng, data, corpus):
    """The input's head and another corpus entry's tail (or the other way round)."""
    other = rng.choice(corpus)
    if data and other:
        cut = rng.randint(0, min(len(data), len(other)) - 1)
        data[cut:] = other[cut:]


def random_bytes(rng, data, corpus):
    at = rng.randint(0, len(data))
    data[at:at] = rng.randbytes(rng.choice((1, 4, 16)))


EDITS = (flip_bit, set_byte, set_u32, set_u32, set_f64, insert_token, replace_with_token,
         delete_range, duplicate_range, copy_range, truncate, splice, random_bytes)
"""The edits a mutation draws from (set_u32 twice as often: binary formats are made of
those fields)."""


def mutate(rng: random.Random, data: bytes, corpus: list[bytes], max_size: int) -> bytes:
    """``data`` with one to four edits, at most ``max_size`` bytes long."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        rng.choice(EDITS)(rng, out, corpus)
    return bytes(out[:max_size])
