"""Tiny corpora of items, shared by training/test_warm_start.py and
training/test_estimator.py."""

from __future__ import annotations

import numpy as np


def small_corpus(n=12, seed=0):
    """(X, y): n sequences of 2-5 tokens over five words, a string and a real attribute
    each; the label says whether the word is a vowel (V) or not (C)."""
    rng = np.random.default_rng(seed)
    words = ["a", "b", "c", "d", "e"]
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(2, 6))
        toks = rng.choice(words, size=T)
        X.append([{"w": str(t), "len": float(rng.random())} for t in toks])
        y.append(["V" if t in "ae" else "C" for t in toks])
    return X, y
