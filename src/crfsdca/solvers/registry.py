"""The solvers by name, each with its one table of options (see :mod:`.options`).

Everything that names a solver or one of its options is derived from :data:`SOLVERS`:
the ``train`` command's ``--solver`` choices and flags, :func:`make_solver`, the
workflow's validation and naming of experiment runs (:func:`resolve_run`,
:func:`run_id`), the report's method labels (:func:`method_label`), and the estimator's
parameters. Adding an option to a solver is one line in its table here (and its use in
the solver). This module imports no numba, so that the workflow can read it.
"""

from __future__ import annotations

import importlib
import math
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import NamedTuple

from ..errors import ConfigError
from ..runtime import memory
from .options import Option, OptionTable, short_number

# -------------------------------------------------------------------------------- SDCA

SAMPLERS = {
    "uniform": "SDCA", "gap": "SDCA-GAP", "importance": "SDCA-IMP",
    "gap-importance": "SDCA-GAPxIMP", "max": "SDCA-MAX", "perm": "SDCA-PERM",
    "cyclic": "SDCA-CYCLIC",
}
"""SDCA's sampling schemes (paper Sections 5 and 6.3) and the paper's name of SDCA with each."""

THETA_FREE = ("uniform", "perm", "cyclic")
"""Samplers for which the non-uniformity theta plays no role."""

RADII_SAMPLERS = ("importance", "gap-importance")
"""Samplers that draw by the squared radii R_i of the sequences."""


def _sdca_radii(o: Mapping) -> bool:
    return o["sampler"] in RADII_SAMPLERS or (o["line_search"] == "fixed"
                                              and o["step_size"] is None)

LINE_SEARCHES = ("newton", "single-newton", "fixed", "golden")
STORE_DTYPES = ("float64", "float32")


def _line_search_label(value, options):
    if value == "fixed":
        step = options["step_size"]
        return "fixed step" + (f"={short_number(step)}" if step is not None else "")
    return {"single-newton": "single Newton"}.get(value, value)


PAPER_ONE_STEP = {"line_search": "newton", "line_search_start": "midpoint",
                  "subprecision": 0.5}
"""The paper's one-Newton-step variant (Section 6.2, Figure 8: "a sub-precision of 0.5
effectively means that Newton stops after 1 step"): its rtsafe from the midpoint at
sub-precision 0.5 (``math.md`` section 5.3)."""
PAPER_ONE_STEP_LABEL = "sub-precision 0.5 (paper's 1 step)"


def is_paper_one_step(options) -> bool:
    """Whether SDCA options are :data:`PAPER_ONE_STEP`."""
    return all(options.get(k) == v for k, v in PAPER_ONE_STEP.items())


def _start_label(value, options):
    return PAPER_ONE_STEP_LABEL if is_paper_one_step(options) else f"{value} start"


def _subprecision_label(value, options):
    return "" if is_paper_one_step(options) else short_number(value)


STORE_WINDOW_MIB = 64.0
"""The draws' window over a store in a file (``store_window``): far inside any memory a fit
has, large enough that a window's steps outlast reading it."""


def store_window_mib(options) -> float:
    """The window SDCA's draws keep to, in MiB of its store (0: none): ``store_window``,
    or its default where the store is in a file."""
    given = options.get("store_window")
    if given is not None:
        return float(given)
    return STORE_WINDOW_MIB if options.get("store_dir") is not None else 0.0


STORE_DTYPE = Option(
    "store_dtype", str, "float64", "float width of the stored dual marginals (float32 halves "
    "the memory; w stays w_hat of the rounded values)", choices=STORE_DTYPES,
    label="{value}", shared=True)

