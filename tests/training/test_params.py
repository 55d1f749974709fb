"""crfsdca.CRF's scikit-learn protocol (``crfsdca.training.params``) against
``sklearn.base.BaseEstimator`` itself: a twin class with CRF's constructor on
BaseEstimator gives the same parameters, errors, repr and tags; the fit imports no
scikit-learn. (The repr never splits a value, where scikit-learn's printer splits a long
string: the values drawn are short.)"""

import string
import subprocess
import sys

import numpy as np
import pytest
import sklearn.utils
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from crfsdca import CRF

Twin = type("CRF", (BaseEstimator,), {"__init__": CRF.__init__})
"""CRF's constructor on scikit-learn's own base class, under CRF's name."""


NAMES = sorted(Twin._get_param_names())
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 300),
                   st.floats(allow_nan=False, width=32),
                   st.text(string.ascii_letters + "_.-", max_size=12),
                   st.sampled_from(["sdca", "lbfgs", [1, 2], {"a": 0.5}, 1e-300]))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=12))
def test_parameters_and_repr_are_base_estimators(params):
    ours, theirs = CRF(**params), Twin(**params)
    assert CRF._get_param_names() == Twin._get_param_names()
    assert ours.get_params() == theirs.get_params()
    assert repr(ours) == repr(theirs)
    assert clone(ours).get_params() == ours.get_params()
    assert ours.set_params(**params) is ours and ours.get_params() == theirs.get_params()


def test_unknown_parameter_is_refused_as_base_estimator_refuses_it():
    with pytest.raises(ValueError, match="Invalid parameter 'c3' for estimator CRF") as ours:
        CRF().set_params(c3=1)
    with pytest.raises(ValueError) as theirs:
        Twin().set_params(c3=1)
    assert str(ours.value) == str(theirs.value)


def test_tags_and_search_are_scikit_learns():
    if hasattr(sklearn.utils, "get_tags"):  # scikit-learn >= 1.6 asks estimators for tags
        assert sklearn.utils.get_tags(CRF()) == sklearn.utils.get_tags(Twin())
    X = [[{"a": 1.0}, {"b": 1.0}]] * 6 + [[{"b": 1.0}, {"a": 1.0}]] * 6
    y = [["A", "B"]] * 6 + [["B", "A"]] * 6
    search = GridSearchCV(CRF(max_iterations=5), {"c2": [0.1, 1.0]}, cv=2,
                          scoring=lambda est, X, y: float(est.predict(X) == y))
    assert search.fit(X, y).best_estimator_.get_params()["c2"] in (0.1, 1.0)
    assert "text/html" in CRF()._repr_mimebundle_()


def test_a_fit_and_a_prediction_import_no_scikit_learn_and_no_h5py():
    """scikit-learn is about 100 MiB of a process, h5py 11 MiB (and 25-50 ms): a fit on
    lists that writes no file needs neither."""
    code = ("import sys, crfsdca; X = [[{'a': 1.0}, {'b': 1.0}]] * 3; y = [['A', 'B']] * 3;"
            "crfsdca.CRF(max_iterations=3).fit(X, y).predict(X);"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'h5py')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_metadata_routing_passes_sample_weight_as_base_estimator_does():
    """With routing on, ``set_fit_request(sample_weight=True)`` routes the weights through
    a search as it does for a BaseEstimator; without the request the search refuses them."""
    X = [[{"a": 1.0}, {"b": 1.0}]] * 6 + [[{"b": 1.0}, {"a": 1.0}]] * 6
    y = [["A", "B"]] * 6 + [["B", "A"]] * 6
    weights = np.tile([1.0, 1.0, 1.0, 0.5, 0.5, 0.5], 2)

    def scoring(est, X, y):  # a number that moves with the fit's weighting
        return float(np.abs(est.model_.weights).sum())

    with sklearn.config_context(enable_metadata_routing=True):
        crf = CRF(max_iterations=20).set_fit_request(sample_weight=True)
        assert clone(crf).get_metadata_routing().fit.requests == {
            "X_dev": None, "y_dev": None, "sample_weight": True}
        scores = cross_val_score(crf, X, y, cv=KFold(2), scoring=scoring,
                                 params={"sample_weight": weights})
        plain = cross_val_score(CRF(max_iterations=20), X, y, cv=KFold(2), scoring=scoring)
        assert not np.array_equal(scores, plain)  # the weights reached the fits
        with pytest.raises(Exception, match="sample_weight"):
            cross_val_score(CRF(max_iterations=3), X, y, cv=KFold(2), scoring=scoring,
                            params={"sample_weight": weights})
