"""Sum and max trees over n changing weights: O(log n) update, draw and argmax.

A tree is a flat float64 array of length 2*size (size = next power of two >= n),
leaves at ``size + i``; ``tree[1]`` is the total (or the maximum). The max tree
keeps the argmax of every subtree in a parallel int64 array.
"""

import numpy as np
from numba import njit

from ..runtime.jit import NJIT


def tree_size(n: int) -> int:
    size = 1
    while size < n:
        size *= 2
    return size


def make_sum_tree(weights: np.ndarray) -> np.ndarray:
    """A sum tree holding ``weights`` (non-negative)."""
    size = tree_size(len(weights))
    tree = np.zeros(2 * size)
    tree[size:size + len(weights)] = weights
    _rebuild_sum(tree, size)
    return tree


@njit(**NJIT)
def _rebuild_sum(tree, size):
    for j in range(size - 1, 0, -1):
        tree[j] = tree[2 * j] + tree[2 * j + 1]


@njit(**NJIT)
def sum_tree_update(tree, i, value):
    """Set weight i to ``value`` and refresh its ancestors (recomputed, no drift)."""
    size = len(tree) // 2
    j = size + i
    tree[j] = value
    j //= 2
    while j >= 1:
        tree[j] = tree[2 * j] + tree[2 * j + 1]
        j //= 2


@njit(**NJIT)
def sum_tree_draw(tree, u):
    """Index drawn with probability weight / total, for u uniform in [0, 1)."""
    return subtree_draw(tree, 1, u)


@njit(**NJIT)
def subtree_draw(tree, node, u):
    """Index drawn among the leaves under ``node`` with probability weight / the node's
    total, for u uniform in [0, 1) (node 1: all of them)."""
    size = len(tree) // 2
    target = u * tree[node]
    j = node
    while j < size:
        left = tree[2 * j]
        right = tree[2 * j + 1]
        if (target < left and left > 0.0) or right <= 0.0:
            j = 2 * j
        else:
            target -= left
            j = 2 * j + 1
    return j - size


def make_max_tree(values: np.ndarray):
    """A max tree over ``values``: (tree, argmax) arrays."""
    size = tree_size(len(values))
    tree = np.full(2 * size, -np.inf)
    arg = np.zeros(2 * size, dtype=np.int64)
    tree[size:size + len(values)] = values
    arg[size:] = np.arange(size)
    _rebuild_max(tree, arg, size)
    return tree, arg


@njit(**NJIT)
def _rebuild_max(tree, arg, size):
    for j in range(size - 1, 0, -1):
        _pull_max(tree, arg, j)


@njit(inline="always", **NJIT)
def _pull_max(tree, arg, j):
    if tree[2 * j + 1] > tree[2 * j]:
        tree[j] = tree[2 * j + 1]
        arg[j] = arg[2 * j + 1]
    else:
        tree[j] = tree[2 * j]
        arg[j] = arg[2 * j]


@njit(**NJIT)
def max_tree_update(tree, arg, i, value):
    """Set value i and refresh the maxima of its ancestors; ties go to the smaller index."""
    size = len(tree) // 2
    j = size + i
    tree[j] = value
    j //= 2
    while j >= 1:
        _pull_max(tree, arg, j)
        j //= 2
