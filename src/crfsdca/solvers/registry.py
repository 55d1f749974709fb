"""Solvers by name, as the command line and the workflow refer to them."""

from __future__ import annotations

from .base import Problem, Solver

SOLVER_NAMES = ("sdca", "lbfgs", "sag", "sag-nus", "sag-nus-star", "oeg")


def make_solver(name: str, problem: Problem, **options) -> Solver:
    """Build solver ``name`` with its options (unknown options are an error)."""
    if name == "sdca":
        from .sdca import SDCA

        return SDCA(problem, **options)
    if name == "lbfgs":
        from .lbfgs import LBFGS

        return LBFGS(problem, **options)
    if name in ("sag", "sag-nus", "sag-nus-star"):
        from .sag import SAGFamily

        return SAGFamily(problem, variant=name, **options)
    if name == "oeg":
        from .oeg import OEG

        return OEG(problem, **options)
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVER_NAMES)}")
