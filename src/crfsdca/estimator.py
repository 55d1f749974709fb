"""``crfsdca.CRF``: a drop-in for ``sklearn_crfsuite.CRF``, trained by SDCA.

Same constructor parameters where they mean something here, same methods and fitted
attributes; inputs as python-crfsuite reads them (``crfsdca.data.items``); CRFsuite's
model and objective (``crfsdca.training.feature_set``, ``crfsdca.training.learn``).
The options of the solvers are parameters too, named by their run keys (``sampler``,
``non_uniformity``, ``sag_decrease``, ``lbfgs_memory``...; None: the solver's default);
they come from the option tables of ``crfsdca.solvers.registry``.
"""

from __future__ import annotations

import itertools
import math
import numbers
import os
import sys
import time
from typing import NamedTuple

import numpy as np

from .corpus import Corpus
from .data.items import Vocabulary, encode
from .data.sequences import join, with_weights
from .data.shared_encoding import encode_training
from .data.stream import encode_stream, is_stream, labeled_pairs, nonempty_pairs, renumbered
from .data.transitions import known_split, split_transitions, transition_mask, unary_entries
from .eli5_support import install as install_eli5_explainer
from .errors import ConfigError
from .model.constraints import Forced, constraint_masks, forced_labels
from .model.decoding import (
    MarginalPass,
    check_n_best,
    constrained_labels,
    make_chain,
    n_best_labels,
)
from .model.objective import predict as viterbi_labels
from .model.oracle import sequence_marginals
from .model_file import (
    Model,
    dual_beside,
    dual_bytes,
    dual_path,
    load_model,
    model_format,
    save_model,
    save_model_with_dual,
)
from .runtime import memory
from .runtime.io import check_writable
from .solvers.registry import SOLVERS, SolverConfig, algorithms, canonical_algorithm
from .tagger import Tagger
from .training.feature_set import crfsuite_feature_mask
from .training.learn import (
    DEFAULT_EPSILON,
    check_values,
    feature_mass,
    learn,
    make_problem,
    scale_problem,
    solver_config,
)
from .training.params import Params
from .training.run import log_row
from .training.status import SIGNALLED, raise_stop
from .training.warm_start import (
    dual_state,
    start_point,
    state_digests,
    state_sequences,
)
from .training.weighting import check_sample_weight, fit_weights

CRFSUITE_ONLY: tuple[str, ...] = ()
"""CRFsuite's algorithms that are not offered here (all of them are now)."""



def solver_parameters() -> dict[str, None]:
    """The estimator's parameters after ``trainer_cls``, all None: every solver option by
    run key (``sampler``, ``lbfgs_memory``) and by its CRFsuite name (``num_memories``,
    ``linesearch``), in registry order. [`CRF`][crfsdca.estimator.CRF]'s signature lists
    them (a test holds the two together); their defaults are the option tables'."""
    keys: dict[str, None] = {}
    for s in SOLVERS.values():
        for o in s.options:
            keys.setdefault(s.options.key(o.name), None)
            if o.crfsuite is not None and o.crfsuite not in _NOT_SOLVER_OPTIONS:
                keys.setdefault(o.crfsuite, None)
    return keys


_NOT_SOLVER_OPTIONS = ("epsilon",)
"""CRFsuite names of solver options that are the estimator's own parameters (L-BFGS's
test is CRFsuite's ``epsilon``)."""

SOLVER_PARAMETERS = tuple(solver_parameters())


class RunSettings(NamedTuple):
    """A fit's solver (resolved once), its budget in epochs (None: the learner's) and the
    certified relative gap it stops at (None: the solver's own test stops it)."""

    config: SolverConfig
    epochs: float | None
    epsilon: float | None


