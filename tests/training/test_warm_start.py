"""Continued training: SDCA's dual state kept across fits (warm_start, partial_fit, the
dual state file) reaches the optimum of one long run, certified by the duality gap."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from helpers.corpora import small_corpus

from crfsdca import CRF
from crfsdca.errors import ConfigError
from crfsdca.formats.hdf5_model import pending_dual_path
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


def test_a_fit_killed_after_a_checkpoint_continues_from_it(tmp_path, monkeypatch):
    """With ``checkpoint_every=0`` every log row writes the model and its dual state; a
    fit stopped dead right after its third model was written (the write raising
    SystemExit, as a kill leaves the files: its dual still under its waiting name) left
    the model of that row, and ``continue_from`` goes on from it, every dual block reused,
    to the optimum of one long run. Without ``model_filename``, or with a bad interval, it
    is refused."""
    import crfsdca.model_file as model_file

    X, y = small_corpus()
    path = tmp_path / "m.model"
    real, writes = model_file.save_model, []

    def dies_after_three(*args, **kwargs):
        real(*args, **kwargs)
        writes.append(args[1].training["status"])
        if len(writes) == 3:
            raise SystemExit("killed")

    monkeypatch.setattr(model_file, "save_model", dies_after_three)
    crf = CRF(epsilon=1e-10, max_iterations=400, model_filename=str(path), save_dual=True,
              checkpoint_every=0)
    with pytest.raises(SystemExit):
        crf.fit(X, y)
    monkeypatch.setattr(model_file, "save_model", real)
    assert writes == ["checkpoint"] * 3
    left = CRF().continue_from(path)
    assert left.model_.training["status"] == "checkpoint"
    assert left.model_.training["last"]["epoch"] == 2  # the rows of epochs 0, 1, 2
    left.set_params(epsilon=1e-10, max_iterations=400).fit(X, y)
    long = CRF(epsilon=1e-10, max_iterations=400).fit(X, y)
    assert left.training_log_.iterations[0]["loss"] < long.training_log_.iterations[0]["loss"]
    np.testing.assert_allclose(left.model_.weights, long.model_.weights, atol=1e-4)
    with pytest.raises(ConfigError, match="give model_filename"):
        CRF(checkpoint_every=10).fit(X, y)
    for bad in (-1, float("inf"), "often", True):
        with pytest.raises(ValueError, match="checkpoint_every must be"):
            CRF(checkpoint_every=bad, model_filename=str(path)).fit(X, y)


class _Cut(BaseException):
    """A kill, at one step of saving a model and its dual state."""


@pytest.mark.parametrize("step", ["dual", "model", "rename"])
def test_a_save_cut_at_any_step_leaves_a_model_and_its_own_dual(tmp_path, monkeypatch, step):
    """A second fit's save of model and dual killed while the dual is written, while the
    model is written, or between the model and the dual's rename: the folder holds the
    first fit's pair, or the second model and its dual (then moved to its name by the
    reader), and ``continue_from`` takes it, never refusing a dual of another model."""
    import crfsdca.model_file as model_file

    X, y = small_corpus()
    path = tmp_path / "m.model"
    first = CRF(max_iterations=3, epsilon=0, model_filename=str(path), save_dual=True).fit(X, y)

    def cut(*args, **kwargs):
        raise _Cut(step)

    if step == "rename":
        monkeypatch.setattr(model_file, "os", SimpleNamespace(replace=cut))
    else:
        monkeypatch.setattr(model_file, f"save_{step}", cut)
    with pytest.raises(_Cut):
        CRF(max_iterations=3, epsilon=0, c2=0.5, model_filename=str(path),
            save_dual=True).fit(X, y)
    monkeypatch.undo()
    left = CRF().continue_from(path)
    second = step == "rename"
    assert (left.model_.checksum == first.model_.checksum) is not second
    assert left.c2 == (0.5 if second else first.c2)
    assert load_dual(dual_path(path), left.model_)["c2"] == left.c2
    assert pending_dual_path(path).exists() is (step == "model")  # a stray, left as found
    saved = left.model_.training["last"]["loss"]
    left.set_params(max_iterations=2).fit(X, y)  # continues, every dual block reused
    assert left.training_log_.iterations[0]["loss"] == pytest.approx(saved, rel=1e-9)


def test_save_dual_refuses_crfsuite_s_model_format_before_training(tmp_path):
    """CRFsuite's format keeps only the attributes that have features, so a dual state
    written beside such a model never matches the model read back (``continue_from``
    refused it after the whole fit): refused before any work, nothing written."""
    X, y = small_corpus()
    path = tmp_path / "m.crfsuite"
    with pytest.raises(ConfigError, match="save_dual needs crfsdca's model format"):
        CRF(model_filename=str(path), save_dual=True, bias=False).fit(X, y)
    assert list(tmp_path.iterdir()) == []
    CRF(model_filename=str(path), model_format="hdf5", save_dual=True, bias=False,
        max_iterations=2).fit(X, y)
    assert CRF().continue_from(path)._dual is not None
