"""The fuzzer of the file readers (tests/fuzz), a short budget of it: the cases it found,
replayed; hypothesis's byte-level edits of the seeds; a few thousand inputs through the
supervisor, as ``make fuzz`` runs a million. Each input is answered right (loaded with every
index in range, or refused in one line naming the file) or it is a finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz.engine import supervise
from fuzz.seeds import make_seeds
from fuzz.targets import TARGETS, Context, Finding, run_one
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crfsdca.runtime import isolated

REGRESSIONS = Path(__file__).resolve().parents[1] / "fuzz" / "regressions"
CASES = sorted(p for p in REGRESSIONS.glob("*/*") if p.parent.name in TARGETS)
BUDGET = 1600
"""Inputs of the short run: about 20 s on one worker of an idle 2-core machine."""


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    return Context(make_seeds(tmp_path_factory.mktemp("seeds")))


@pytest.fixture
def quick_child(monkeypatch):
    """A child process of runtime.isolated that gives up after 2 s (its hangs)."""
    monkeypatch.setattr(isolated, "SECONDS", 2.0)


def test_every_kept_case_names_a_target():
    assert CASES and {p.name for p in REGRESSIONS.iterdir() if p.is_dir()} <= set(TARGETS)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_cases(case, context, tmp_path, quick_child):
    answer = run_one(TARGETS[case.parent.name], case.read_bytes(), tmp_path / "input", context)
    assert answer, case


EDITS = st.lists(st.tuples(st.integers(0, 2**16), st.binary(min_size=1, max_size=8)),
                 min_size=1, max_size=6)
"""Bytes written over an input at some offsets (taken modulo its length)."""
FAST = sorted(name for name, t in TARGETS.items() if t.every == 1)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FAST), which=st.integers(0, 7), edits=EDITS,
       cut=st.none() | st.integers(0, 2**16))
def test_byte_edits_of_the_seeds(context, tmp_path, name, which, edits, cut):
    """hypothesis's bytes over a seed of each reader that runs in this process, the input
    cut short or not: the right answer, or a Finding that hypothesis shrinks."""
    target = TARGETS[name]
    seeds = context.seeds[target.seeds]
    data = bytearray(seeds[which % len(seeds)].read_bytes())
    for at, piece in edits:
        at %= len(data)
        data[at:at + len(piece)] = piece
    if cut is not None:
        del data[cut % (len(data) + 1):]
    try:
        run_one(target, bytes(data), tmp_path / "input", context)
    except Finding as f:
        pytest.fail(str(f))


def test_a_short_run(tmp_path):
    """The supervisor's workers over every reader, the header-less files' child processes
    included; the same inputs on every run (seed 0)."""
    summary = supervise(list(TARGETS), BUDGET, jobs=1, out=tmp_path, seed=0,
                        say=lambda line: None)
    assert summary["inputs"] == BUDGET
    assert not summary["findings"], summary["findings"]
