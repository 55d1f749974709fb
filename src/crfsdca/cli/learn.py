"""The ``learn`` command: CRFsuite's ``crfsuite learn`` on CRFsuite-format files, by SDCA.

``-p NAME=VALUE`` takes CRFsuite's parameter names where they exist (:data:`PARAMETERS`)
and every solver option by its run key (``sampler``, ``non_uniformity``,
``lbfgs_memory``...). Several files are groups 1..N; ``-e M`` holds group M out (scored
at every epoch), ``-g N`` splits the instances into N random groups instead, ``-x`` runs
N-fold cross-validation over the groups (no model is written). A sequence's ``@weight:w``
line weighs its loss w times (``sample_weight``), as CRFsuite's trainers do; the held-out
scores are not weighted.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys

from ..errors import ConfigError, CrfsdcaError, Terminated
from ..solvers.options import _parse_bool
from ..solvers.registry import ALGORITHM_ALIASES, algorithms, canonical_algorithm, spec
from ..training.status import SIGNALLED, exit_status
from .arguments import COUNT, POSITIVE

PARAMETERS = {
    "c1": ("c1", float), "c2": ("c2", float), "max_iterations": ("max_iterations", int),
    "epsilon": ("epsilon", float), "feature.minfreq": ("min_freq", float),
    "feature.possible_states": ("all_possible_states", bool),
    "feature.possible_transitions": ("all_possible_transitions", bool),
    "feature.bias": ("bias", bool), "max_seconds": ("max_seconds", float),
    "seed": ("random_state", int), "threads": ("threads", int),
    "max_memory": ("max_memory", str), "checkpoint_every": ("checkpoint_every", float),
}
"""``-p`` names (CRFsuite's where it has them) -> (estimator parameter, type)."""

CRFSUITE_NAMES = {"calibration.eta": "calibration_eta", "calibration.rate": "calibration_rate",
                  "calibration.samples": "calibration_samples",
                  "calibration.candidates": "calibration_candidates",
                  "calibration.max_trials": "calibration_max_trials", "type": "pa_type"}
"""CRFsuite's ``-p`` names of solver options that sklearn-crfsuite spells otherwise (the
option tables' ``crfsuite`` names are sklearn-crfsuite's)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..model_file import MODEL_FORMATS

    p.add_argument("files", nargs="*", metavar="FILE", help="CRFsuite-format data ('-': "
                   "standard input), or column files with -T; file k is group k")
    p.add_argument("--corpus", metavar="DIR", help="encode the FILEs into a corpus in DIR "
                   "(crfsdca.Corpus, kept for later fits) and train on it; without FILEs, "
                   "train on the corpus made there before, encoding nothing")
    p.add_argument("-T", "--template", metavar="TEMPLATE", help="read FILEs as column files "
                   "(CRF++'s, CoNLL's: whitespace-separated columns, the label last) and make "
                   "the attributes with this CRF++ or Wapiti template file; the model then "
                   "has every attribute-label pair and every transition, as CRF++'s (-p "
                   "feature.possible_states=0 to turn it off)")
    p.add_argument("-c", "--cost", type=POSITIVE, metavar="C", help="CRF++'s -c: the "
                   "L2 regularization as CRF++ weighs it, c2 = 1 / (2 C)")
    p.add_argument("-f", "--freq", type=COUNT, metavar="N", help="with -T, CRF++'s -f: "
                   "leave out the attributes generated fewer than N times in the FILEs")
    p.add_argument("-m", "--model", help="write the model to this file (none: not stored)")
    p.add_argument("-a", "--algorithm", choices=(*algorithms(), *ALGORITHM_ALIASES),
                   help="solver (default sdca; "
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
    p.add_argument("-t", "--type", default="1d", choices=("1d",), help="the graphical model: "
                   "1d, a first-order chain (CRFsuite's only one)")
    p.add_argument("-l", "--log-to-file", action="store_true", help="write the training log "
                   "to a file instead of standard output, named from -L, the algorithm and "
                   "the -p parameters (as CRFsuite names it)")
    p.add_argument("-L", "--logbase", default="log.crfsuite", metavar="BASE",
                   help="base name of the -l log file (default log.crfsuite)")
    p.add_argument("-H", "--help-parameters", action="store_true", help="list the parameters "
                   "of the algorithm (-a) with their defaults, and exit")
    p.add_argument("--format", choices=MODEL_FORMATS, help="model file format: hdf5 "
                   "(crfsdca's: bias weights, options, training summary) or crfsuite "
                   "(CRFsuite's binary model, for its tagger and bindings); default: crfsuite "
                   "for a -m name ending in .crfsuite, else hdf5")


def parse_params(items: list[str]) -> dict:
    """Estimator parameters from ``-p NAME=VALUE`` arguments."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..estimator import SOLVER_PARAMETERS

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"-p {item!r}: expected NAME=VALUE")
        name = CRFSUITE_NAMES.get(name, name)
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


