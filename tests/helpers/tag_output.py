"""Reading what ``crfsdca tag`` prints."""

from __future__ import annotations


def blocks(out: str):
    """The n-best output as [[(rank, probability, labels)] per sequence]: blocks apart
    by blank lines, each headed '# RANK PROBABILITY'; rank 0 begins a sequence's."""
    sequences: list[list] = []
    for block in out.strip("\n").split("\n\n"):
        head, *labels = block.split("\n")
        mark, rank, prob = head.split(" ")
        assert mark == "#"
        if int(rank) == 0:
            sequences.append([])
        sequences[-1].append((int(rank), float(prob), labels))
    return sequences