class CRF(Params):
    """A linear-chain CRF with CRFsuite's model, trained by SDCA with gap sampling.

    A drop-in for ``sklearn_crfsuite.CRF``: the same constructor parameters where they
    mean something here, the same methods and fitted attributes, and inputs as
    python-crfsuite reads them (``crfsdca.data.items``: an item is a dict of attributes or
    a list of attribute names). The model and the objective are CRFsuite's,
    ``sum_i NLL_i + c1 ||w||_1 + c2 ||w||^2`` over CRFsuite's feature set. By default it
    trains by SDCA with gap sampling and stops when the relative duality gap, a
    certificate of how far the weights are from the optimum, is at most ``epsilon``.

    Parameters
    ----------
    algorithm : str, default "sdca"
        The solver (``crfsdca.solvers.registry.algorithms()``): ``"sdca"`` (gap sampling,
        theta 0.8), ``"sag-nus"``, ``"sag-nus-star"``, ``"oeg"``, ``"lbfgs"`` (CRFsuite's
        L-BFGS; OWL-QN when ``c1 > 0``), or CRFsuite's online trainers ``"l2sgd"`` (SGD
        with its learning-rate calibration), ``"ap"`` (averaged perceptron, also
        ``"averaged-perceptron"``), ``"pa"`` (passive-aggressive, also
        ``"passive-aggressive"``) and ``"arow"``, with CRFsuite's parameters and defaults.
    c1 : float, default 0.0
        Coefficient of the L1 term. ``c1 > 0`` is the elastic net: proximal SDCA for
        ``sdca``, OWL-QN for ``lbfgs``; the other solvers refuse it.
    c2 : float, default 1.0
        Coefficient of the L2 term, at least 0. ``c2 = 0`` (no L2 term) is for ``lbfgs``,
        ``ap``, ``pa`` and ``arow`` only: ``sdca``, ``oeg``, ``sag-nus`` and ``l2sgd`` need
        a strongly convex objective. ``ap``, ``pa`` and ``arow`` do not use it.
    max_iterations : int or None, default None
        The budget in epochs (passes of n updates; iterations for ``lbfgs``, a whole
        number there). None: until ``epsilon`` stops it, at most 1000 epochs; CRFsuite's
        default for its online trainers (1000 for ``l2sgd``, 100 for ``ap``, ``pa``,
        ``arow``).
    epsilon : float or None, default None
        Stop when the certified relative sub-optimality is at most this: the relative
        duality gap ``(P(w) - D) / P(w)`` for ``sdca`` and ``oeg`` (the gap estimate
        triggers, one full pass confirms), ``||grad P(w)||^2 / (2 lambda P(w))`` for
        ``sag-nus``, ``sag-nus-star`` and ``l2sgd``, tested every epoch; None: 3e-4
        (``crfsdca.training.learn.DEFAULT_EPSILON``); 0: run the whole budget. For ``lbfgs``,
        ``ap``, ``pa`` and ``arow`` it is CRFsuite's ``epsilon`` instead, the solver's own
        test (None: CRFsuite's default; 0: never).
    min_freq : float, default 0.0
        CRFsuite's ``feature.minfreq``: state features whose frequency (the sum of their
        attribute's weights) is below this are left out.
    all_possible_states : bool, default False
        CRFsuite's ``feature.possible_states``: a state weight for every (attribute, label)
        pair, not only the pairs seen in training.
    all_possible_transitions : bool, default False
        CRFsuite's ``feature.possible_transitions``: a transition weight for every pair of
        labels, not only the pairs seen in training.
    bias : bool, default False
        Add the paper's bias, first-position and last-position weights of each label
        (CRFsuite has none; such a model cannot be written in CRFsuite's format).
    max_seconds : float or None, default None
        Budget in solver seconds.
    random_state : int, numpy.random.RandomState or None, default 0
        Seed of the stochastic solvers (None: a fresh one).
    threads : int or None, default None
        Threads of the fit (None: every core this process may use, its affinity mask, the
        cgroup's CPU quota and an explicit ``OMP_NUM_THREADS`` counted, as scikit-learn's
        OpenMP estimators count them). They run the full-batch passes (``lbfgs``'s
        gradient, the certificate, predictions), whose chunks and sums are fixed by the
        data, and SDCA's steps, two at a time (``pipeline``) or in batches
        (``batch_size``): the model never depends on the thread count.
    warm_start : bool, default False
        Keep SDCA's dual state after ``fit``; the next ``fit`` starts every sequence it has
        seen from its dual block and every new one from the smoothed Dirac of its labels
        (``lbfgs``: from the weights).
    save_dual : bool, default False
        With ``model_filename``, also write the dual state beside the model
        (``MODEL.dual``), which ``continue_from`` and ``crfsdca learn --continue`` read;
        crfsdca's model format only (CRFsuite's drops attributes without features).
    verbose : bool, default False
        Print the memory of the solver's state before allocating it, then a line per epoch
        (loss, duality gap, and the dev scores when ``X_dev`` is given).
    model_filename : str or None, default None
        Write the model there after ``fit``; an unfitted CRF given the name of an existing
        model loads it (crfsdca's HDF5 or CRFsuite's binary model, told apart by content).
    model_format : {None, "hdf5", "crfsuite"}, default None
        The format ``fit`` writes: ``"hdf5"`` (crfsdca's: bias weights, options, training
        summary) or ``"crfsuite"`` (CRFsuite's binary model, which its tagger and its
        bindings in other languages read). None: ``"crfsuite"`` for a name ending in
        ``.crfsuite``, else ``"hdf5"``.
    keep_tempfiles : bool, default False
        sklearn-crfsuite's; accepted for compatibility, no temporary file is written here.
    trainer_cls : None, default None
        sklearn-crfsuite's python-crfsuite trainer class; must be None.
    class_weight : dict, "balanced" or None, default None
        Weights of the labels, ``{label: weight}`` (labels not named weigh 1) or
        ``"balanced"`` (N / (L N_k) for label k: N training tokens, N_k of them labeled k,
        L labels). A CRF's loss is per sequence: each sequence's weight is multiplied by
        the mean weight of its gold labels (``crfsdca.training.weighting``), so the
        objective stays sum_i c_i NLL_i and SDCA's gap a certificate.
    transition_prefix : str or None, default None
        Attributes whose names start with it are transition attributes: attribute e of
        token t scores the transition into it, W_B[e, y_{t-1}, y_t], with every pair of
        labels (CRF++'s ``B`` templates that read the input; ``crfsdca.templates`` names
        them with ``crfsdca.templates.TRANSITION_PREFIX``, and ``crfpp_parameters`` sets
        it). None: every attribute scores the labels of its token. Such a model is
        trained by ``algorithm='lbfgs'``, decoded by ``predict`` and saved in crfsdca's
        format; ``transition_attributes_`` lists them.
    max_memory : int, str or None, default None
        The most memory this fit's process may hold, in bytes or as a size (``"4G"``,
        ``"512MiB"``): where SDCA's marginal store would not fit beside what the process
        holds already, the fit takes a float32 store and then a store in a file
        (``store_dir``), as it does under a cgroup's or ``ulimit``'s limit, and says so;
        a state that does not fit even so is refused before allocating. None: what the
        machine, a cgroup, SLURM or ``ulimit`` leaves. The tightest bound counts.
    checkpoint_every : float or None, default None
        Seconds between checkpoints: with ``model_filename``, the model reached so far is
        written there (and with ``save_dual`` its dual state beside it) at the first log
        row after each such interval, atomically, so that a fit killed on the way (out of
        memory, a job's time limit) is continued from the last one by ``continue_from``
        (0: at every row, one an epoch). None: written at the end only (as after Ctrl-C).
    sampler, non_uniformity, ..., arow_epsilon : keyword-only, default None
        Every solver option is also a parameter, by its run key (``sampler``,
        ``non_uniformity``, ``store_dtype``, ``sag_decrease``, ``lbfgs_memory``...) and,
        where it is one of CRFsuite's parameters, by CRFsuite's name (below). None, the
        default, is the solver's default (CRFsuite's for CRFsuite's parameters). A value
        for another algorithm's option is an error at ``fit``. The tables, with defaults
        and ranges, are on the documentation's command-line reference page (Solver
        options); ``crfsdca learn -a ALGORITHM -H`` prints them.

    Other Parameters
    ----------------
    sampler : str, default None
        ``sdca``: which sequence to visit next: ``"gap"`` (None), ``"uniform"``,
        ``"importance"``, ``"gap-importance"``, ``"max"``, ``"perm"``, ``"cyclic"``.
    non_uniformity : float, default None
        ``sdca``: theta, the share of the draws that follow the sampler (None: 0.95; the
        paper's 0.8 took 4% more epochs on the practitioner's 16 cells, the gaps being
        refreshed every round).
    store_dtype : {"float64", "float32"}, default None
        ``sdca``, ``sag-nus``: float width of the stored dual marginals; ``"float32"``
        halves the memory (None: ``"float64"``).
    store_dir : str, default None
        ``sdca``: a directory where the stored dual marginals live in a file, paged by
        the operating system, rather than in memory (None: in memory, unless they
        would not fit there); the same model either way. The file is removed as soon
        as it is made, so nothing is left behind.
    dual_store : {"compact", "exact"}, default None
        ``sdca``: ``"compact"`` keeps each sequence's pairwise marginals summed and a
        lower bound of its entropy in place of every edge's pairwise marginals (CoNLL-2000:
        a store of 72 MB in place of 823), the step maximizing the dual with that bound;
        the gap stays a certificate. ``"exact"`` is the paper's store (what
        ``store_dtype="float32"``, transition attributes and ``batch_size`` > 1 need).
        None: ``"compact"``, or ``"exact"`` with transition attributes, a ``batch_size``
        > 1 or ``store_dtype="float32"``.
    store_window : float, default None
        ``sdca``: MiB of the stored marginals the draws keep to at a time (consecutive
        sequences drawn among themselves, one draw each, then the next ones), so that a
        store in a file is read in order, not at random (None: 64 with a store in a
        file, else all; 0: all). The model depends on it, not on where the store lives.
    window_spill : float, default None
        ``sdca``: with a ``store_window``, the share of the draws made over all the
        sequences, the rest within the window (None: 0.1).
    num_memories : int, default None
        ``lbfgs``: the number of (s, y) pairs (None: CRFsuite's 6).
    linesearch : str, default None
        ``lbfgs``: ``"MoreThuente"`` (None), ``"Backtracking"``, ``"StrongBacktracking"``
        (liblbfgs's searches, as CRFsuite runs them), or our names (``lbfgs_line_search``).
    max_linesearch : int, default None
        ``lbfgs``: evaluations per line search at most (None: 20).
    period : int, default None
        ``lbfgs``, ``l2sgd``: iterations (epochs) over which ``delta`` is tested (None: 10).
    delta : float, default None
        ``lbfgs``, ``l2sgd``: stop when the objective fell by less than this, relatively,
        over the last ``period`` iterations (None: 1e-5 for ``lbfgs``, 1e-6 for ``l2sgd``).
    calibration_eta, calibration_rate, calibration_samples : float, float, int, default None
        ``l2sgd``: the learning-rate calibration's first eta (0.1), its factor (2.0) and
        the instances it trains on (1000).
    calibration_candidates, calibration_max_trials : int, default None
        ``l2sgd``: the calibration's candidates (10) and trials (20).
    pa_type : int, default None
        ``pa``: 0 (no slack), 1 (PA-I, None) or 2 (PA-II).
    c : float, default None
        ``pa``: the aggressiveness C (None: 1.0).
    error_sensitive, averaging : bool, default None
        ``pa``: the cost counts the wrong labels; the weights are averaged (None: True).
    variance, gamma : float, default None
        ``arow``: the initial variance of every weight and the trade-off gamma (None: 1.0).

    Attributes
    ----------
    classes_ : list of str
        The labels, in order of first occurrence in the training data.
    attributes_ : list of str
        The attributes with at least one nonzero state weight (CRFsuite's list).
    num_attributes_ : int
        ``len(attributes_)``.
    state_features_ : dict of (str, str) to float
        ``{(attribute, label): weight}`` of the nonzero state weights.
    transition_features_ : dict of (str, str) to float
        ``{(label_from, label_to): weight}`` of the nonzero transition weights.
    training_log_ : list of dict or None
        One row per epoch (``epoch``, ``seconds``, ``loss`` = n P(w), ``gap`` and
        ``relative_gap`` (the certificate), ``dev_accuracy`` and ``dev_f1`` with a dev
        set); ``iterations`` and ``last_iteration`` as sklearn-crfsuite's log. None before
        ``fit``.
    tagger_ : crfsdca.tagger.Tagger or None
        python-crfsuite's ``Tagger`` interface on the model (``set``, ``tag``,
        ``probability``, ``marginal``, ``info``, ``labels``); None before ``fit``.
    model_ : crfsdca.model_file.Model
        The trained model: vocabularies, weights, options and training summary.
    size_ : int
        Bytes of the model's content: 12 per nonzero weight, and the vocabularies.

    See Also
    --------
    crfsdca.metrics : Scores of label sequences, with conlleval's chunk F1.
    crfsdca.tagger.Tagger : python-crfsuite's tagger on a saved model.

    Examples
    --------
    sklearn-crfsuite's tutorial call, with the import swapped:

    >>> import crfsdca as sklearn_crfsuite
    >>> crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
    ...                            all_possible_transitions=True)

    The default trains by SDCA and stops at a relative duality gap of ``epsilon``:

    >>> from crfsdca import CRF
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}]]
    >>> y = [["D", "N"], ["D", "N", "V"]]
    >>> crf = CRF(c2=0.1).fit(X, y)
    >>> crf.predict([[{"w": "the"}, {"w": "dog"}]])
    [['D', 'N']]
    >>> print(crf.training_log_.last_iteration["relative_gap"] <= 3e-4)
    True
    """

    def __init__(self, algorithm="sdca", c1=0.0, c2=1.0, max_iterations=None, epsilon=None,
                 min_freq=0.0, all_possible_states=False, all_possible_transitions=False,
                 bias=False, max_seconds=None, random_state=0, threads=None, warm_start=False,
                 save_dual=False, verbose=False, model_filename=None, model_format=None,
                 keep_tempfiles=False, trainer_cls=None, class_weight=None,
                 transition_prefix=None, max_memory=None, checkpoint_every=None, *,
                 sampler=None,
                 non_uniformity=None,
                 line_search=None, line_search_start=None, subprecision=None, step_size=None,
                 refresh_every=None, store_dtype=None, store_dir=None, dual_store=None,
                 store_window=None,
                 window_spill=None, init_c=None, catalyst=None,
                 catalyst_floor=None, catalyst_momentum=None, catalyst_tune=None,
                 batch_size=None, pipeline=None, l1_line_search=None,
                 sag_lipschitz_init=None,
                 sag_decrease=None,
                 sag_decrease_guarded=None, sag_first_visit=None, sag_step_rule=None,
                 sag_guard=None, sag_max_doublings=None, oeg_eta0=None, oeg_c0=None,
                 oeg_eta_increase=None, oeg_eta_max=None, oeg_max_trials=None,
                 oeg_sampling=None, oeg_count_init=None, lbfgs_memory=None, num_memories=None,
                 lbfgs_c1=None, lbfgs_c2=None, lbfgs_max_evals=None, max_linesearch=None,
                 lbfgs_gtol=None, lbfgs_line_search=None, linesearch=None,
                 lbfgs_first_step=None, lbfgs_epsilon=None, lbfgs_period=None, period=None,
                 lbfgs_delta=None, delta=None, l2sgd_period=None, l2sgd_delta=None,
                 l2sgd_calibration_eta=None, calibration_eta=None, l2sgd_calibration_rate=None,
                 calibration_rate=None, l2sgd_calibration_samples=None,
                 calibration_samples=None, l2sgd_calibration_candidates=None,
                 calibration_candidates=None, l2sgd_calibration_max_trials=None,
                 calibration_max_trials=None, shuffle=None, ap_epsilon=None, pa_type=None,
                 pa_c=None, c=None, pa_error_sensitive=None, error_sensitive=None,
                 pa_averaging=None, averaging=None, pa_epsilon=None, arow_variance=None,
                 variance=None, arow_gamma=None, gamma=None, arow_epsilon=None):
        self.algorithm = algorithm
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.epsilon = epsilon
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.bias = bias
        self.max_seconds = max_seconds
        self.random_state = random_state
        self.threads = threads
        self.warm_start = warm_start
        self.save_dual = save_dual
        self.verbose = verbose
        self.model_filename = model_filename
        self.model_format = model_format
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls
        self.class_weight = class_weight
        self.transition_prefix = transition_prefix
        self.max_memory = max_memory
        self.checkpoint_every = checkpoint_every
        self.sampler = sampler
        self.non_uniformity = non_uniformity
        self.line_search = line_search
        self.line_search_start = line_search_start
        self.subprecision = subprecision
        self.step_size = step_size
        self.refresh_every = refresh_every
        self.store_dtype = store_dtype
        self.store_dir = store_dir
        self.dual_store = dual_store
        self.store_window = store_window
        self.window_spill = window_spill
        self.init_c = init_c
        self.catalyst = catalyst
        self.catalyst_floor = catalyst_floor
        self.catalyst_momentum = catalyst_momentum
        self.catalyst_tune = catalyst_tune
        self.batch_size = batch_size
        self.pipeline = pipeline
        self.l1_line_search = l1_line_search
        self.sag_lipschitz_init = sag_lipschitz_init
        self.sag_decrease = sag_decrease
        self.sag_decrease_guarded = sag_decrease_guarded
        self.sag_first_visit = sag_first_visit
        self.sag_step_rule = sag_step_rule
        self.sag_guard = sag_guard
        self.sag_max_doublings = sag_max_doublings
        self.oeg_eta0 = oeg_eta0
        self.oeg_c0 = oeg_c0
        self.oeg_eta_increase = oeg_eta_increase
        self.oeg_eta_max = oeg_eta_max
        self.oeg_max_trials = oeg_max_trials
        self.oeg_sampling = oeg_sampling
        self.oeg_count_init = oeg_count_init
        self.lbfgs_memory = lbfgs_memory
        self.num_memories = num_memories
        self.lbfgs_c1 = lbfgs_c1
        self.lbfgs_c2 = lbfgs_c2
        self.lbfgs_max_evals = lbfgs_max_evals
        self.max_linesearch = max_linesearch
        self.lbfgs_gtol = lbfgs_gtol
        self.lbfgs_line_search = lbfgs_line_search
        self.linesearch = linesearch
        self.lbfgs_first_step = lbfgs_first_step
        self.lbfgs_epsilon = lbfgs_epsilon
        self.lbfgs_period = lbfgs_period
        self.period = period
        self.lbfgs_delta = lbfgs_delta
        self.delta = delta
        self.l2sgd_period = l2sgd_period
        self.l2sgd_delta = l2sgd_delta
        self.l2sgd_calibration_eta = l2sgd_calibration_eta
        self.calibration_eta = calibration_eta
        self.l2sgd_calibration_rate = l2sgd_calibration_rate
        self.calibration_rate = calibration_rate
        self.l2sgd_calibration_samples = l2sgd_calibration_samples
        self.calibration_samples = calibration_samples
        self.l2sgd_calibration_candidates = l2sgd_calibration_candidates
        self.calibration_candidates = calibration_candidates
        self.l2sgd_calibration_max_trials = l2sgd_calibration_max_trials
        self.calibration_max_trials = calibration_max_trials
        self.shuffle = shuffle
        self.ap_epsilon = ap_epsilon
        self.pa_type = pa_type
        self.pa_c = pa_c
        self.c = c
        self.pa_error_sensitive = pa_error_sensitive
        self.error_sensitive = error_sensitive
        self.pa_averaging = pa_averaging
        self.averaging = averaging
        self.pa_epsilon = pa_epsilon
        self.arow_variance = arow_variance
        self.variance = variance
        self.arow_gamma = arow_gamma
        self.gamma = gamma
        self.arow_epsilon = arow_epsilon
        self._model = None
        self._dual = None
        self.training_log_ = None

    # ---------------------------------------------------------------------- training
    def fit(self, X, y=None, X_dev=None, y_dev=None, sample_weight=None):
        """Train on sequences ``X`` (lists of items) with labels ``y`` (lists of strings).

        ``X`` and ``y`` may be lists, or any iterables (generators, readers of files),
        or ``y`` None and ``X`` an iterable of (xseq, yseq) pairs: what is not a list is
        read once, a chunk at a time, and its items are never all in memory at once;
        the model is the one the same sequences in lists give. A sequence without items
        (and labels) is left out, as CRFsuite leaves it, of ``X`` and of ``X_dev``.

        ``X`` may also be a [`Corpus`][crfsdca.corpus.Corpus] (``y`` None): sequences
        encoded once into a folder, trained on without encoding them again (the same
        model as on the sequences themselves).

        ``sample_weight``: a weight per sequence (finite, >= 0; a number: the same for
        all), multiplying its loss: the objective is sum_i c_i NLL_i + c1 ||w||_1 +
        c2 ||w||^2 (CRFsuite's ``@weight``; c2 is not rescaled, as scikit-learn's
        sample_weight multiplies the loss only). A weight of 2 trains as the sequence
        written twice; a weight of 0 leaves it out.

        Ctrl-C stops training: the estimator keeps the weights reached (``model_``, its
        ``model_filename`` written), then raises the KeyboardInterrupt again, as
        sklearn-crfsuite's ``fit`` raises it, so that a search over CRFs stops too."""
        return self._fit(X, y, X_dev, y_dev, sample_weight, add_to_state=False)

    def partial_fit(self, X, y=None, X_dev=None, y_dev=None, sample_weight=None):
        """Continue training (SDCA) on the sequences kept from earlier fits (with their
        weights) plus ``X`` (weighted by ``sample_weight``, as in
        [`fit`][crfsdca.estimator.CRF.fit])."""
        return self._fit(X, y, X_dev, y_dev, sample_weight, add_to_state=True)

    def _fit(self, X, y, X_dev, y_dev, sample_weight, add_to_state: bool):
        with memory.budget(memory.parse_size(self.max_memory, "max_memory")):
            return self._fit_within(X, y, X_dev, y_dev, sample_weight, add_to_state)

    def _fit_within(self, X, y, X_dev, y_dev, sample_weight, add_to_state: bool):
        every = self._checkpoint_interval()
        if (X_dev is None) != (y_dev is None):
            raise ValueError("pass both X_dev and y_dev to use the holdout data")
        corpus = X if isinstance(X, Corpus) else None
        if corpus is not None and y is not None:
            raise ValueError("fit(corpus): the labels are the corpus's own; pass y=None")
        streamed = corpus is None and is_stream(X, y)
        kept_at = None  # the positions in X of the sequences kept (None: all)
        if not streamed and corpus is None:
            kept_at, X, y, sample_weight, _ = training_data(X, y, sample_weight)
        algorithm, run = self._checked_run()
        config = run.config
        c1, c2, min_freq = (self._crfsuite_value(name) for name in ("c1", "c2", "min_freq"))
        if not streamed and corpus is None:  # the data's feature mass at least, before encoding
            transitions = sum(map(len, X)) - len(X)
            if (why := scale_problem(c2, transitions, config)) is not None:
                raise ConfigError(why)
        continuing = add_to_state or self.warm_start
        previous = self._current_model() if continuing else None
        state = self._dual if continuing else None
        if add_to_state and SOLVERS[algorithm].continues_from != "dual":
            raise ConfigError(f"partial_fit continues a dual state: algorithm "
                              f"{_continuing_from('dual')}")
        attributes = Vocabulary(previous.attributes if previous is not None else ())
        labels = Vocabulary(previous.labels if previous is not None else ())
        keep = continuing or self.save_dual
        lap = _stopwatch()
        if corpus is not None:
            attributes, labels = Vocabulary(corpus.attributes), Vocabulary(corpus.labels)
            train, zero_entries = corpus.sequences, corpus.zero_entries
            digests = corpus.digests() if keep else []
            sample_weight = check_sample_weight(sample_weight, train.n_sequences)
        elif streamed:
            skipped: list[int] = []
            train, digests, zero_entries = encode_stream(
                labeled_pairs(X, y), attributes, labels, digests=keep, skipped=skipped)
            sample_weight = check_sample_weight(_without(sample_weight, skipped),
                                                train.n_sequences)
        else:
            with renumbered(kept_at):  # errors name the sequences by their place in X
                train, digests, zero_entries = encode_training(X, y, attributes, labels,
                                                               digests=keep)
        train = with_weights(train, sample_weight)
        if add_to_state and state is not None:
            kept = state_sequences(state)
            train = join([kept, train])
            digests = state_digests(state) + digests
            zero_entries = zero_entries + [0, kept.n_tokens]
        attributes, edge_names, train, zero_entries = self._split_transitions(
            attributes, train, zero_entries, continuing)
        A, K, E = len(attributes), len(labels), len(edge_names)
        if E and self.dual_store is None and config.options.get("dual_store") == "compact":
            # transition attributes need every edge's pairwise marginals: the default store
            # is the exact one for them
            config = config.spec.configure({**config.options, "dual_store": "exact"})
        sampled, train = train, fit_weights(train, labels.strings(), self.class_weight)
        if train.n_dense and self.save_dual:
            raise ConfigError("save_dual: a dual file does not hold array attributes (a "
                              "dense block); continue such a fit in the same process "
                              "(warm_start, partial_fit) or with algorithm 'lbfgs'")
        phases = {"encode": lap()}
        check_values(train, attributes)
        if (why := scale_problem(c2, feature_mass(train), config)) is not None:
            raise ConfigError(why)
        mask = crfsuite_feature_mask(train, A, K, bool(self.all_possible_states),
                                     bool(self.all_possible_transitions),
                                     min_freq, bool(self.bias), zero_entries, E)
        del zero_entries  # (attribute, token) pairs: as many as a tenth of the entries
        phases["feature_set"] = lap()
        dev = None
        label_names = labels.strings()
        if X_dev is not None:
            dev_labels = Vocabulary(label_names)
            X_dev, y_dev = _as_list(X_dev, "X_dev"), _as_list(y_dev, "y_dev")
            dev_at = None
            if len(X_dev) == len(y_dev):  # (else encode says which is short)
                dev_at, X_dev, y_dev = without_empty(X_dev, y_dev, what="dev")
            with renumbered(dev_at):
                dev = encode(X_dev, y_dev,
                             Vocabulary(attributes.strings() + edge_names), dev_labels,
                             grow=False, grow_labels=True).seq
            dev = known_split(dev, A, E)
            label_names = dev_labels.strings()
            phases["encode"] += lap()
        problem = make_problem(train, A, K, label_names, c2, mask, dev, c1,
                               radii=config.needs_radii(),
                               n_transition_attributes=E)
        phases["problem"] = lap()
        stream = sys.stdout
        say = (lambda msg: print(msg, file=stream)) if self.verbose else None
        start = start_point(config, previous, state, train, digests, A, K, mask,
                            say) if continuing else None
        model_options = {"algorithm": algorithm, "c1": c1, "c2": c2,
                         "min_freq": min_freq,
                         "all_possible_states": bool(self.all_possible_states),
                         "all_possible_transitions": bool(self.all_possible_transitions),
                         "bias": bool(self.bias)}

        def model_of(weights, options, status, seconds, last) -> Model:
            return Model(labels.strings(), attributes.strings(), weights,
                         {**model_options, "solver": options},
                         {"status": status, "seconds": seconds, "n": problem.n,
                          "last": last}, edge_names)

        def dual_of(marginals):
            return dual_state(sampled, digests, marginals, A, K, c2)

        checkpoint = self._checkpoints(every, model_of, dual_of, problem.n,
                                       SOLVERS[algorithm].continues_from == "dual")
        learned = learn(problem, config, seed=self._seed(), epochs=run.epochs,
                        epsilon=run.epsilon, max_seconds=self.max_seconds,
                        verbose=bool(self.verbose), stream=stream, start=start,
                        threads=self.threads,
                        shrink_to_fit=tuple(name for name, given in (
                            ("store_dtype", self.store_dtype), ("store_dir", self.store_dir))
                            if given is None), on_row=checkpoint)
        last = learned.log[-1] if learned.log else {}
        self._model = model_of(learned.weights, learned.options, learned.status,
                               learned.seconds, last)
        self._dual = None
        if keep and learned.marginals is not None:
            self._dual = dual_of(learned.marginals)
        learned.log.phases = {**phases, **learned.log.phases}
        self.training_log_ = learned.log
        if self.model_filename is not None:
            self._save(self._model, self._dual if self.save_dual else None)
        if learned.status in SIGNALLED:
            print(f"training {learned.status}: the model keeps the last weights",
                  file=sys.stderr)
            raise_stop(learned.status)  # as sklearn-crfsuite's fit: a search stops here
        return self

    def _checkpoint_interval(self) -> float | None:
        """``checkpoint_every``, checked (before any data is read)."""
        every = self.checkpoint_every
        if every is None:
            return None
        if isinstance(every, bool) or not isinstance(every, (int, float)) \
                or not (math.isfinite(every) and every >= 0):
            raise ValueError(f"checkpoint_every must be a number of seconds >= 0 or None, "
                             f"got {every!r}")
        if self.model_filename is None:
            raise ConfigError("checkpoint_every writes the model: give model_filename "
                              "(learn: -m MODEL)")
        return float(every)

    def _checkpoints(self, every: float | None, model_of, dual_of, n: int, has_dual: bool):
        """The ``on_row`` of a fit with ``checkpoint_every`` (``every``, checked; None
        without): every that many seconds, the model of the solver's weights (``model_of``) to
        ``model_filename`` and, with ``save_dual``, its dual state (``dual_of``) beside
        it (the pair written so that a kill at any instant leaves a model and its own
        dual)."""
        if every is None:
            return None
        due = time.perf_counter() + every

        def checkpoint(solver, row: dict) -> None:
            nonlocal due
            if time.perf_counter() < due:
                return
            model = model_of(np.array(solver.weights(), copy=True), solver.config(),
                             "checkpoint", row["seconds"], log_row(row, n))
            self._save(model, dual_of(solver.marginals) if self.save_dual and has_dual
                       else None)
            due = time.perf_counter() + every

        return checkpoint

    def _split_transitions(self, attributes, train, zero_entries, continuing):
        """(the vocabulary of the attributes, the names of the transition attributes, the
        split with the latter in its transition CSR, the zero entries of the former) by
        ``transition_prefix`` (``crfsdca.data.transitions``)."""
        prefix = self.transition_prefix
        if prefix is not None and not (isinstance(prefix, str) and prefix):
            raise ValueError(f"transition_prefix must be a nonempty str or None, got "
                             f"{prefix!r}")
        names = attributes.strings()
        is_edge = transition_mask(names, prefix)
        if not is_edge.any():
            return attributes, [], train, zero_entries
        if continuing or self.save_dual:
            raise ConfigError("a model with transition attributes is not continued "
                              "(warm_start, partial_fit, save_dual) yet: fit it whole")
        train, unary_ids, edge_ids = split_transitions(train, is_edge)
        return (Vocabulary([names[j] for j in unary_ids]), [names[j] for j in edge_ids],
                train, unary_entries(zero_entries, is_edge))

    def continue_from(self, path, keep=(), algorithm=None):
        """Make the next ``fit`` continue the model saved at ``path`` (and its dual state
        ``path.dual`` when there is one): its vocabularies and, unless named in ``keep``,
        its c2, feature set and algorithm (``crfsdca learn --continue``)."""
        model = load_model(path)
        options = model.options
        given = set(keep) | ({"algorithm"} if algorithm else set())
        self.set_params(**{key: options[key] for key in (
            "algorithm", "c1", "c2", "min_freq", "all_possible_states",
            "all_possible_transitions", "bias") if key not in given and key in options})
        self._model = model
        self._dual = dual_beside(path, model)
        if self._dual is None and SOLVERS.get(self.algorithm) is not None \
                and SOLVERS[self.algorithm].continues_from == "dual":
            raise ConfigError(f"{path}: no dual state beside it ({dual_path(path)}); train "
                              f"it with save_dual (learn --save-dual) to continue with "
                              f"{self.algorithm}, or continue with algorithm "
                              f"{_continuing_from('weights')} (from the weights)")
        self.warm_start = True
        return self

    def _save(self, model: Model, dual: dict | None) -> None:
        """Write ``model`` to ``model_filename``, with its dual state ``dual`` beside it
        unless None."""
        if dual is None:
            save_model(self.model_filename, model, self.model_format)
            return
        if self.verbose:
            print(f"dual state {dual_bytes(dual) / 2**20:.1f} MiB -> "
                  f"{dual_path(self.model_filename)}", file=sys.stdout)
        save_model_with_dual(self.model_filename, model, dual, self.model_format)

    def _check_outputs(self) -> None:
        """The model (and dual) file can be written, in a format that holds the model:
        found before training, never after it."""
        if self.model_filename is None:
            if self.save_dual:
                raise ConfigError("save_dual writes the dual state beside the model: give "
                                  "model_filename")
            return
        fmt = model_format(self.model_filename, self.model_format)
        if fmt == "crfsuite" and self.bias:
            raise ConfigError("CRFsuite's model format has no bias features: train with "
                              "bias=False, or write crfsdca's format (model_format='hdf5')")
        if fmt == "crfsuite" and self.save_dual:
            raise ConfigError("save_dual needs crfsdca's model format: CRFsuite's keeps only "
                              "the attributes that have features, so no dual state matches "
                              "the model read back; write model_format='hdf5' (a name not "
                              "ending in .crfsuite)")
        check_writable(self.model_filename)
        if self.save_dual:
            check_writable(dual_path(self.model_filename))

    def _checked_run(self) -> tuple[str, RunSettings]:
        """The algorithm and how a fit by it runs with these parameters, every parameter
        of the run checked first (``crfsdca.CRFCV``'s fits too)."""
        algorithm = self._check_algorithm()
        self._check_numbers()
        if self.trainer_cls is not None:
            raise ConfigError("trainer_cls is a python-crfsuite trainer class, which crfsdca "
                              "does not use: leave it None")
        self._check_outputs()
        SOLVERS[algorithm].check_budget(self.max_iterations, "max_iterations")
        return algorithm, self._run_settings(algorithm)

    def _run_settings(self, algorithm: str) -> RunSettings:
        """How a fit by ``algorithm`` runs with these parameters."""
        params = self.get_params(deep=False)
        given = {k: params[k] for k in SOLVER_PARAMETERS}
        if given.get("dual_store") is None and ((given.get("batch_size") or 1) > 1
                                                or given.get("store_dtype") == "float32"):
            given["dual_store"] = "exact"  # the default store for what needs the exact one
        own_epsilon = any(o.crfsuite == "epsilon" for o in SOLVERS[algorithm].options)
        if own_epsilon:  # the solver's own test is CRFsuite's epsilon (L-BFGS)
            given["epsilon"] = self.epsilon
        return RunSettings(solver_config(algorithm, given),
                           self.max_iterations if self.max_iterations is not None
                           else SOLVERS[algorithm].default_epochs,
                           None if own_epsilon else
                           DEFAULT_EPSILON if self.epsilon is None else self.epsilon)

    def _check_numbers(self) -> None:
        """The numeric parameters' kinds, each error naming its parameter: c1, c2 and
        min_freq finite numbers >= 0 (None: CRFsuite's default, as sklearn-crfsuite
        reads it), the budgets and epsilon numbers or None (their ranges are the run's to
        check), random_state an int, a RandomState or None."""
        for name in ("c1", "c2", "min_freq"):
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and math.isfinite(value)
                                          and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        for name in ("epsilon", "max_iterations", "max_seconds"):
            value = getattr(self, name)
            if value is not None and not _is_number(value):
                raise ValueError(f"{name} must be a number or None, got {value!r}")
        seed = self.random_state
        if not (seed is None or isinstance(seed, np.random.RandomState)
                or isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
            raise ValueError(f"random_state must be an int, a numpy RandomState or None, "
                             f"got {seed!r}")

    def _crfsuite_value(self, name: str) -> float:
        """Parameter ``name`` (c1, c2 or min_freq, checked by ``_check_numbers``) as a
        float, CRFsuite's default where it is None."""
        value = getattr(self, name)
        return CRFSUITE_DEFAULTS[name] if value is None else float(value)

    def _check_algorithm(self) -> str:
        name = canonical_algorithm(self.algorithm)  # CRFsuite's long names too
        offered = algorithms()
        if name in CRFSUITE_ONLY:
            raise ConfigError(f"algorithm {name!r} is CRFsuite's, not available here; choose "
                             f"one of {', '.join(offered)}")
        if name not in offered:
            raise ConfigError(f"unknown algorithm {name!r}; choose one of "
                             f"{', '.join(offered)}")
        return name

    def _seed(self) -> int:
        if self.random_state is None:
            return int(np.random.default_rng().integers(2**31))
        if isinstance(self.random_state, np.random.RandomState):
            return int(self.random_state.randint(2**31))
        return int(self.random_state)

    # ---------------------------------------------------------------------- the model
    def _current_model(self) -> Model | None:
        if self._model is None and self.model_filename is not None \
                and os.path.exists(self.model_filename):
            self._model = load_model(self.model_filename)
            if self.warm_start:
                self._dual = dual_beside(self.model_filename, self._model)
        return self._model

    @property
    def tagger_(self):
        """python-crfsuite's ``Tagger`` interface on the trained model
        ([`crfsdca.tagger`][crfsdca.tagger]: ``set``, ``tag``, ``probability``,
        ``marginal``, ``info``, ``labels``); None before ``fit``, as sklearn-crfsuite's."""
        model = self._current_model()
        if model is None:
            return None
        cached = getattr(self, "_tagger_cache", None)
        if cached is None or cached[0] is not model:
            cached = (model, Tagger.from_model(model))
            self._tagger_cache = cached
        return cached[1]

    @property
    def model_(self) -> Model:
        """The trained model (vocabularies, weights, options)."""
        model = self._current_model()
        if model is None:
            from sklearn.exceptions import NotFittedError  # lazy: 0.9 s, only for the error

            raise NotFittedError("this CRF is not fitted yet: call fit, or give "
                                 "model_filename of an existing model")
        return model

    def __sklearn_is_fitted__(self) -> bool:
        return self._current_model() is not None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_dual"] = None  # the dual state travels in MODEL.dual files, not pickles
        state.pop("_ids_cache", None)
        state.pop("_tagger_cache", None)
        return state

    # ---------------------------------------------------------------------- prediction
    def _encode_x(self, X):
        model = self.model_
        vocab = Vocabulary()
        vocab.ids = self._attribute_ids()
        X = _as_list(X, "X")
        keep = [i for i, xseq in enumerate(X) if len(xseq)]
        enc = encode([X[i] for i in keep], None, vocab, Vocabulary(model.labels), grow=False)
        seq = known_split(enc.seq, len(model.attributes), len(model.transition_attributes))
        return seq, keep, len(X)

    def _attribute_ids(self) -> dict[str, int]:
        """The model's attributes, then its transition attributes, by name."""
        model = self.model_
        cached = getattr(self, "_ids_cache", None)
        if cached is None or cached[0] is not model:
            cached = (model, {a: i for i, a in enumerate(model.attributes
                                                          + model.transition_attributes)})
            self._ids_cache = cached
        return cached[1]

    def _decoding(self, X: list, constraints, forced, always: bool = False):
        """(chain, forced labels of the nonempty sequences, their numbers in ``X``) of a
        prediction under ``constraints`` and ``forced``, checked before anything is
        decoded; None for neither, unless ``always``."""
        if constraints is None and forced is None and not always:
            return None
        model = self.model_
        A, K = len(model.attributes), len(model.labels)
        chain = make_chain(model.weights, A, K, constraint_masks(constraints, model.labels))
        lengths = [len(xseq) for xseq in X]
        fixed = forced_labels([None] * len(X) if forced is None else forced, lengths,
                              model.labels)
        keep = [i for i, T in enumerate(lengths) if T]
        # an empty sequence has no forced label: the kept ones' entries are all there are
        fixed = Forced(np.append(fixed.indptr[keep], fixed.indptr[-1]), fixed.positions,
                       fixed.labels)
        return chain, fixed, keep

    def predict(self, X, constraints=None, forced=None) -> list[list[str]]:
        """The most likely label sequence (Viterbi) of every sequence of ``X``.

        ``constraints``: None, ``"BIO"``, ``"BIOES"``, ``"IOB1"`` (read from the label
        names) or a collection of forbidden (label_from, label_to) pairs; ``forced``: per
        sequence None or {position: label}. Then each sequence gets its best labeling
        among those allowed (``docs/guide/constraints.md``); a sequence that has none
        raises ValueError."""
        model = self.model_
        X = _as_list(X, "X")
        plan = self._decoding(X, constraints, forced)
        seq, keep, n = self._encode_x(X)
        out: list[list[str]] = [[] for _ in range(n)]
        if not keep:
            return out
        A, K = len(model.attributes), len(model.labels)
        if plan is None:
            ids = viterbi_labels(model.weights, seq, A, K)
        else:
            ids = constrained_labels(model.weights, A, K, seq, plan[0], plan[1], keep)
        names = np.array(model.labels, dtype=object)
        for j, i in enumerate(keep):
            out[i] = list(names[ids[seq.offsets[j]: seq.offsets[j + 1]]])
        return out

    def predict_n_best(self, X, k, constraints=None, forced=None
                       ) -> list[list[tuple[list[str], float]]]:
        """The ``k`` most likely label sequences of every sequence of ``X``, best first, as
        (labels, probability) pairs: exact (the list Viterbi, not a beam); fewer than k
        where a sequence has fewer labelings allowed, none for an empty sequence.
        ``constraints`` and ``forced`` as ``predict`` takes them; the probabilities
        are then those of the constrained distribution."""
        model = self.model_
        k = check_n_best(k)
        X = _as_list(X, "X")
        chain, fixed, _ = self._decoding(X, constraints, forced, always=True)
        seq, keep, n = self._encode_x(X)
        out: list[list] = [[] for _ in range(n)]
        if not keep:
            return out
        A, K = len(model.attributes), len(model.labels)
        best = n_best_labels(model.weights, A, K, seq, k, chain, fixed, keep)
        names = np.array(model.labels, dtype=object)
        probs = best.probs.tolist()
        for j, i in enumerate(keep):
            a, b = seq.offsets[j], seq.offsets[j + 1]
            out[i] = [(list(names[best.paths[r, a:b]]), probs[j][r])
                      for r in range(best.counts[j])]
        return out

    def predict_single(self, xseq, constraints=None, forced=None) -> list[str]:
        """The most likely label sequence of one sequence (by
        [`tagger_`][crfsdca.estimator.CRF.tagger_], which keeps the model's decoder
        between calls, as sklearn-crfsuite's does); ``constraints``
        as ``predict`` takes them, ``forced``: None or {position: label}."""
        model = self.model_
        if isinstance(xseq, (str, bytes, dict)):
            raise ValueError(f"xseq must be a list of items, got {type(xseq).__name__}")
        if not len(xseq) and constraints is None and forced is None:
            return []
        del model
        return self.tagger_.tag(xseq, constraints=constraints, forced=forced)

    def predict_marginals(self, X, pairwise=False, constraints=None, forced=None) -> list:
        """Per item, the marginal probability of every label ({label: p}).

        ``pairwise=True``: instead, per pair of neighbours (positions t and t + 1, t from
        0 to the sequence's length - 2), the probability of every pair of labels
        ({(label_from, label_to): p}). ``constraints`` and ``forced`` as ``predict``
        takes them: the marginals are then those of the constrained distribution."""
        model = self.model_
        if not pairwise and constraints is None and forced is None:
            seq, keep, n = self._encode_x(X)
            out: list[list[dict]] = [[] for _ in range(n)]
            A, K = len(model.attributes), len(model.labels)
            for j, i in enumerate(keep):
                _, unary, _ = sequence_marginals(model.weights, A, K, seq, j)
                out[i] = [dict(zip(model.labels, row.tolist(), strict=True)) for row in unary]
            return out
        X = _as_list(X, "X")
        plan = self._decoding(X, constraints, forced)
        seq, keep, n = self._encode_x(X)
        out = [[] for _ in range(n)]
        A, K = len(model.attributes), len(model.labels)
        if plan is None:
            def marginals(j):
                return sequence_marginals(model.weights, A, K, seq, j)
        else:
            marginals = MarginalPass(model.weights, A, K, seq, plan[0], plan[1], keep)
        pairs = list(itertools.product(model.labels, repeat=2))
        for j, i in enumerate(keep):
            _, unary, pair = marginals(j)
            if pairwise:
                out[i] = [dict(zip(pairs, table.ravel().tolist(), strict=True))
                          for table in pair]
            else:
                out[i] = [dict(zip(model.labels, row.tolist(), strict=True))
                          for row in unary]
        return out

    def predict_marginals_single(self, xseq, pairwise=False, constraints=None, forced=None
                                 ) -> list[dict]:
        """``predict_marginals`` of one sequence (``forced``: None or {position:
        label})."""
        return self.predict_marginals([xseq], pairwise, constraints,
                                      None if forced is None else [forced])[0]

    def score(self, X, y) -> float:
        """Token accuracy of the predictions (sklearn-crfsuite's ``score``)."""
        y_pred = self.predict(X)
        y = _as_list(y, "y")
        if len(y) != len(y_pred):
            raise ValueError(f"X has {len(y_pred)} sequences but y has {len(y)}")
        total = correct = 0
        for gold, pred in zip(y, y_pred, strict=True):
            if len(gold) != len(pred):
                raise ValueError("a sequence of y and its sequence of X differ in length")
            total += len(gold)
            correct += sum(a == b for a, b in zip(gold, pred, strict=True))
        return correct / total if total else math.nan

    # ---------------------------------------------------------------------- attributes
    @property
    def classes_(self) -> list[str]:
        """The labels, in order of first occurrence in the training data."""
        return list(self.model_.labels)

    @property
    def attributes_(self) -> list[str]:
        """The attributes with at least one nonzero state weight (CRFsuite's list)."""
        model = self.model_
        active = np.flatnonzero(np.any(model.layout.emission(model.weights) != 0, axis=1))
        return [model.attributes[a] for a in active]

    @property
    def num_attributes_(self) -> int:
        return len(self.attributes_)

    @property
    def state_features_(self) -> dict[tuple[str, str], float]:
        """{(attribute, label): weight} of the nonzero state weights."""
        model = self.model_
        E = model.layout.emission(model.weights)
        a, k = np.nonzero(E)
        return {(model.attributes[i], model.labels[j]): float(E[i, j])
                for i, j in zip(a.tolist(), k.tolist(), strict=True)}

    @property
    def transition_features_(self) -> dict[tuple[str, str], float]:
        """{(label_from, label_to): weight} of the nonzero transition weights."""
        model = self.model_
        W = model.layout.transition(model.weights)
        a, b = np.nonzero(W)
        return {(model.labels[i], model.labels[j]): float(W[i, j])
                for i, j in zip(a.tolist(), b.tolist(), strict=True)}

    @property
    def transition_attributes_(self) -> dict[tuple[str, str, str], float]:
        """{(transition attribute, label_from, label_to): weight} of the nonzero weights
        of W_B (empty without ``transition_prefix``)."""
        model = self.model_
        WB = model.layout.edges(model.weights)
        e, a, b = np.nonzero(WB)
        names, labels = model.transition_attributes, model.labels
        return {(names[i], labels[j], labels[k]): float(WB[i, j, k])
                for i, j, k in zip(e.tolist(), a.tolist(), b.tolist(), strict=True)}

    @property
    def size_(self) -> int:
        """Bytes of the model's content: nonzero weights (12 bytes each) and vocabularies."""
        model = self.model_
        strings = sum(len(s.encode("utf-8")) + 1 for s in model.labels + model.attributes
                      + model.transition_attributes)
        return int(12 * np.count_nonzero(model.weights) + strings)


CRFSUITE_DEFAULTS = {"c1": 0.0, "c2": 1.0, "min_freq": 0.0}
"""What CRFsuite trains with where c1, c2 or min_freq is None (sklearn-crfsuite's
defaults: the parameter is not set)."""


def _is_number(value) -> bool:
    """A real number, not a bool (nor a str: ``float('1')`` would take it)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def without_empty(X: list, y: list, *per_sequence, what: str = "training"):
    """(the kept sequences' positions, ``X``, ``y``, each of ``per_sequence``) but the
    sequences without items and their entries in ``per_sequence`` (sample weights,
    groups: one entry per sequence, a number or None): CRFsuite leaves them out, as
    sklearn-crfsuite's fit does (``nonempty_pairs``). The positions are None where none
    is left out (``data.stream.renumbered`` takes them); ValueError when none is kept
    (``what``: "training" or "dev")."""
    skipped: list[int] = []
    kept = list(nonempty_pairs(zip(X, y, strict=True), skipped))
    X = [x for _, x, _ in kept]  # a sequence given as an iterator was read into a list
    y = [t for _, _, t in kept]
    if not skipped:
        return (None, X, y, *per_sequence)
    if not kept:
        raise ValueError(f"no {what} sequences: every sequence is empty")
    return ([i for i, _, _ in kept], X, y,
            *(_without(values, skipped) for values in per_sequence))


def _without(values, skipped: list[int]):
    """``values`` (one per sequence: sample weights, groups; or one number for all, or
    None) without the entries of the sequences at ``skipped``."""
    if not skipped or values is None or _is_number(values):
        return values
    gone = set(skipped)
    kept = [v for i, v in enumerate(values) if i not in gone]
    return np.asarray(kept) if isinstance(values, np.ndarray) else kept


def training_data(X, y, sample_weight, groups=None) -> tuple:
    """(the kept sequences' positions, ``X``, ``y``, ``sample_weight``, ``groups``) as
    ``CRF.fit`` and ``CRFCV.fit`` train on them: lists, checked (as many label sequences,
    weights and groups as sequences, at least one), without the empty sequences
    (``without_empty``)."""
    X, y = _as_list(X, "X"), _as_list(y, "y")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} sequences but y has {len(y)}")
    if not X:
        raise ValueError("no training sequences")
    sample_weight = check_sample_weight(sample_weight, len(X))
    if groups is not None and len(groups) != len(X):
        raise ValueError(f"groups has {len(groups)} entries but X has {len(X)} sequences")
    return without_empty(X, y, sample_weight, groups)


def _as_list(X, name: str) -> list:
    if X is None:
        raise ValueError(f"{name} is None")
    if isinstance(X, (str, bytes, dict)):
        raise ValueError(f"{name} must be a list of sequences, got {type(X).__name__}")
    return list(X)


def _stopwatch():
    """A function that returns the seconds since its previous call (or its creation)."""
    last = time.perf_counter()

    def lap() -> float:
        nonlocal last
        now = time.perf_counter()
        elapsed, last = now - last, now
        return elapsed

    return lap


def _continuing_from(kind: str) -> str:
    return " or ".join(repr(n) for n in algorithms() if SOLVERS[n].continues_from == kind)


install_eli5_explainer(CRF)