def template_params(args, params: dict) -> dict:
    """``params`` with what -c, and -T, set: c2 = 1 / (2 C) (CRF++'s ||w||^2 / (2 C)
    against crfsdca's c2 ||w||^2, both beside the summed losses); with -T, CRF++'s model:
    every attribute-label pair and every transition, and the template's B lines that
    read the input as transition attributes, unless -p sets them."""
    if args.cost is not None:
        if "c2" in params:
            raise ConfigError("-c C and -p c2 set the same thing (c2 = 1 / (2 C)): give one")
        params["c2"] = 1.0 / (2.0 * args.cost)
    if args.freq is not None and not args.template:
        raise ConfigError("-f needs -T (CRF++'s cut-off on template attributes); for "
                          "CRFsuite files, -p feature.minfreq=N")
    if args.template:
        from ..data.transitions import TRANSITION_PREFIX  # numpy: when the command runs

        params.setdefault("all_possible_states", True)
        params.setdefault("all_possible_transitions", True)
        params.setdefault("transition_prefix", TRANSITION_PREFIX)
    return params


def read_column_files(args):
    """The instances of the column files of -T: the template's attributes, cut by -f."""
    # loaded when the command runs, not for its --help
    from ..data.column_templates import (
        column_items,
        frequent_attributes,
        keep_attributes,
        read_columns,
        read_template,
    )
    from ..data.crfsuite_format import Instances

    template = read_template(args.template)
    data = Instances()
    for k, path in enumerate(args.files):
        columns = read_columns(path)
        X = column_items(template, columns, "<stdin>" if path == "-" else path)
        data.extend(Instances(X, columns.y, [k] * len(X), [1.0] * len(X)))
    if args.freq is not None and args.freq > 1:
        data.X = keep_attributes(data.X, frequent_attributes(data.X, args.freq))
    return data


def _groups(n: int, args) -> list[int] | None:
    if args.split is None:
        return None
    if args.split < 2:
        raise ConfigError(f"-g needs at least 2 groups, got {args.split}")
    if args.split > n:
        raise ConfigError(f"-g {args.split}: {n} instance(s), so at most {n} groups (a group "
                          "without instances would hold nothing out)")
    order = list(range(n))
    random.Random(0).shuffle(order)
    groups = [0] * n
    for rank, i in enumerate(order):
        groups[i] = rank % args.split
    return groups


def parameter_help(algorithm: str) -> str:
    """``-H``: the parameters ``-p`` takes for ``algorithm``, with defaults and help (the
    option table's; CRFsuite's name and default where the option is CRFsuite's)."""
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..estimator import CRF

    defaults = CRF().get_params()
    lines = [f"PARAMETERS for {algorithm} (1d):", ""]
    for name, (key, kind) in PARAMETERS.items():
        lines.append(f"{name:<30} {kind.__name__.upper():<6} {defaults[key]}")
    for o in spec(algorithm).options:
        name = o.crfsuite or spec(algorithm).options.key(o.name)
        if name in PARAMETERS:  # CRFsuite's epsilon: listed above, the solver's test
            continue
        default = o.crfsuite_default if o.crfsuite_default is not None else o.default
        names = {v: k for k, v in (o.crfsuite_values or {}).items()}  # CRFsuite's names
        kind = "STRING" if o.kind is str else o.kind.__name__.upper()
        lines.append(f"{name:<30} {kind:<6} {names.get(default, default)}")
        lines.append(f"    {o.help}" + (f"; in {o.bounds}" if o.bounds else "")
                     + (f"; one of {', '.join([*names.values(), *o.choices])}"
                        if o.choices else ""))
    return "\n".join(lines) + "\n"


def _log_name(args) -> str:
    """CRFsuite's -l file name: BASE_ALGORITHM_NAME=VALUE_..."""
    return "_".join([args.logbase, args.algorithm or "sdca", *args.params])


def run(args: argparse.Namespace) -> int:
    if args.help_parameters:
        sys.stdout.write(parameter_help(canonical_algorithm(args.algorithm or "sdca")))
        return 0
    if not args.files and not args.corpus:
        raise ConfigError("no data file: give one or more FILEs ('-' for standard input)")
    if args.log_to_file:
        with open(_log_name(args), "w", encoding="utf-8") as log, \
                contextlib.redirect_stdout(log):
            return _learn(args)
    return _learn(args)