SDCA_OPTIONS = OptionTable("sdca", [
    Option("sampler", str, "gap", "which sequence to visit next", choices=tuple(SAMPLERS),
           label=SAMPLERS),
    Option("non_uniformity", float, 0.8, "theta: share of the draws that follow the "
           "sampler, the rest uniform (the estimator draws more by the gaps than the paper, "
           "its gaps refreshed every Catalyst round: docs/history.md)",
           bounds="[0, 1]", label="theta={value}",
           relevant=lambda o: o["sampler"] not in THETA_FREE, crfsuite_default=0.95),
    Option("line_search", str, "newton", "newton: safeguarded Newton to the sub-precision; "
           "single-newton: its first step only; fixed: --step-size; golden: golden section",
           choices=LINE_SEARCHES, label=_line_search_label),
    Option("line_search_start", str, "regula-falsi", "where newton and single-newton start: "
           "regula-falsi: g / (g - f'(1)), g = 2 x the block gap estimating f'(0); "
           "midpoint: 0.5, the paper's rtsafe (with subprecision 0.5, one evaluation)",
           choices=("regula-falsi", "midpoint"), label=_start_label,
           relevant=lambda o: o["line_search"] in ("newton", "single-newton")),
    Option("subprecision", float, 1e-3, "line-search tolerance on the step size",
           bounds="(0, 1]", label=_subprecision_label,
           relevant=lambda o: o["line_search"] in ("newton", "golden")),
    Option("step_size", float, None, "fixed step (line search fixed; none: the theoretical "
           "(1 + R / (lambda n))^-1)", bounds="(0, 1]", nullable=True, label=lambda v, o: "",
           relevant=lambda o: o["line_search"] == "fixed"),
    Option("refresh_every", float, 0.0, "recompute every stored gap every this many epochs "
           "(0: never)", bounds="[0, inf)", label="refresh={value}"),
    STORE_DTYPE,
    Option("dual_store", str, "exact", "exact: every edge's pairwise marginals, the paper's "
           "store and line search; compact: each sequence's pairwise marginals summed and a "
           "lower bound of its entropy, n K^2 in place of (N - n) K^2 floats, the step "
           "maximizing the dual with that bound (math.md section 5.6; the gap stays a "
           "certificate)", choices=("exact", "compact"), label="store={value}",
           crfsuite_default="compact"),
    Option("init_c", float, 10.0, "constant c of the smoothed-Dirac initialization "
           "(math.md section 5.1)",
           bounds="[0, inf)"),
    Option("catalyst", float, 0.0, "Catalyst's accelerated proximal loop (math.md section "
           "10) with kappa = this x lambda: every epoch, SDCA's problem gains kappa/2 "
           "||w - y||^2 about a point y extrapolated from the last two epochs' weights; the "
           "duality gap stays the original problem's. 0: plain SDCA, the paper's",
           bounds="[0, inf)", label="catalyst={value}", crfsuite_default=3.0),
    Option("catalyst_floor", float, 0.0, "with Catalyst (catalyst > 0), kappa is at least "
           "this / n: kappa n is twice the c2 the proximal term adds in CRFsuite's scale, "
           "and a small c2 needs a kappa set by the data's curvature, not by lambda "
           "(math.md section 10)", bounds="[0, inf)", label="floor={value}",
           relevant=lambda o: o["catalyst"] > 0, crfsuite_default=0.3),
    Option("catalyst_momentum", float, None, "with Catalyst, the share of its momentum "
           "(1 - sqrt q) / (1 + sqrt q) kept; none: all of it without L1, half with c1 > 0, "
           "where the whole overshoots (math.md section 10)", bounds="[0, 1]", nullable=True,
           label="momentum={value}", relevant=lambda o: o["catalyst"] > 0),
    Option("catalyst_tune", bool, False, "with Catalyst, every third round certifies x_k "
           "by a primal pass and moves kappa by the share of the inner problem's gap in "
           "that certificate: up 1.5x above 0.7 (one epoch no longer solves the inner "
           "problem), down 2/3x after two probes below 0.1 (it is solved past need), never "
           "below catalyst x lambda (math.md section 10). False: kappa stays where "
           "catalyst and catalyst_floor put it", label="tuned={value}",
           relevant=lambda o: o["catalyst"] > 0, crfsuite_default=True),
    Option("batch_size", int, 1, "B: the steps computed against the same weights, the "
           "threads sharing them, then applied in draw order where each still raises the "
           "dual (mini-batch SDCA, math.md section 9): the model depends on the seed and "
           "B, never on the threads. 1: sequential SDCA, the paper's (what it costs and "
           "gains: docs/benchmarks.md 'Mini-batch SDCA')",
           bounds="[1, inf)", label="B={value}"),
    Option("l1_line_search", str, "exact", "with an L1 term (the elastic net), what a step's "
           "line search maximizes: exact: the dual along the step, its L1 part split into a "
           "fixed quadratic and the entries that cross a threshold (a pass over the rows of "
           "v a step touches); bound: the dual's lower bound in which the L1 part is "
           "replaced by the quadratic its 1-smoothness gives, as without an L1 term (no "
           "pass; every step still raises the dual: math.md section 8)",
           choices=("exact", "bound"), label="l1_line_search={value}",
           crfsuite_default="bound"),
    Option("pipeline", bool, False, "with batch_size 1, compute each step (oracle, gap, "
           "direction, line search) against the weights of before the previous step's "
           "move, then rebase its move on the weights as they are, taken where it still "
           "raises the dual, so that two threads overlap one step's computing with the "
           "other's: the model depends on the seed, never on the threads (math.md section "
           "9; what it gains and costs: docs/benchmarks.md 'Pipelined SDCA'). False: "
           "sequential SDCA, the paper's", label="pipeline={value}",
           relevant=lambda o: o["batch_size"] == 1, crfsuite_default=True),
    Option("store_dir", str, None, "a directory where the stored dual marginals live in a "
           "file (memory-mapped, removed at once: nothing is left, even if the process is "
           "killed) rather than in memory; the operating system keeps in memory what it "
           "can and pages the rest, so a store larger than memory trains (none: in memory; "
           "the same model either way, with the same store_window)", nullable=True,
           trajectory=False, shared=True),
    Option("store_window", float, None, "MiB of the stored dual marginals that the draws "
           "keep to at a time: consecutive sequences (a power of two of them) drawn by the "
           "sampler among themselves, one draw per sequence, then the next ones, so that a "
           "store in a file is read in order rather than at random (none: "
           f"{STORE_WINDOW_MIB:g} with store_dir, else all; 0: all)", bounds="[0, inf)",
           nullable=True, label="window={value}MiB", shared=True),
    Option("window_spill", float, 0.1, "with a store_window, the share of the draws made "
           "over all sequences by the sampler, the rest within the window: without them the "
           "windows cost many times the epochs (math.md section 6.4)", bounds="[0, 1]",
           label="spill={value}", relevant=lambda o: store_window_mib(o) > 0),
])

