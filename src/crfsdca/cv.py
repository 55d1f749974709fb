"""``crfsdca.CRFCV``: c1 and c2 chosen by cross-validation in one call, as scikit-learn's
``LogisticRegressionCV`` chooses C: a regularization path per fold, with warm starts.

What a grid search of cold fits repeats, it does once: the items are encoded once for
every fold and candidate (each fold a view of rows, ``crfsdca.training.folds``); each
fold's grid is one path, every point started from its neighbour's solution and stopped on
its own certificate at ``path_epsilon`` (``crfsdca.training.path``); paths run in
parallel through joblib (``joblib.parallel_backend("dask")`` spreads them over a Dask
cluster). Coarse to fine: the ``refine`` best candidates at that loose tolerance are
fitted again on every fold to ``refine_epsilon`` (a path through them alone) and the
choice is made among them, on those scores. The chosen point is then refitted on all the
data at ``epsilon``, the estimator's tolerance, as ``GridSearchCV``'s refit does.

For users who keep ``GridSearchCV``,
[shared_encoding][crfsdca.data.shared_encoding.shared_encoding] lets the clones of one
search in one process share their encodings.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from collections.abc import Iterable, Mapping

import joblib
import numpy as np
from scipy.stats import rankdata
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.metaestimators import available_if

from .corpus import Corpus
from .data.items import Vocabulary, encode
from .data.sequences import with_weights
from .data.shared_encoding import shared_encoding
from .data.stream import labeled_pairs, renumbered
from .errors import ConfigError
from .estimator import CRF, training_data
from .model.objective import predict as viterbi_labels
from .model_file import Model
from .runtime import memory
from .runtime.threads import default_threads
from .solvers.registry import SOLVERS
from .training.folds import make_fold
from .training.learn import check_values, feature_mass, scale_problem
from .training.path import PathRun, fit_path, path_order, point_costs, split_path
from .training.weighting import check_sample_weight

__all__ = ["CRFCV", "DEFAULT_C1S", "DEFAULT_C2S", "PATH_EPSILON", "REFINE", "REFINE_EPSILON",
           "shared_encoding", "tutorial_range"]


def tutorial_range(scale: float, share: float = 0.9) -> tuple[float, float]:
    """The interval where ``scipy.stats.expon(scale=scale)`` puts the middle ``share`` of
    its draws: sklearn-crfsuite's tutorial samples c1 from expon(scale=0.5) and c2 from
    expon(scale=0.05)."""
    tail = (1.0 - share) / 2.0
    return -scale * math.log1p(-tail), -scale * math.log(tail)


DEFAULT_C2S = tuple(np.geomspace(*tutorial_range(0.05), 7).tolist())
"""7 values of c2, log-spaced over the tutorial's range (0.0026 to 0.15)."""
DEFAULT_C1S = (0.0, *np.geomspace(*tutorial_range(0.5), 7).tolist())
"""0 (no L1 term) and 7 values of c1, log-spaced over the tutorial's range (0.026 to
1.5)."""

PATH_EPSILON = 0.3
"""The certified relative gap at which the points of a path stop (the refit stops at the
estimator's ``epsilon``): it only has to rank the grid, since the ``refine`` best are
fitted again to ``refine_epsilon`` before the choice (``docs/guide/tuning.md``: on
CoNLL-2002 Spanish, 2.9x fewer epochs than every point to 3e-2, the best CV score 0.0014
lower)."""
REFINE = 3
"""How many of the best candidates at ``path_epsilon`` are fitted again to
``refine_epsilon`` before the choice."""
REFINE_EPSILON = 3e-2
"""The certified relative gap of the refined candidates' fits."""

_NOT_FORWARDED = ("c1", "c2")
"""CRF parameters that CRFCV does not take: the grid sets them."""
CRF_PARAMETERS = {name: p for name, p in inspect.signature(CRF).parameters.items()
                  if name not in _NOT_FORWARDED}
"""CRF's parameters that CRFCV takes and forwards to every fit."""


