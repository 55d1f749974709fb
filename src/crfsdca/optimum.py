"""The reference optimum file ``results/optimum/{dataset}.h5``: w*, P* and its certificate.

Schema (format ``crfsdca-optimum``, version 1)::

    /w_star            float64 (d)   the minimizer found by L-BFGS
    attrs: format, format_version, package_version, dataset (name), dataset_path,
           dataset_sha256, lambda, n, d, p_star, grad_norm (||grad P(w*)||_2),
           grad_max (||grad P(w*)||_inf), gap_bound (||grad P||^2 / (2 lambda), an upper
           bound on P(w*) - P*), relative_bound (gap_bound / |P*|), iterations,
           evaluations (each one full pass, n forward-backwards), seconds,
           settings (json: solver options), rounds (json: one entry per L-BFGS-B round)

Written atomically (temporary file, then rename).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from . import __version__
from .errors import DataFormatError
from .io import atomic_path

FORMAT = "crfsdca-optimum"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Optimum:
    """A stored reference optimum."""

    w_star: np.ndarray
    p_star: float
    grad_norm: float
    grad_max: float
    gap_bound: float
    iterations: int
    evaluations: int
    seconds: float
    dataset: str
    dataset_sha256: str
    lam: float
    settings: dict
    rounds: list

    @property
    def relative_bound(self) -> float:
        return self.gap_bound / max(abs(self.p_star), 1e-300)


def write_optimum(path: str | os.PathLike, result, dataset: str, dataset_sha256: str,
                  lam: float, settings: dict, dataset_path: str = "") -> None:
    """Write an :class:`~crfsdca.solvers.lbfgs.OptimumResult` to ``path`` atomically."""
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("w_star", data=np.asarray(result.w, dtype=np.float64))
        a = f.attrs
        a["format"] = FORMAT
        a["format_version"] = FORMAT_VERSION
        a["package_version"] = __version__
        a["dataset"] = dataset
        a["dataset_path"] = str(dataset_path)
        a["dataset_sha256"] = dataset_sha256
        a["lambda"] = float(lam)
        a["d"] = int(len(result.w))
        a["p_star"] = float(result.p_star)
        a["grad_norm"] = float(result.grad_norm)
        a["grad_max"] = float(result.grad_max)
        a["gap_bound"] = float(result.gap_bound)
        a["relative_bound"] = float(result.gap_bound / max(abs(result.p_star), 1e-300))
        a["iterations"] = int(result.iterations)
        a["evaluations"] = int(result.evaluations)
        a["seconds"] = float(result.seconds)
        a["settings"] = json.dumps(settings, sort_keys=True)
        a["rounds"] = json.dumps(result.rounds)


def read_optimum(path: str | os.PathLike) -> Optimum:
    """Read a reference optimum file; a file of another kind is a :class:`DataFormatError`."""
    path = Path(path)
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != FORMAT or "w_star" not in f:
            raise DataFormatError(path, f"not a {FORMAT} file (no 'format' attribute "
                                  f"{FORMAT!r} or no 'w_star' dataset)")
        if int(f.attrs["format_version"]) > FORMAT_VERSION:
            raise DataFormatError(path, f"format version {f.attrs['format_version']} is newer "
                                  f"than this package reads ({FORMAT_VERSION})")
        a = f.attrs
        return Optimum(w_star=f["w_star"][()], p_star=float(a["p_star"]),
                       grad_norm=float(a["grad_norm"]), grad_max=float(a["grad_max"]),
                       gap_bound=float(a["gap_bound"]), iterations=int(a["iterations"]),
                       evaluations=int(a["evaluations"]), seconds=float(a["seconds"]),
                       dataset=str(a["dataset"]), dataset_sha256=str(a["dataset_sha256"]),
                       lam=float(a["lambda"]), settings=json.loads(a["settings"]),
                       rounds=json.loads(a["rounds"]))