# -------------------------------------------------------------------------------- SAG

SAG_OPTIONS = OptionTable("sag", [
    Option("lipschitz_init", float, 1.0, "initial Lipschitz estimate: SAG's global L, "
           "SAG-NUS's first L_i", bounds="(0, inf)"),
    Option("decrease", float, 0.9, "L_i <- this * L_i before a line search on a revisit "
           "(0.5 is the halving rule of Schmidt's logistic code)", bounds="(0, 1]"),
    Option("decrease_guarded", bool, False, "also decrease L_i when the gradient guard skips "
           "the line search"),
    Option("first_visit", float, 0.5, "first-visit L_i = this * mean of the seen L_j",
           bounds="(0, inf)"),
    Option("step_rule", str, "c13", "SAG-NUS step size: c13 = average of the 1/Lmax and "
           "1/Lmean steps, harmonic = 1/((Lmax + Lmean)/2)", choices=("c13", "harmonic")),
    Option("guard", float, 1e-8, "skip the line search when ||g_i||^2 is at most this",
           bounds="[0, inf)"),
    Option("max_doublings", int, 60, "doublings of L per line search at most (a safety cap)",
           bounds="[1, inf)"),
    STORE_DTYPE,
], prefix="sag")

# -------------------------------------------------------------------------------- OEG

OEG_OPTIONS = OptionTable("oeg", [
    Option("eta0", float, 0.5, "initial step size of every example", bounds="(0, inf)"),
    Option("c0", float, 10.0, "smoothed-Dirac initialization constant", bounds="[0, inf)"),
    Option("eta_increase", float, 1.0, "multiply eta_i by this after an accepted step "
           "(1: never)", bounds="[1, inf)"),
    Option("eta_max", float, 1.0, "cap of eta_i when it increases", bounds="(0, inf)"),
    Option("max_trials", int, 30, "trials (halvings + 1) per visit", bounds="[1, inf)"),
    Option("sampling", str, "uniform", "uniform with replacement, or a fresh permutation "
           "every epoch", choices=("uniform", "perm")),
    Option("count_init", bool, True, "count the n forward-backwards of the initialization "
           "as oracle calls", trajectory=False),
], prefix="oeg")

# -------------------------------------------------------------------------------- L-BFGS

LBFGS_LINE_SEARCHES = {"MoreThuente": "more-thuente", "Backtracking": "backtracking",
                       "StrongBacktracking": "strong-backtracking"}
"""CRFsuite's line searches and ours: each is liblbfgs's, More-Thuente's (strong Wolfe
conditions) and the backtracking searches (Armijo, then regular or strong Wolfe)."""

LBFGS_OPTIONS = OptionTable("lbfgs", [
    Option("memory", int, 20, "number of (s, y) pairs; the history takes 2*memory*d*8 bytes",
           bounds="[1, inf)", crfsuite="num_memories", crfsuite_default=6),
    Option("c1", float, 1e-4, "sufficient-decrease constant of the Wolfe conditions",
           bounds="(0, 1)"),
    Option("c2", float, 0.9, "curvature constant of the Wolfe conditions", bounds="(0, 1)"),
    Option("max_evals", int, 25, "evaluations per line search at most", bounds="[1, inf)",
           crfsuite="max_linesearch", crfsuite_default=20),
    Option("gtol", float, 0.0, "stop when ||grad P||_inf is at most this", bounds="[0, inf)"),
    Option("line_search", str, "wolfe", "wolfe: strong Wolfe conditions by bracketing and "
           "cubic zoom; gradient: a search on the gradient alone (for the last digits, where "
           "values of P are rounding noise); more-thuente, backtracking, "
           "strong-backtracking: liblbfgs's (More and Thuente's strong Wolfe search; Armijo, "
           "then the regular or strong Wolfe curvature test). With an L1 term the search is "
           "OWL-QN's orthant-projected backtracking, as in CRFsuite",
           choices=("wolfe", "gradient", "more-thuente", "backtracking",
                    "strong-backtracking"),
           crfsuite="linesearch", crfsuite_default="more-thuente",
           crfsuite_values=LBFGS_LINE_SEARCHES),
    Option("first_step", str, "inverse-l1", "the first trial step (and after a restart): "
           "inverse-l1: min(1, 1 / ||g||_1) (minFunc's); inverse-l2: 1 / ||g||_2 (liblbfgs's, "
           "CRFsuite's; always so with an L1 term)", choices=("inverse-l1", "inverse-l2"),
           crfsuite_default="inverse-l2"),
    Option("epsilon", float, 0.0, "stop when ||g|| / max(1, ||w||) is at most this, g the "
           "gradient of CRFsuite's objective (n P; with an L1 term its pseudo-gradient), as "
           "CRFsuite's epsilon; 0: never", bounds="[0, inf)", crfsuite="epsilon",
           crfsuite_default=1e-5),
    Option("period", int, 10, "iterations over which delta is tested", bounds="[1, inf)",
           crfsuite="period", crfsuite_default=10),
    Option("delta", float, 0.0, "stop when the objective fell by less than this, relatively, "
           "over the last period iterations (CRFsuite's delta); 0: never", bounds="[0, inf)",
           crfsuite="delta", crfsuite_default=1e-5),
], prefix="lbfgs")