class CRFCV(BaseEstimator):
    """A CRF whose c1 and c2 are chosen by cross-validation over a grid, each fold's grid
    fitted as one warm-started path (in the mould of scikit-learn's
    ``LogisticRegressionCV``).

    Parameters
    ----------
    c1s, c2s : sequence of float or None, default None
        The grid: every pair (c1, c2) is a candidate. None:
        [DEFAULT_C1S][crfsdca.cv.DEFAULT_C1S] (0 and 7 values log-spaced from 0.026 to 1.5)
        and [DEFAULT_C2S][crfsdca.cv.DEFAULT_C2S] (7 values log-spaced from 0.0026 to
        0.15), the ranges where sklearn-crfsuite's tutorial draws 90% of its candidates.
        Values are finite, >= 0 (c2 > 0 for the solvers that need an L2 term) and
        distinct.
    cv : int, cross-validation generator or iterable, default 5
        As ``GridSearchCV`` takes it: a number of folds (``KFold``), a splitter (given
        ``groups`` when it takes them), or an iterable of (train, test) index arrays.
    scoring : str, callable or None, default None
        A scikit-learn scorer (``crfsdca.scorers``, ``make_scorer`` of a
        ``crfsdca.metrics`` function); None: the CRF's ``score``, token accuracy, as
        ``GridSearchCV(CRF())`` has it. sklearn-crfsuite's tutorial scores by
        ``make_scorer(metrics.flat_f1_score, average="weighted", labels=labels)`` with
        the labels but 'O'.
    refit : bool, default True
        Fit a CRF at the chosen (c1, c2) on all of ``X`` (``best_estimator_``), to the
        estimator's ``epsilon``. With ``n_jobs`` > 1 and candidates to refine, the
        candidate ranked first at ``path_epsilon`` is refitted in a worker beside the
        refined fits (which leave a worker idle while the longest ends) and kept if the
        refined scores choose it; otherwise the chosen one is refitted after them.
    n_jobs : int or None, default None
        Paths fitted at once, through joblib (None: 1 unless in a joblib context). Each
        fit then runs on at most ``cores // n_jobs`` threads (the CRF's ``threads``, or
        that share when None), so that the search never oversubscribes the cores.
    path_epsilon : float or None, default None
        The certified relative gap at which each point of a path stops (None:
        [PATH_EPSILON][crfsdca.cv.PATH_EPSILON]) for the solvers stopped by their
        certificate (``sdca``, ``oeg``, ``sag-nus``...); the others stop by their own
        test as a cold fit does.
    refine : int or None, default None
        Coarse to fine: the number of candidates, best by mean test score at
        ``path_epsilon``, fitted again on every fold to ``refine_epsilon`` (one path
        through them) before the choice, which is made among them on those scores (None:
        [REFINE][crfsdca.cv.REFINE]; 0: choose on the ``path_epsilon`` scores). Nothing is
        refined where ``refine_epsilon`` is not below ``path_epsilon`` or the solver stops
        by its own test.
    refine_epsilon : float or None, default None
        The certified relative gap of the refined fits (None:
        [REFINE_EPSILON][crfsdca.cv.REFINE_EPSILON]).
    **crf_params
        Every other parameter of [crfsdca.CRF][crfsdca.estimator.CRF] (``algorithm``,
        ``epsilon``, ``all_possible_transitions``, ``max_iterations``, ``random_state``...),
        for every fit; ``model_filename`` and ``save_dual`` for the refit. The paths' fits
        run sequential SDCA (``pipeline=False``) unless ``pipeline`` is given: the paths
        share the cores, a thread or few each, where the pipelined steps gain nothing;
        and with kappa fixed (``catalyst_tune=False``) unless ``catalyst_tune`` is given:
        their warm-started points run a few rounds each. The refit takes the estimator's
        defaults.

    Attributes
    ----------
    c1_, c2_ : float
        The chosen point: the best mean test score over the folds (the first in
        ``cv_results_`` order among ties, as ``GridSearchCV``).
    best_params_ : dict
        ``{"c1": c1_, "c2": c2_}``.
    best_index_ : int
        Its row in ``cv_results_``.
    best_score_ : float
        Its mean test score.
    best_estimator_ : crfsdca.CRF
        The refit (with ``refit=True``).
    cv_results_ : dict of arrays
        ``GridSearchCV``'s layout, a row per candidate in ``ParameterGrid`` order (c1
        outer, c2 inner, each in the order given): ``params``, ``param_c1``,
        ``param_c2``, ``split{k}_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``std_score_time``; and each fitted point's certificate and run:
        ``split{k}_gap`` (P - D, or the solver's bound on P - P*, in CRFsuite's scale),
        ``split{k}_relative_gap``, ``split{k}_epochs``, ``split{k}_status``, and
        ``refined`` (True for the candidates fitted again to ``refine_epsilon``: their
        scores are those fits', they rank first, and the choice is among them).
    n_splits_ : int
    scorer_ : callable
    refit_time_ : float
        Seconds of the refit (where it ran: beside the refined fits, or after them).

    Examples
    --------
    >>> from crfsdca import CRFCV
    >>> X = [[{"w": w} for w in s.split()] for s in
    ...      ["the cat sat", "a dog ran", "the dog sat", "a cat ran"] * 3]
    >>> y = [["D", "N", "V"]] * 12
    >>> search = CRFCV(c1s=[0.0], c2s=[0.1, 1.0], cv=3).fit(X, y)
    >>> sorted(search.best_params_)
    ['c1', 'c2']
    >>> search.predict([[{"w": "a"}, {"w": "cat"}]])
    [['D', 'N']]
    """

    def __init__(self, c1s=None, c2s=None, cv=5, scoring=None, refit=True, n_jobs=None,
                 path_epsilon=None, refine=None, refine_epsilon=None, **crf_params):
        unknown = sorted(set(crf_params) - set(CRF_PARAMETERS))
        if unknown:
            raise TypeError(f"CRFCV got unexpected parameters {', '.join(unknown)}"
                            + (" (the grid is c1s and c2s)"
                               if set(unknown) & set(_NOT_FORWARDED) else ""))
        self.c1s = c1s
        self.c2s = c2s
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.path_epsilon = path_epsilon
        self.refine = refine
        self.refine_epsilon = refine_epsilon
        for name, p in CRF_PARAMETERS.items():
            setattr(self, name, crf_params.get(name, p.default))

    # CRF's parameters are CRFCV's too: scikit-learn reads them from the signature
    __init__.__signature__ = inspect.Signature([
        *list(inspect.signature(__init__).parameters.values())[:-1],
        *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in CRF_PARAMETERS.values())])

    def _crf_params(self) -> dict:
        return {name: getattr(self, name) for name in CRF_PARAMETERS}

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, groups=None, sample_weight=None):
        """Fit the grid on every fold of ``cv``, choose (c1, c2) by the mean test score,
        refit there on all of ``X`` (``refit``). ``groups``: for a splitter that takes
        them; ``sample_weight``: a weight per sequence, as ``CRF.fit`` takes it (each
        fold's fits get their rows' weights). Sequences without items are left out, with
        their groups and weights, as ``CRF.fit`` leaves them out.

        With ``y`` None, ``X`` yields (xseq, yseq) pairs, as ``CRF.fit`` takes them (held
        in memory: the folds index them), or is a [`Corpus`][crfsdca.corpus.Corpus]: the
        folds are cut from its encoding and the refit trains on it, nothing is encoded again.
        A scorer then sees each test sequence as its index in the corpus (its ``X``) and
        the corpus's labels (its ``y``): the default scorer and any metric of labels
        work, one that reads the items cannot."""
        for name in ("cv_results_", "best_estimator_", "c1_", "c2_", "best_params_",
                     "best_index_", "best_score_", "n_splits_", "scorer_", "refit_time_"):
            self.__dict__.pop(name, None)  # a failed fit leaves nothing of an earlier one
        corpus = X if isinstance(X, Corpus) else None
        kept_at = None  # the positions in X of the sequences kept (None: all)
        if corpus is not None:
            if y is not None:
                raise ValueError("fit(corpus): the labels are the corpus's own; pass y=None")
            X, y = _corpus_lists(corpus)
            sample_weight = check_sample_weight(sample_weight, len(X))
        else:
            if y is None:  # (xseq, yseq) pairs, as CRF.fit takes them: held, for the folds
                pairs = list(labeled_pairs(X, None))
                X, y = [x for x, _ in pairs], [t for _, t in pairs]
            kept_at, X, y, sample_weight, groups = training_data(X, y, sample_weight, groups)
        crf = CRF(**self._crf_params())
        if crf.transition_prefix is not None:
            raise ConfigError("CRFCV does not search models with transition attributes "
                              "(transition_prefix) yet: search with scikit-learn's "
                              "GridSearchCV over CRF")
        algorithm, settings = crf._checked_run()
        # the paths run sequential SDCA: each has its share of the cores, one thread
        # mostly, where the pipeline's rebase costs and its second thread is absent; and
        # kappa fixed: a path's warm-started points run a few rounds each, where the
        # probes of catalyst_tune cost more than they save (CoNLL-2002 Dutch, 7 x 7 grid:
        # 91.7 and 96.9 s against 85.7 and 89.9 s)
        paths = {name: False for name in ("pipeline", "catalyst_tune")
                 if getattr(self, name) is None and name in settings.config.options}
        if paths:
            algorithm, settings = CRF(**{**self._crf_params(), **paths})._checked_run()
        c1s = _grid("c1s", DEFAULT_C1S if self.c1s is None else self.c1s, positive=False)
        c2s = _grid("c2s", DEFAULT_C2S if self.c2s is None else self.c2s,
                    positive=SOLVERS[algorithm].needs_l2)
        if any(c1 > 0 for c1 in c1s) and not SOLVERS[algorithm].supports_l1:
            raise ConfigError(f"c1s holds values > 0 (an L1 term), which {algorithm} does "
                              "not handle: use sdca or lbfgs, or c1s=[0]")
        path_epsilon = _tolerance("path_epsilon", self.path_epsilon, PATH_EPSILON)
        refine_epsilon = _tolerance("refine_epsilon", self.refine_epsilon, REFINE_EPSILON)
        refine = REFINE if self.refine is None else self.refine
        if isinstance(refine, bool) or not isinstance(refine, (int, np.integer)) or refine < 0:
            raise ValueError(f"refine must be an integer >= 0, got {self.refine!r}")
        splits = _splits(self.cv, X, y, groups)
        scorer = _scorer(crf, self.scoring)

        if corpus is not None:  # encoded once already
            attributes, labels = Vocabulary(corpus.attributes), Vocabulary(corpus.labels)
            seq, zero_entries = corpus.sequences, corpus.zero_entries
        else:
            attributes, labels = Vocabulary(), Vocabulary()
            with renumbered(kept_at):  # errors name the sequences by their place in X
                seq, _, zero_entries = encode(X, y, attributes, labels, grow=True)
        seq = with_weights(seq, sample_weight)
        check_values(seq, attributes)
        mass = feature_mass(seq)
        for c2 in c2s:
            if (why := scale_problem(c2, mass, settings.config)) is not None:
                raise ConfigError(f"c2s: {why}")

        workers = joblib.effective_n_jobs(self.n_jobs)
        share = max(1, default_threads() // max(workers, 1))
        threads = share if crf.threads is None else max(1, min(int(crf.threads), share))
        run = PathRun(settings.config, settings.epochs,
                      None if settings.epsilon is None else path_epsilon,
                      crf.max_seconds, crf._seed(), threads,
                      bool(crf.all_possible_states), bool(crf.all_possible_transitions),
                      crf._crfsuite_value("min_freq"), bool(crf.bias), crf.class_weight)
        pieces = 1 if workers <= 1 else -(-2 * workers // len(splits))
        paths = [(k, piece) for k in range(len(splits))
                 for piece in split_path(path_order(c1s, c2s), pieces)]
        paths.sort(key=lambda path: -point_costs(path[1]).sum())  # the longest first
        attribute_names, label_names = attributes.strings(), labels.strings()
        done = joblib.Parallel(n_jobs=self.n_jobs)(
            joblib.delayed(_score_path)(
                seq, zero_entries, attribute_names, label_names, splits[k],
                [X[i] for i in splits[k][1]], [y[i] for i in splits[k][1]], piece, run,
                scorer, self._crf_params(), k)
            for k, piece in paths)

        candidates = [(c1, c2) for c1 in c1s for c2 in c2s]  # ParameterGrid's order
        fitted = {(k, point.c1, point.c2): point
                  for (k, _), points in zip(paths, done, strict=True) for point in points}
        refined: list = []
        guess = early = None  # the candidate refitted beside the refined fits, and its fit
        if refine and run.epsilon is not None and refine_epsilon < run.epsilon:
            loose = _results(candidates, len(splits), fitted)
            refined = [candidates[i] for i in np.argsort(loose["rank_test_score"],
                                                         kind="stable")[:refine]]
            tight = dataclasses.replace(run, epsilon=refine_epsilon)
            tasks = [joblib.delayed(_score_path)(
                seq, zero_entries, attribute_names, label_names, splits[k],
                [X[i] for i in splits[k][1]], [y[i] for i in splits[k][1]],
                [p for p in path_order(c1s, c2s) if p in refined], tight, scorer,
                self._crf_params(), k) for k in range(len(splits))]
            if self.refit and workers > 1:  # first: the longest task
                guess = refined[0]
                tasks.insert(0, joblib.delayed(_refit)(
                    {**self._crf_params(), "c1": guess[0], "c2": guess[1]},
                    *_refit_data(corpus, X, y), sample_weight, run.threads))
            again = joblib.Parallel(n_jobs=self.n_jobs)(tasks)
            if guess is not None:
                early, again = again[0], again[1:]
            for k, points in enumerate(again):
                for point in points:
                    first = fitted[(k, point.c1, point.c2)]
                    fitted[(k, point.c1, point.c2)] = point._replace(
                        fit_seconds=first.fit_seconds + point.fit_seconds,
                        score_seconds=first.score_seconds + point.score_seconds)
        results = _results(candidates, len(splits), fitted, refined)
        best = int(np.argmin(results["rank_test_score"]))
        c1, c2 = candidates[best]
        refitted, refit_time = None, None
        if self.refit and guess == (c1, c2):
            refitted, refit_time = early
        elif self.refit:
            refitted, refit_time = _refit({**self._crf_params(), "c1": c1, "c2": c2},
                                          *_refit_data(corpus, X, y), sample_weight,
                                          crf.threads)
        self.cv_results_ = results
        self.best_index_ = best
        self.c1_, self.c2_ = c1, c2
        self.best_params_ = {"c1": c1, "c2": c2}
        self.best_score_ = float(results["mean_test_score"][best])
        self.n_splits_ = len(splits)
        self.scorer_ = scorer
        if refitted is not None:
            self.best_estimator_ = refitted
            self.refit_time_ = refit_time
        return self

    # ------------------------------------------------------------------ the refit
    def _refitted(self) -> bool:
        """Whether the methods of the refitted CRF exist: not with refit=False (an
        AttributeError, as GridSearchCV's, whose cause says why)."""
        if not self.refit:
            raise AttributeError("this CRFCV was fitted with refit=False: it has no "
                                 "best_estimator_ to predict with")
        return True

    def _best(self):
        """``best_estimator_``, or NotFittedError before ``fit`` (raised in the method
        itself: ``available_if`` would hide its message)."""
        if not hasattr(self, "best_estimator_"):
            raise NotFittedError("this CRFCV is not fitted yet: call fit")
        return self.best_estimator_

    @available_if(_refitted)
    def predict(self, X, **kwargs):
        """``best_estimator_.predict``."""
        return self._best().predict(X, **kwargs)

    @available_if(_refitted)
    def predict_single(self, xseq, **kwargs):
        """``best_estimator_.predict_single``."""
        return self._best().predict_single(xseq, **kwargs)

    @available_if(_refitted)
    def predict_marginals(self, X, **kwargs):
        """``best_estimator_.predict_marginals``."""
        return self._best().predict_marginals(X, **kwargs)

    @available_if(_refitted)
    def predict_marginals_single(self, xseq, **kwargs):
        """``best_estimator_.predict_marginals_single``."""
        return self._best().predict_marginals_single(xseq, **kwargs)

    @available_if(_refitted)
    def score(self, X, y):
        """The score of ``best_estimator_`` on (X, y) by ``scoring`` (the CRF's own
        ``score`` when None), as ``GridSearchCV.score``."""
        best = self._best()  # before scorer_, which only fit sets
        return self.scorer_(best, X, y)

    @property
    def classes_(self) -> list[str]:
        """``best_estimator_.classes_``."""
        self._refitted()
        return self._best().classes_

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "cv_results_")


def _grid(name: str, values, positive: bool) -> list[float]:
    """``values`` as a list of floats, or ValueError naming ``name`` and the first bad
    value: a non-empty sequence of distinct finite numbers >= 0 (> 0 with
    ``positive``)."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a sequence of numbers, got {values!r}")
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold numbers, got {v!r}") from None
        if not math.isfinite(f) or f < 0 or (positive and f == 0):
            raise ValueError(f"{name} holds {v!r}: every value must be a finite number "
                             f"{'> 0' if positive else '>= 0'}")
        if f in out:
            raise ValueError(f"{name} holds {v!r} twice")
        out.append(f)
    if not out:
        raise ValueError(f"{name} is empty: give at least one value")
    return out


def _corpus_lists(corpus: Corpus) -> tuple[list, list]:
    """What a search over ``corpus`` hands its splitter and scorer in place of the items:
    the sequences' indices (a scorer's ``X``) and their labels as lists of strings (its
    ``y``)."""
    seq = corpus.sequences
    names = np.array(corpus.labels, dtype=object)[seq.labels]
    return (list(range(seq.n_sequences)),
            [part.tolist() for part in np.split(names, seq.offsets[1:-1])])


def _refit_data(corpus: Corpus | None, X, y) -> tuple:
    """(X, y) of the refit: the corpus itself (y None) or the items."""
    return (corpus, None) if corpus is not None else (X, y)


def _splits(cv, X, y, groups) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) index arrays of ``cv`` on X, checked: at least one split, each
    with training and test sequences, indices within X."""
    n = len(X)
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool) and cv > n:
        raise ValueError(f"cv={cv} folds need at least {cv} sequences; X has {n}")
    try:
        splitter = check_cv(cv, y, classifier=False)
        splits = [(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
                  for a, b in splitter.split(X, y, groups)]
    except ValueError as e:
        raise ValueError(f"cv={cv!r}: {e}") from None
    if not splits:
        raise ValueError(f"cv={cv!r} gave no split")
    for k, (train, test) in enumerate(splits):
        if not len(train) or not len(test):
            raise ValueError(f"cv={cv!r}: split {k} has {len(train)} training and "
                             f"{len(test)} test sequences; each needs at least one")
        for part in (train, test):
            if part.min() < 0 or part.max() >= n:
                raise ValueError(f"cv={cv!r}: split {k} holds index {int(part.max())}, "
                                 f"beyond the {n} sequences of X")
    return splits


def _scorer(crf: CRF, scoring):
    """The scorer of ``scoring`` for CRFs: one metric (a multi-metric search would need a
    refit rule; ``GridSearchCV`` has it)."""
    if isinstance(scoring, (list, tuple, set, dict)):
        raise ValueError("scoring must name one metric (a string, a scorer or None): "
                         "CRFCV chooses c1 and c2 by one score")
    try:
        return check_scoring(crf, scoring=scoring)
    except (ValueError, TypeError) as e:
        raise ValueError(f"scoring={scoring!r}: {e}") from None


class _FoldPoint(CRF):
    """A point of a path as its scorer sees it: a CRF fitted on the fold (the fold's
    vocabularies, the point's weights) whose ``predict`` of the fold's test sequences,
    given as they are (the same objects), reads their encoding made once for the
    fold instead of encoding them again; any other call is a CRF's."""

    def _serve(self, fold, items, model: Model) -> _FoldPoint:
        self._model = model
        self._fold_test = (fold.test, items)
        return self

    def predict(self, X, constraints=None, forced=None):
        test, items = self._fold_test
        if constraints is not None or forced is not None or len(X) != len(items) \
                or any(a is not b for a, b in zip(X, items, strict=True)):
            return super().predict(X, constraints, forced)
        model = self.model_
        ids = viterbi_labels(model.weights, test, len(model.attributes), len(model.labels))
        names = np.array(model.labels, dtype=object)
        off = test.offsets
        return [list(names[ids[off[j]:off[j + 1]]]) for j in range(test.n_sequences)]


def _score_path(seq, zero_entries, attributes, labels, split, X_test, y_test, points,
                run: PathRun, scorer, crf_params: dict, k: int):
    """One path (a joblib task): the fold of ``split`` from the shared encoding, its
    points fitted in turn, each scored on the fold's test sequences."""
    with memory.budget(memory.parse_size(crf_params.get("max_memory"), "max_memory")):
        return _fold_path(seq, zero_entries, attributes, labels, split, X_test, y_test,
                          points, run, scorer, crf_params, k)


def _fold_path(seq, zero_entries, attributes, labels, split, X_test, y_test, points,
               run: PathRun, scorer, crf_params: dict, k: int):
    fold = make_fold(seq, zero_entries, attributes, labels, split[0], split[1])
    at = _FoldPoint(**crf_params)
    options = {"algorithm": run.config.name}

    def score(c1, c2, weights):
        model = Model(fold.labels, fold.attributes, weights, options)
        try:
            return scorer(at._serve(fold, X_test, model), X_test, y_test)
        except Exception as e:
            raise ValueError(f"scoring raised {type(e).__name__} on split {k} at c1={c1:g}, "
                             f"c2={c2:g}: {e}") from e

    return fit_path(fold, points, run, score)


def _refit(params: dict, X, y, sample_weight, threads: int | None):
    """(``CRF(**params)`` fitted on all of X, its seconds), on at most ``threads`` threads
    (None: the estimator's own); its ``threads`` parameter stays ``params``'. A seed fixes
    the model whatever the threads, so a refit in a worker (a joblib task) is the refit.
    """
    crf = CRF(**params)
    if threads is not None and (crf.threads is None or crf.threads > threads):
        crf.set_params(threads=threads)
    t0 = time.perf_counter()
    crf.fit(X, y, sample_weight=sample_weight)
    seconds = time.perf_counter() - t0
    return crf.set_params(threads=params.get("threads")), seconds


def _tolerance(name: str, value, default: float) -> float:
    """A tolerance parameter: ``default`` for None, else a finite number >= 0."""
    if value is None:
        return default
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and value >= 0
                                       and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _results(candidates, n_splits: int, fitted: dict, refined=()) -> dict:
    """``cv_results_`` in ``GridSearchCV``'s layout from the fitted points (``fitted``:
    {(split, c1, c2): PathPoint}); the ``refined`` candidates rank first."""
    n = len(candidates)
    table = {field: np.array([[getattr(fitted[(k, c1, c2)], field) for k in range(n_splits)]
                              for c1, c2 in candidates], dtype=object)
             for field in ("score", "fit_seconds", "score_seconds", "gap", "relative_gap",
                           "epochs", "status")}
    results: dict = {}
    for key, field in (("fit_time", "fit_seconds"), ("score_time", "score_seconds")):
        values = table[field].astype(np.float64)
        results[f"mean_{key}"] = values.mean(axis=1)
        results[f"std_{key}"] = values.std(axis=1)
    for name, column in (("param_c1", 0), ("param_c2", 1)):
        results[name] = np.ma.MaskedArray([c[column] for c in candidates], mask=[False] * n)
    results["params"] = [{"c1": c1, "c2": c2} for c1, c2 in candidates]
    scores = table["score"].astype(np.float64)
    for k in range(n_splits):
        results[f"split{k}_test_score"] = scores[:, k]
    mean = scores.mean(axis=1)
    results["mean_test_score"] = mean
    results["std_test_score"] = scores.std(axis=1)
    ranked = np.where(np.isnan(mean), -np.inf, mean)
    first = np.array([c in refined for c in candidates], dtype=bool)
    rank = np.zeros(n, dtype=np.int32)
    for group, offset in ((first, 0), (~first, int(first.sum()))):
        if group.any():
            rank[group] = offset + rankdata(-ranked[group], method="min")
    results["rank_test_score"] = rank
    results["refined"] = first
    for field in ("gap", "relative_gap", "epochs"):
        for k in range(n_splits):
            results[f"split{k}_{field}"] = table[field][:, k].astype(np.float64)
    for k in range(n_splits):
        results[f"split{k}_status"] = table["status"][:, k].astype(str)
    return results
