"""The standard microarchitecture levels the wheel ships kernels for, and which of them a
processor runs.

A kernel compiled for the build machine's processor loads only on that processor model
(numba keys its cache on the processor's name and feature string). The wheel also ships
every kernel compiled for the levels of the build machine's architecture: LLVM's names
for the x86-64 psABI levels (x86-64-v2, -v3, -v4) and aarch64's ``generic``, each
compiled with no feature string of its own, so that a level's code uses exactly the
features its name implies. A host loads the best level whose every feature it has, never
one it lacks a feature of (that code would stop on an illegal instruction).
"""

from __future__ import annotations

LEVELS: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {}
"""Architecture (as a target triple starts) -> (level, LLVM features it requires), best
first; each level's features include those of the levels below it."""


def _declare(arch: str, *levels: tuple[str, str]) -> None:
    """``levels``: (name, features added to the level below), lowest first."""
    out, features = [], frozenset()
    for name, added in levels:
        features = features | frozenset(added.split())
        out.append((name, features))
    LEVELS[arch] = tuple(reversed(out))


# The x86-64 psABI's levels in LLVM's feature names (llvm/lib/Target/X86/X86.td:
# X86_64V2Features ...). Baseline x86-64 (cmov, cx8, fxsr, mmx, sse, sse2) is in v2 too.
_declare("x86_64",
         ("x86-64-v2", "64bit cmov cx8 fxsr mmx sse sse2 cx16 sahf popcnt sse3 ssse3 sse4.1 "
                       "sse4.2 crc32"),
         ("x86-64-v3", "avx avx2 bmi bmi2 f16c fma lzcnt movbe xsave"),
         ("x86-64-v4", "avx512f avx512bw avx512cd avx512dq avx512vl evex512"))
_declare("aarch64", ("generic", ""))

NAMED_SINCE = frozenset({"crc32", "evex512"})
"""Features that LLVM names in some of numba's versions only (crc32 since LLVM 14,
evex512 in LLVM 18-20): required where the feature string names them at all."""


def levels(triple: str) -> tuple[str, ...]:
    """The levels of the architecture of ``triple`` (``x86_64-unknown-linux-gnu``), best
    first; none for an architecture without levels."""
    return tuple(name for name, _ in LEVELS.get(triple.split("-")[0], ()))


def runnable(triple: str, features: str) -> tuple[str, ...]:
    """The levels whose code runs on a processor with LLVM feature string ``features``
    (``+avx,-avx512f,...``, as numba keys its cache), best first.

    A level needs every feature it requires marked ``+``; an x86 level is never runnable
    on an empty string (nothing known of the processor)."""
    marks = dict((f[1:], f[0]) for f in features.split(",") if f[:1] in "+-" and f[1:])
    out = []
    for name, required in LEVELS.get(triple.split("-")[0], ()):
        needed = {f for f in required if f not in NAMED_SINCE or f in marks}
        if all(marks.get(f) == "+" for f in needed):
            out.append(name)
    return tuple(out)


def named(names: list[str], triple: str) -> list[str]:
    """The levels ``names`` names for the architecture of ``triple`` (``all``: every one
    of them), best first; ValueError names those it does not know."""
    here = levels(triple)
    unknown = sorted(set(names) - set(here) - {"all"})
    if unknown:
        raise ValueError(f"unknown level(s) {unknown}; this architecture's: "
                         f"{', '.join(here) or 'none'}")
    return [name for name in here if name in names or "all" in names]