# ------------------------------------------------------------ CRFsuite's online trainers
# l2sgd, ap, pa, arow (:mod:`crfsdca.solvers.l2sgd`, :mod:`crfsdca.solvers.online`): each
# option is CRFsuite's parameter of the same meaning, with CRFsuite's default (named as
# sklearn-crfsuite names it where CRFsuite's name is not a Python identifier:
# calibration.eta -> calibration_eta, PA's type -> pa_type). max_iterations is the
# epoch budget (SolverSpec.default_epochs: CRFsuite's default).

SHUFFLE = Option(
    "shuffle", bool, True, "shuffle the instances before every epoch as CRFsuite does "
    "(from the seed); false: visit them in the data's order", shared=True,
    label=lambda v, o: "" if v else "unshuffled")

L2SGD_OPTIONS = OptionTable("l2sgd", [
    Option("period", int, 10, "epochs over which delta is tested", bounds="[1, inf)",
           crfsuite="period", crfsuite_default=10),
    Option("delta", float, 1e-6, "stop when the epoch's loss improved by less than this, "
           "relatively, over the last period epochs (CRFsuite's delta)", bounds="[0, inf)",
           crfsuite="delta", crfsuite_default=1e-6),
    Option("calibration_eta", float, 0.1, "the first learning rate eta the calibration "
           "tries", bounds="(0, inf)", crfsuite="calibration_eta", crfsuite_default=0.1),
    Option("calibration_rate", float, 2.0, "the factor by which the calibration raises, "
           "then lowers, eta", bounds="(0, inf)", crfsuite="calibration_rate",
           crfsuite_default=2.0),
    Option("calibration_samples", int, 1000, "instances the calibration trains on (the "
           "first of the shuffled order)", bounds="[1, inf)", crfsuite="calibration_samples",
           crfsuite_default=1000),
    Option("calibration_candidates", int, 10, "learning rates that must improve on the "
           "initial loss, in each direction, before the calibration stops",
           bounds="[1, inf)", crfsuite="calibration_candidates", crfsuite_default=10),
    Option("calibration_max_trials", int, 20, "the calibration stops after this many "
           "trials less one", bounds="[1, inf)", crfsuite="calibration_max_trials",
           crfsuite_default=20),
    SHUFFLE,
], prefix="l2sgd")


def _online_epsilon(what: str, test: str = "below") -> Option:
    return Option("epsilon", float, 0.0, f"stop when the epoch's mean {what} is {test} this "
                  "(CRFsuite's epsilon)", bounds="[0, inf)", crfsuite="epsilon",
                  crfsuite_default=0.0)


AP_OPTIONS = OptionTable("ap", [
    _online_epsilon("error rate (sum of d_i / T_i over the wrong instances, over n)"),
    SHUFFLE,
], prefix="ap")

PA_OPTIONS = OptionTable("pa", [
    Option("type", int, 1, "0: PA without slack, 1: PA-I, 2: PA-II", bounds="[0, 2]",
           crfsuite="pa_type", crfsuite_default=1),
    Option("c", float, 1.0, "aggressiveness C (PA-I and PA-II)", bounds="(0, inf)",
           crfsuite="c", crfsuite_default=1.0),
    Option("error_sensitive", bool, True, "the cost adds the square root of the number of "
           "wrong labels (else 1)", crfsuite="error_sensitive", crfsuite_default=True),
    Option("averaging", bool, True, "the weights are the average of the iterates",
           crfsuite="averaging", crfsuite_default=True),
    _online_epsilon("cost"),
    SHUFFLE,
], prefix="pa")

