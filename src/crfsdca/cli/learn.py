"""The ``learn`` command: CRFsuite's ``crfsuite learn`` on CRFsuite-format files, by SDCA.

``-p NAME=VALUE`` takes CRFsuite's parameter names where they exist (:data:`PARAMETERS`)
and every solver option by its run key (``sampler``, ``non_uniformity``,
``lbfgs_memory``...). Several files are groups 1..N; ``-e M`` holds group M out (scored
at every epoch), ``-g N`` splits the instances into N random groups instead, ``-x`` runs
N-fold cross-validation over the groups (no model is written).
"""

from __future__ import annotations

import argparse
import random
import sys

from ..errors import ConfigError

HELP = "train a CRF on CRFsuite-format files (CRFsuite's `crfsuite learn`), by SDCA"

PARAMETERS = {
    "c1": ("c1", float), "c2": ("c2", float), "max_iterations": ("max_iterations", int),
    "epsilon": ("epsilon", float), "feature.minfreq": ("min_freq", float),
    "feature.possible_states": ("all_possible_states", bool),
    "feature.possible_transitions": ("all_possible_transitions", bool),
    "feature.bias": ("bias", bool), "max_seconds": ("max_seconds", float),
    "seed": ("random_state", int), "threads": ("threads", int),
}
"""``-p`` names (CRFsuite's where it has them) -> (estimator parameter, type)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..solvers.registry import algorithms

    p.add_argument("files", nargs="+", metavar="FILE", help="CRFsuite-format data ('-': "
                   "standard input); file k is group k")
    p.add_argument("-m", "--model", help="write the model to this file (none: not stored)")
    p.add_argument("-a", "--algorithm", choices=algorithms(), help="solver (default sdca; "
                   "with --continue, the model's)")
    p.add_argument("-p", "--set", dest="params", action="append", default=[],
                   metavar="NAME=VALUE", help="a parameter: " + ", ".join(PARAMETERS)
                   + ", or a solver option (sampler, non_uniformity, store_dtype, ...)")
    p.add_argument("-e", "--holdout", type=int, metavar="M", help="hold group M out and "
                   "score it at every epoch")
    p.add_argument("-g", "--split", type=int, metavar="N", help="split the instances into N "
                   "random groups")
    p.add_argument("-x", "--cross-validate", action="store_true",
                   help="N-fold cross-validation over the groups")
    p.add_argument("--continue", dest="resume", metavar="MODEL", help="continue training "
                   "from MODEL (and its dual state MODEL.dual, written by --save-dual)")
    p.add_argument("--save-dual", action="store_true", help="also write the dual state "
                   "beside the model (MODEL.dual), for --continue")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def parse_params(items: list[str]) -> dict:
    """Estimator parameters from ``-p NAME=VALUE`` arguments."""
    from ..estimator import SOLVER_PARAMETERS
    from ..solvers.options import _parse_bool

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"-p {item!r}: expected NAME=VALUE")
        if name in PARAMETERS:
            key, kind = PARAMETERS[name]
            try:
                out[key] = _parse_bool(value) if kind is bool else kind(value)
            except ValueError:
                raise ConfigError(f"-p {name}: expected {kind.__name__}, got {value!r}") \
                    from None
        elif name in SOLVER_PARAMETERS:
            out[name] = value  # checked against the solver's option table by fit
        else:
            raise ConfigError(f"parameter not found: {name}; parameters are "
                              f"{', '.join(PARAMETERS)} and the solver options "
                              f"{', '.join(SOLVER_PARAMETERS)}")
    return out


def _groups(n: int, args) -> list[int] | None:
    if args.split is None:
        return None
    if args.split < 2:
        raise ConfigError(f"-g needs at least 2 groups, got {args.split}")
    order = list(range(n))
    random.Random(0).shuffle(order)
    groups = [0] * n
    for rank, i in enumerate(order):
        groups[i] = rank % args.split
    return groups


def run(args: argparse.Namespace) -> int:
    from ..data.crfsuite_format import read_files
    from ..estimator import CRF

    out = sys.stdout
    params = parse_params(args.params)
    if args.files.count("-") > 1:
        raise ConfigError("standard input ('-') can be read once")
    data = read_files(args.files)
    print(f"Read {len(data.X)} instances, {sum(map(len, data.X))} items from "
          f"{len(args.files)} file(s)", file=out)
    groups = _groups(len(data.X), args) or data.groups
    n_groups = args.split or len(args.files)
    est = CRF(verbose=not args.quiet, **params)
    if args.algorithm:
        est.set_params(algorithm=args.algorithm)
    if args.resume:
        est.continue_from(args.resume, keep=params, algorithm=args.algorithm)
    if args.cross_validate:
        if n_groups < 2:
            raise ConfigError("-x needs at least 2 groups (several files, or -g N)")
        for g in range(n_groups):
            print(f"===== Cross validation ({g + 1}/{n_groups}) =====", file=out)
            _fit(est, data, groups, g)
        return 0
    holdout = None
    if args.holdout is not None:
        if not 1 <= args.holdout <= n_groups:
            raise ConfigError(f"-e {args.holdout}: there are {n_groups} group(s)")
        holdout = args.holdout - 1
    if args.model:
        est.set_params(model_filename=args.model, save_dual=args.save_dual)
    elif args.save_dual:
        raise ConfigError("--save-dual needs -m MODEL")
    _fit(est, data, groups, holdout)
    status = est.model_.training["status"]
    if args.model:
        print(f"{status}: model -> {args.model}", file=out)
    return 130 if status == "interrupted" else 0


def _fit(est, data, groups, holdout) -> None:
    train = [i for i, g in enumerate(groups) if g != holdout]
    dev = [i for i, g in enumerate(groups) if g == holdout]
    if not train:
        raise ConfigError("no training instances left")
    est.fit([data.X[i] for i in train], [data.y[i] for i in train],
            *(([data.X[i] for i in dev], [data.y[i] for i in dev]) if dev else ()))
