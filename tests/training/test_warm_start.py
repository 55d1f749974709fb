"""Continued training: SDCA's dual state kept across fits (warm_start, partial_fit, the
dual state file) reaches the optimum of one long run, certified by the duality gap."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.corpora import small_corpus

from crfsdca import CRF
from crfsdca.errors import ConfigError
from crfsdca.model_file import dual_path, load_dual

# Weights are compared to 1e-4: at a relative gap of 1e-10, ||w - w*||^2 <= 2 gap / lambda
# allows about 4e-5 here.


def test_continuing_reaches_the_optimum_of_one_long_run():
    X, y = small_corpus()
    long = CRF(epsilon=1e-10, max_iterations=400).fit(X, y)
    assert long.model_.training["status"] == "converged"
    short = CRF(epsilon=0, max_iterations=2, warm_start=True).fit(X, y)
    gap_after_short = short.training_log_.last_iteration["relative_gap"]
    short.set_params(epsilon=1e-10, max_iterations=400)
    short.fit(X, y)  # every sequence starts from its kept dual block
    first = short.training_log_.iterations[0]
    assert first["relative_gap"] == pytest.approx(gap_after_short, rel=1e-6)
    assert short.model_.training["status"] == "converged"
    np.testing.assert_allclose(short.model_.weights, long.model_.weights, atol=1e-4)
    assert short.training_log_.last_iteration["loss"] == pytest.approx(
        long.training_log_.last_iteration["loss"], rel=1e-9)


def test_partial_fit_adds_sequences_and_certifies_the_union():
    X, y = small_corpus(16, seed=1)
    whole = CRF(epsilon=1e-10, max_iterations=400).fit(X, y)
    part = CRF(epsilon=1e-10, max_iterations=400).partial_fit(X[:10], y[:10])
    part.partial_fit(X[10:], y[10:])  # the first 10 keep their blocks, 6 new ones start
    assert part.model_.training["n"] == 16
    np.testing.assert_allclose(part.model_.weights, whole.model_.weights, atol=1e-4)


def test_dual_state_file_and_continue_from(tmp_path):
    X, y = small_corpus()
    path = tmp_path / "m.model"
    crf = CRF(epsilon=0, max_iterations=3, model_filename=str(path), save_dual=True,
              verbose=True).fit(X, y)
    state = load_dual(dual_path(path), crf.model_)
    assert state["mu_unary"].shape == crf._dual["mu_unary"].shape
    again = CRF(epsilon=1e-10, max_iterations=400).continue_from(path)
    again.fit(X, y)
    first = again.training_log_.iterations[0]
    assert first["loss"] == pytest.approx(crf.training_log_.last_iteration["loss"], rel=1e-9)
    long = CRF(epsilon=1e-10, max_iterations=400).fit(X, y)
    np.testing.assert_allclose(again.model_.weights, long.model_.weights, atol=1e-4)


def test_continue_needs_a_dual_state(tmp_path):
    X, y = small_corpus()
    path = tmp_path / "m.model"
    CRF(max_iterations=2, model_filename=str(path)).fit(X, y)
    with pytest.raises(ConfigError, match="no dual state"):
        CRF().continue_from(path)
    lbfgs = CRF(algorithm="lbfgs", epsilon=1e-9).continue_from(path, algorithm="lbfgs")
    lbfgs.fit(X, y)  # L-BFGS continues from the weights
    assert lbfgs.model_.training["status"] == "converged"