AROW_OPTIONS = OptionTable("arow", [
    Option("variance", float, 1.0, "the initial variance of every weight", bounds="(0, inf)",
           crfsuite="variance", crfsuite_default=1.0),
    Option("gamma", float, 1.0, "the trade-off gamma of the update", bounds="(0, inf)",
           crfsuite="gamma", crfsuite_default=1.0),
    _online_epsilon("cost", "at most"),
    SHUFFLE,
], prefix="arow")

ALGORITHM_ALIASES = {"averaged-perceptron": "ap", "passive-aggressive": "pa"}
"""CRFsuite's own names of the algorithms that python-crfsuite also calls ap and pa."""


def canonical_algorithm(name):
    """The solver's name for an algorithm name or one of CRFsuite's long names."""
    return ALGORITHM_ALIASES.get(name, name) if isinstance(name, str) else name


# -------------------------------------------------------------------------------- memory
# The bytes of each solver's state, by the names of its memory_bytes() (a test holds them
# together), from the data sizes (:class:`crfsdca.runtime.memory.DataSizes`: n sequences, N
# tokens, K labels, A attributes, dim d) and the solver's resolved options.

F64 = memory.F64


def _itemsize(dtype: str) -> int:
    return {"float64": 8, "float32": 4}[dtype]


def _tree(n: int) -> int:
    size = 1
    while size < n:
        size *= 2
    return 2 * size * F64


def _sdca_state(o: Mapping, s) -> dict[str, int]:
    it = _itemsize(o.get("store_dtype", "float64"))
    out = {"weights": s.dim * F64, "per_sequence": 4 * s.n * F64}
    if o.get("store_dir") is None:  # else a file's: the page cache's, not the process's
        out["marginals_unary"] = s.N * s.K * it
        pairs = s.n if o.get("dual_store") == "compact" else s.N - s.n
        out["marginals_pairwise"] = pairs * s.K**2 * it
    if o.get("catalyst"):
        out["catalyst_points"] = 2 * s.feature_dim * F64 + 8 * s.features  # + the support
    return out


def _sag_state(o: Mapping, s) -> dict[str, int]:
    it = _itemsize(o.get("store_dtype", "float64"))
    return {"marginals_unary": s.N * s.K * it, "marginals_pairwise": s.n * s.K**2 * it,
            "weights": s.dim * F64, "gradient_sum": s.dim * F64, "lazy_rows": s.A * 8,
            "per_sequence": s.n + 4 * s.n * 8 + _tree(s.n) + (s.n + 1) * F64}


def _oeg_state(o: Mapping, s) -> dict[str, int]:
    n, K = s.n, s.K
    return {"potentials_unary": s.N * K * F64, "potentials_pairwise": (n * K * K + n) * F64,
            "marginals_unary": s.N * K * F64, "marginals_pairwise": n * K * K * F64,
            "weights": s.dim * F64, "per_sequence": 3 * n * 8}


def _lbfgs_state(o: Mapping, s) -> dict[str, int]:
    return {"history": 2 * int(o["memory"]) * s.feature_dim * F64,
            "weights": 2 * s.feature_dim * F64}


def _order_bytes(s) -> int:
    return s.n * 8


def _l2sgd_state(o: Mapping, s) -> dict[str, int]:
    return {"weights": s.dim * F64, "best_weights": s.dim * F64,
            "per_sequence": _order_bytes(s)}


def _ap_state(o: Mapping, s) -> dict[str, int]:
    return {"weights": s.dim * F64, "weight_sums": s.dim * F64, "averaged": s.dim * F64,
            "per_sequence": _order_bytes(s)}


def _pa_state(o: Mapping, s) -> dict[str, int]:
    averaged = s.dim * F64 if o["averaging"] else 0
    return {"weights": s.dim * F64, "weight_sums": averaged, "averaged": averaged,
            "difference": s.dim * F64, "difference_flags": s.dim,
            "per_sequence": _order_bytes(s)}


def _arow_state(o: Mapping, s) -> dict[str, int]:
    return {"weights": s.dim * F64, "variances": s.dim * F64, "difference": s.dim * F64,
            "difference_flags": s.dim, "per_sequence": _order_bytes(s)}


def sequence_index_bytes(s) -> int:
    """The per-sequence attribute index of the stochastic solvers (at most two int32 per
    entry)."""
    return 8 * (s.n + 1) + 8 * s.nnz


def full_batch_bytes(s) -> int:
    """The full-batch solvers' work vectors besides their state (gradient, trial point)."""
    return 4 * s.dim * F64


# -------------------------------------------------------------------------------- solvers


@dataclass(frozen=True)
class Shrink:
    """An option value that makes a solver's state smaller (the memory error's way out)."""

    option: str
    value: object  # None: "a smaller value"
    effect: str
    chosen: Callable[[], object] | None = None  # the value a run takes (``value`` names it)
    applies: Callable[[Mapping], bool] | None = None  # to a run of these options (None: all)

    def taken(self):
        """The value a run that shrinks takes (None: none it could choose)."""
        return self.chosen() if self.chosen is not None else self.value