def _learn(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    from ..data.crfsuite_format import read_files
    from ..estimator import CRF

    out = sys.stdout
    params = template_params(args, parse_params(args.params))
    if args.files.count("-") > 1:
        raise ConfigError("standard input ('-') can be read once")
    est = CRF(verbose=not args.quiet, **params)
    if args.algorithm:
        est.set_params(algorithm=args.algorithm)
    if args.resume:
        est.continue_from(args.resume, keep=params, algorithm=args.algorithm)
    if args.corpus:
        return _learn_corpus(est, args, out)
    streamed = not (args.template or args.cross_validate or args.holdout is not None)
    if streamed:  # every sequence trains: the files are read as the fit encodes them
        _set_outputs(est, args)
        weights: list[float] = []
        with _one_line_errors(), _keeping(est):
            est.fit(stream_files(args.files, weights, out), sample_weight=weights)
        return _finish(est, args, out)
    data = read_column_files(args) if args.template else read_files(args.files)
    print(f"Read {len(data.X)} instances, {sum(map(len, data.X))} items from "
          f"{len(args.files)} file(s)", file=out)
    groups = _groups(len(data.X), args) or data.groups
    n_groups = args.split or len(args.files)
    if args.cross_validate:
        if n_groups < 2:
            raise ConfigError("-x needs at least 2 groups (several files, or -g N)")
        for g in range(n_groups):
            print(f"===== Cross validation ({g + 1}/{n_groups}) =====", file=out)
            _fit(est, data, groups, g)  # Ctrl-C, SIGTERM: raised again, no more folds
        return 0
    holdout = None
    if args.holdout is not None:
        if not 1 <= args.holdout <= n_groups:
            raise ConfigError(f"-e {args.holdout}: there are {n_groups} group(s)")
        holdout = args.holdout - 1
    _set_outputs(est, args)
    with _keeping(est):
        _fit(est, data, groups, holdout)
    return _finish(est, args, out)


def _learn_corpus(est, args, out) -> int:
    """``--corpus DIR``: the FILEs encoded into a corpus there (read as a stream), or the
    corpus made there before, and the fit on it."""
    from ..corpus import Corpus  # loaded when the command runs (numpy, h5py)

    clash = [flag for flag, given in (("-T", args.template), ("-x", args.cross_validate),
                                      ("-e", args.holdout is not None)) if given]
    if clash:
        raise ConfigError(f"--corpus does not combine with {', '.join(clash)} yet")
    if args.files:
        weights: list[float] = []
        with _one_line_errors():
            corpus = Corpus.create(args.corpus, _unweighted(
                stream_files(args.files, weights, out), weights))
    else:
        try:
            corpus = Corpus(args.corpus)
        except FileNotFoundError as e:
            raise ConfigError(str(e)) from None
        print(f"Read {len(corpus)} instances, {corpus.sequences.n_tokens} items from the "
              f"corpus in {args.corpus}", file=out)
    _set_outputs(est, args)
    with _one_line_errors(), _keeping(est):
        est.fit(corpus)
    return _finish(est, args, out)


def _unweighted(pairs, weights: list[float]):
    """The (xseq, yseq) pairs of :func:`stream_files`, refused at the first sequence whose
    weight (``@weight``, in ``weights`` as the blocks are read) is not 1: a corpus keeps
    no weights, and nothing is written before the refusal."""
    checked = 0
    for pair in pairs:
        if any(w != 1.0 for w in weights[checked:]):
            raise ConfigError("--corpus: the files weigh their sequences (@weight), which a "
                              "corpus does not keep yet; train on the files themselves")
        checked = len(weights)
        yield pair


def _set_outputs(est, args) -> None:
    if args.model:
        est.set_params(model_filename=args.model, save_dual=args.save_dual,
                       model_format=args.format)
    elif args.save_dual:
        raise ConfigError("--save-dual needs -m MODEL")


def _finish(est, args, out) -> int:
    status = est.model_.training["status"]
    if args.model:
        print(f"{status}: model -> {args.model}", file=out)
    return exit_status(status)


def stream_files(paths: list[str], weights: list[float], out):
    """(xseq, yseq) of every sequence of the files, read a block at a time as the fit
    encodes them; each sequence's weight (``@weight``) is appended to ``weights``, which
    the fit reads once the stream has ended, and CRFsuite's 'Read N instances' line is
    printed there, before training."""
    # loaded when the command runs, not for its --help (numpy)
    from ..data.crfsuite_format import read_blocks

    n = items = 0
    for k, path in enumerate(paths):
        for block in read_blocks(path, k):
            weights.extend(block.weights)
            for xseq, yseq in zip(block.X, block.y, strict=True):
                n, items = n + 1, items + len(xseq)
                yield xseq, yseq
    print(f"Read {n} instances, {items} items from {len(paths)} file(s)", file=out)


def _fit(est, data, groups, holdout) -> None:
    train = [i for i, g in enumerate(groups) if g != holdout]
    dev = [i for i, g in enumerate(groups) if g == holdout]
    if not train:
        raise ConfigError("no training instances left")
    weights = [data.weights[i] for i in train] if data.weighted else None
    with _one_line_errors():
        est.fit([data.X[i] for i in train], [data.y[i] for i in train],
                *(([data.X[i] for i in dev], [data.y[i] for i in dev]) if dev else ()),
                sample_weight=weights)


@contextlib.contextmanager
def _keeping(est):
    """The block's fit stopped by Ctrl-C or SIGTERM, which it raises again once it has
    kept (and written) its model, ends here: the command then says so and exits 130 or
    143 (:func:`_finish`). A signal before the fit had a model of its own goes on up."""
    before = est._model
    try:
        yield
    except (KeyboardInterrupt, Terminated):
        model = est._model
        if model is before or model is None or model.training.get("status") not in SIGNALLED:
            raise


@contextlib.contextmanager
def _one_line_errors():
    """The estimator's checks of parameters and items (ValueError) as ConfigError: the
    command's one line."""
    try:
        yield
    except ValueError as e:
        if isinstance(e, CrfsdcaError):
            raise
        raise ConfigError(str(e)) from None
