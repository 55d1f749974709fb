"""Table 1 of the paper: size of each dataset, ours next to the paper's.

Columns: d (number of weights, A*K + 3*K + K*K), n (training sequences), N (training
tokens), K (labels), A (attributes), a (mean active attributes per token, nnz / N) and
the float64 memory of the pairwise dual marginals, (N - n) * K^2 * 8 bytes, in GiB.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path

from crfsdca.data.hdf5 import Dataset
from crfsdca.runtime.io import atomic_write

COLUMNS = ("d", "n", "N", "K", "A", "a", "mem_gib")

# Table 1 of Le Priol, Piche, Lacoste-Julien (UAI 2018), as printed.
PAPER = {
    "ocr": {"d": 4082, "n": 6202, "N": 52827, "K": 26, "A": 128, "a": 128, "mem_gib": 0.2},
    "conll": {"d": 1.6e6, "n": 8936, "N": 2.1e5, "K": 22, "A": 74658, "a": 19, "mem_gib": 0.7},
    "ner": {"d": 2.8e6, "n": 15806, "N": 2e5, "K": 9, "A": 3.1e5, "a": 20, "mem_gib": 0.1},
    "pos": {"d": 8.6e6, "n": 38219, "N": 9.1e5, "K": 45, "A": 1.9e5, "a": 13, "mem_gib": 13},
}


def pairwise_marginals_bytes(ds: Dataset) -> int:
    """Bytes of float64 pairwise marginals of all training sequences: (N - n) K^2 * 8."""
    tr = ds.train
    return (tr.n_tokens - tr.n_sequences) * ds.n_labels**2 * 8


def dataset_row(ds: Dataset) -> dict[str, float | int]:
    """Our Table 1 numbers for one dataset."""
    tr = ds.train
    return {
        "d": ds.dim,
        "n": tr.n_sequences,
        "N": tr.n_tokens,
        "K": ds.n_labels,
        "A": ds.n_attributes,
        "a": round(tr.nnz / max(tr.n_tokens, 1), 2),
        "mem_gib": round(pairwise_marginals_bytes(ds) / 2**30, 3),
    }


def _fmt(key: str, v) -> str:
    if v is None:
        return ""
    if key == "mem_gib":
        return f"{v:.3g}"
    if key == "a":
        return f"{v:g}"
    if float(v) >= 1_000_000:
        mantissa, exp = f"{float(v):.1e}".split("e")
        return f"{mantissa}e{int(exp)}"
    return f"{int(v):,}"


def _csv_value(v):
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer() and abs(v) >= 1:
        return int(v)
    return v


def table_rows(datasets: Iterable[Dataset]) -> list[dict]:
    """Long-format rows: one 'ours' and one 'paper' row per dataset."""
    rows = []
    for ds in datasets:
        rows.append({"dataset": ds.name, "source": "ours", **dataset_row(ds)})
        paper = PAPER.get(ds.name)
        rows.append({"dataset": ds.name, "source": "paper",
                     **{k: (paper or {}).get(k) for k in COLUMNS}})
    return rows


def write_table1(rows: list[dict], csv_path: str | os.PathLike, md_path: str | os.PathLike) -> None:
    """Write Table 1 as CSV (exact numbers) and Markdown (rounded as the paper prints them)."""
    fields = ["dataset", "source", *COLUMNS]
    with atomic_write(Path(csv_path), newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_value(r.get(k)) for k in fields})
    header = ["dataset", "", "d", "n", "N", "K", "A", "a", "Mem. (GiB)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        cells = [r["dataset"].upper(), r["source"], *(_fmt(k, r.get(k)) for k in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    with atomic_write(Path(md_path)) as f:
        f.write("\n".join(lines) + "\n")