@dataclass(frozen=True)
class SolverSpec:
    """A solver: its name, its paper name, its options, what it can do, and its class.

    ``factory`` is ``"module:Class"`` (imported only when the solver is built, so that
    the workflow's rerun lists follow each solver's own imports); ``fixed`` are
    constructor arguments that are not options (the SAG variant). With ``base_option``
    the paper name is the label of that option's value (SDCA's is its sampler's).
    ``seeded`` solvers are run once per seed of the config; the others once.

    What it can do: ``state`` gives the bytes of its state by part (as its
    ``memory_bytes()`` reports them) from its resolved options and the data sizes,
    ``workspace`` the bytes of its other allocations and ``work_vectors`` the vectors of
    the weights' size its run holds besides its state (the monitor's, copies of w);
    ``continues_from`` is what a run
    can continue from (``"dual"``: a saved dual state, ``"weights"``: a model's weights,
    None: nothing); ``supports_l1``, ``supports_threads``, ``supports_weights`` and
    ``supports_dense`` say whether it handles an L1 term, runs on several threads,
    honours sequence weights (``sample_weight``, CRFsuite's ``@weight``) and reads a
    dense block of vector attributes; ``supports_edges`` whether it trains transition
    attributes (:mod:`crfsdca.data.transitions`); ``shrink`` lists option values that make its state
    smaller; ``offered`` solvers are the estimator's and ``learn``'s algorithms;
    ``default_epochs`` is their epoch budget when none is given (CRFsuite's default
    ``max_iterations`` for its online trainers; None: the learner's); ``radii`` says
    from its resolved options whether it needs the squared radii R_i of the sequences
    (a pass over the data the estimator makes only then).
    """

    name: str
    label: str
    options: OptionTable
    factory: str
    state: Callable[[Mapping, object], dict[str, int]]
    workspace: Callable[[object], int] = sequence_index_bytes
    work_vectors: int = memory.WORK_VECTORS
    fixed: Mapping = field(default_factory=dict)
    base_option: str | None = None
    seeded: bool = True  # its runs depend on the seed (false: L-BFGS, deterministic)
    continues_from: str | None = None
    supports_l1: bool = False
    supports_threads: bool = False
    supports_weights: bool = False
    supports_dense: bool = False
    supports_edges: bool = False
    shrink: tuple[Shrink, ...] = ()
    offered: bool = True
    needs_l2: bool = True
    default_epochs: int | None = None  # the budget when none is given (None: the learner's)
    whole_epochs: bool = False  # an epoch is one iteration (L-BFGS): its budget is a count
    converges: bool = True  # runs to the optimum of the CRF objective, to any tolerance
    radii: Callable[[Mapping], bool] = lambda o: False

    @property
    def takes_no_l2(self) -> bool:
        return not self.needs_l2

    @property
    def module(self) -> str:
        return self.factory.split(":")[0]

    def __reduce__(self):
        # a registered solver travels to a worker process by name, so that its options
        # table there is the registry's own (the solver checks that identity)
        if SOLVERS.get(self.name) is self:
            return spec, (self.name,)
        return SolverSpec, tuple(getattr(self, f.name) for f in fields(self))

    def check_budget(self, epochs, name: str) -> None:
        """ConfigError where ``epochs`` (the budget, given as ``name``) is finite but not
        whole for a solver whose epoch is one iteration (``whole_epochs``): its run would
        round it."""
        if (self.whole_epochs and epochs is not None and math.isfinite(epochs)
                and not float(epochs).is_integer()):
            raise ConfigError(f"{name} counts {self.name}'s iterations: a whole number, "
                              f"got {epochs!r}")

    def solver_class(self):
        module, cls = self.factory.split(":")
        return getattr(importlib.import_module(module), cls)

    def configure(self, given: Mapping | None = None, keys: bool = False) -> SolverConfig:
        """This solver with ``given`` options resolved against its table (defaults filled
        in, every value checked; ``keys``: named by run key, as experiment runs are)."""
        return SolverConfig(self, MappingProxyType(self.options.resolve(given, keys=keys)))


@dataclass(frozen=True)
class SolverConfig:
    """A solver and its options, resolved once where a run is asked for (the estimator's
    ``fit``, the ``train`` command, a workflow run): the one object that the run loop, the
    memory check, continued training and the solver itself read, never resolved again."""

    spec: SolverSpec
    options: Mapping  # read-only: every option of the table, checked

    @property
    def name(self) -> str:
        return self.spec.name

    def __reduce__(self):
        # to a worker process: the spec (by name) and a plain copy of the options
        return _config, (self.spec, dict(self.options))

    def needs_radii(self) -> bool:
        """Whether the run needs the squared radii R_i of the sequences."""
        return self.spec.radii(self.options)

    def state_bytes(self, sizes) -> dict[str, int]:
        """The bytes of the solver's state on data of ``sizes``, by part."""
        return self.spec.state(self.options, sizes)

    def train_bytes(self, sizes) -> int:
        """What a training run allocates once its dataset is loaded: the solver's state,
        its other allocations (an index, work vectors) and the run's working vectors."""
        return (sum(self.state_bytes(sizes).values()) + self.spec.workspace(sizes)
                + self.spec.work_vectors * sizes.dim * memory.F64)

    def train_job_bytes(self, sizes) -> int:
        """The memory of a ``train`` job: process, dataset, and :meth:`train_bytes`."""
        return memory.BASE_JOB_BYTES + memory.dataset_bytes(sizes) + self.train_bytes(sizes)

    def shrunk(self, names) -> list[SolverConfig]:
        """This configuration with the ``shrink`` values of its options among ``names``
        taken one more at a time, in the registry's order (``store_dtype="float32"``, then
        also a ``store_dir``): each state smaller than the one before for the same
        problem; none where nothing changes."""
        out, changes = [], {}
        for w in self.spec.shrink:
            usable = w.option in names and (w.applies is None or w.applies(self.options))
            value = w.taken() if usable else None
            if value is not None and self.options.get(w.option) != value:
                changes[w.option] = value
                out.append(self.spec.configure({**self.options, **changes}))
        return out

    def build(self, problem, seed: int = 0, threads: int = 1, start=None):
        """The solver on ``problem``; ``start`` is what it continues from (a dual state's
        marginals or a weight vector, as ``continues_from`` says)."""
        s = self.spec
        extra = {}
        if start is not None:
            if s.continues_from is None:
                raise ConfigError(f"{s.name} cannot continue a previous run")
            if isinstance(start, DualStart):
                extra["initial_weights"] = start.weights
                start = start.marginals
            extra[CONTINUE_ARGUMENT[s.continues_from]] = start
        return s.solver_class()(problem, seed=seed, threads=threads, config=self, **s.fixed,
                                **extra)


def _config(spec: SolverSpec, options: dict) -> SolverConfig:
    """A :class:`SolverConfig` as pickled: its options were resolved already."""
    return SolverConfig(spec, MappingProxyType(options))


CONTINUE_ARGUMENT = {"dual": "initial_marginals", "weights": "w0"}
"""The constructor argument that takes each kind of start."""


class DualStart(NamedTuple):
    """A dual state's marginals and the weights the run that left them ended at (a
    solver that continues from its dual state may restart there: SDCA with Catalyst,
    whose weights are not those of its marginals alone)."""

    marginals: tuple
    weights: object = None


SDCA_WORK_VECTORS = 3
"""Weight-sized vectors an SDCA run holds besides its state: measured, the process's
anonymous memory grew by 4.7 of them over a default fit with c1 = 0.1 on CoNLL-2000 (3.7
with c1 = 0; 3.7 on Dutch NER), its state (3) and sequence index included (the store in a
file): 3 leaves a vector and more to spare, where the generic count (8) refused fits that
would train under a limit."""

_STORE_DTYPE_SHRINK = Shrink("store_dtype", "float32", "halves the stored marginals",
                             applies=lambda o: o.get("dual_store") != "compact")
_STORE_DIR_SHRINK = Shrink("store_dir", "DIR", "keeps the stored marginals in a file there",
                           chosen=tempfile.gettempdir)

SOLVERS: dict[str, SolverSpec] = {s.name: s for s in (
    SolverSpec("sdca", "SDCA", SDCA_OPTIONS, "crfsdca.solvers.sdca:SDCA", _sdca_state,
               work_vectors=SDCA_WORK_VECTORS, base_option="sampler", continues_from="dual",
               supports_l1=True,
               supports_threads=True, supports_weights=True, supports_dense=True,
               supports_edges=True,
               shrink=(_STORE_DTYPE_SHRINK, _STORE_DIR_SHRINK), radii=_sdca_radii),
    SolverSpec("sag", "SAG", SAG_OPTIONS, "crfsdca.solvers.sag:SAGFamily", _sag_state,
               fixed={"variant": "sag"}, shrink=(_STORE_DTYPE_SHRINK,), offered=False),
    SolverSpec("sag-nus", "SAG-NUS", SAG_OPTIONS, "crfsdca.solvers.sag:SAGFamily",
               _sag_state, fixed={"variant": "sag-nus"}, shrink=(_STORE_DTYPE_SHRINK,)),
    SolverSpec("sag-nus-star", "SAG-NUS*", SAG_OPTIONS, "crfsdca.solvers.sag:SAGFamily",
               _sag_state, fixed={"variant": "sag-nus-star"}, shrink=(_STORE_DTYPE_SHRINK,)),
    SolverSpec("oeg", "OEG", OEG_OPTIONS, "crfsdca.solvers.oeg:OEG", _oeg_state),
    SolverSpec("lbfgs", "L-BFGS", LBFGS_OPTIONS, "crfsdca.solvers.lbfgs:LBFGS", _lbfgs_state,
               workspace=full_batch_bytes, seeded=False, continues_from="weights",
               supports_l1=True, supports_threads=True, supports_weights=True,
               supports_dense=True, supports_edges=True, needs_l2=False, whole_epochs=True,
               shrink=(Shrink("memory", None, "shortens the history"),)),
    SolverSpec("l2sgd", "L2SGD", L2SGD_OPTIONS, "crfsdca.solvers.l2sgd:L2SGD", _l2sgd_state,
               supports_weights=True, default_epochs=1000, converges=False),
    SolverSpec("ap", "AP", AP_OPTIONS, "crfsdca.solvers.online:AveragedPerceptron",
               _ap_state, supports_weights=True, needs_l2=False, default_epochs=100,
               converges=False),
    SolverSpec("pa", "PA", PA_OPTIONS, "crfsdca.solvers.online:PassiveAggressive",
               _pa_state, supports_weights=True, needs_l2=False, default_epochs=100,
               converges=False),
    SolverSpec("arow", "AROW", AROW_OPTIONS, "crfsdca.solvers.online:AROW", _arow_state,
               supports_weights=True, needs_l2=False, default_epochs=100, converges=False),
)}
"""Every solver. Plain SAG, the paper's baseline with one global step size, is not
offered to users (it needs thousands of epochs on small problems; sag-nus does not)."""
SOLVER_NAMES = tuple(SOLVERS)
UNSEEDED = tuple(name for name, s in SOLVERS.items() if not s.seeded)
"""Solvers whose runs do not depend on the seed (run once, whatever the seeds)."""


def algorithms() -> tuple[str, ...]:
    """The solvers the estimator and ``learn`` offer (their entries' ``offered``)."""
    return tuple(name for name, s in SOLVERS.items() if s.offered)


ALGORITHMS = algorithms()
"""The offered solvers of the registry as this module declares them."""


def spec(name: str) -> SolverSpec:
    """The solver called ``name``; a ConfigError lists the known ones."""
    try:
        return SOLVERS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown solver {name!r}; choose one of "
                          f"{', '.join(SOLVER_NAMES)}") from None


def make_solver(name: str, problem, seed: int = 0, threads: int = 1, start=None, **options):
    """Build solver ``name`` on ``problem`` with its options (checked against its table)."""
    return spec(name).configure(options).build(problem, seed=seed, threads=threads,
                                               start=start)


# -------------------------------------------------------------------------------- runs

def resolve_run(run: Mapping) -> tuple[str, dict]:
    """``(solver, options)`` of an experiment run ``{solver: ..., <run key>: value, ...}``.

    Keys are run keys (``sampler``, ``sag_decrease``, ``lbfgs_memory``); every value is
    checked against the solver's table and defaults are filled in.
    """
    rest = dict(run)
    s = spec(rest.pop("solver", None))
    return s.name, s.options.resolve(rest, keys=True)


def run_id(solver: str, options: Mapping, extra: Mapping | None = None) -> str:
    """The directory name of a run: the solver, then its non-default options and
    ``extra`` (seed, budget scale) as ``key-value``, sorted by key.

    Runs that differ only by options left at their defaults share one name.
    """
    table = spec(solver).options
    items = {table.key(k): v for k, v in table.non_default(options).items()}
    items.update(extra or {})
    parts = [f"{k}-{format(v, 'g') if isinstance(v, float) else v}"
             for k, v in sorted(items.items())]
    return "_".join([solver] + parts)


def method_label(config: Mapping) -> str:
    """The paper's name of a run's method, from its configuration (a run's ``meta.json``
    "solver" entry): the solver's name, or for SDCA its sampler's (SDCA = uniform,
    SDCA-GAP...), followed by its relevant non-default options (``theta=0.5``,
    ``single Newton``, ``1e-4`` for a sub-precision, ``float32``...)."""
    name = str(config.get("solver", "?"))
    if name not in SOLVERS:
        return name.upper()
    s = SOLVERS[name]
    values = {k: v for k, v in config.items() if k in s.options.names()}
    base = s.label
    if s.base_option is not None:
        full = {**s.options.defaults(), **values}
        base = s.options[s.base_option].label_text(full[s.base_option], full)
    skip = () if s.base_option is None else (s.base_option,)
    threads = int(config.get("threads") or 1)
    parts = s.options.label_parts(values, skip=skip)
    return " ".join([base] + parts + ([f"{threads} threads"] if threads > 1 else []))


def base_labels() -> tuple[str, ...]:
    """Every solver's paper name, in registry order (SDCA's, one per sampler)."""
    out = []
    for s in SOLVERS.values():
        if s.base_option is not None:
            out += [str(v) for v in s.options[s.base_option].label.values()]
        else:
            out.append(s.label)
    return tuple(out)
