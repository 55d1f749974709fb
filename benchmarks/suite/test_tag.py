"""``crfsdca tag`` against CRFsuite's ``crfsuite tag``: one model, one file, each program
a whole process as a user runs it (labels to /dev/null), alternated.

The model is crfsdca's default fit on the Dutch training items, written as CRFsuite's
binary model; the file is the Dutch test set in CRFsuite's data format. CRFsuite's
program is built from python-crfsuite's sdist (``CRFSUITE_SDIST``, which ``make test``
downloads); without it, or without a C compiler, the benchmark is skipped.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import workload

from crfsdca.model_file import save_model

ROUNDS = 7


def _run(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return done.stdout


def test_tag(benchmark, fitted, dutch, tmp_path):
    program = workload.crfsuite_program(tmp_path / "crfsuite")
    if program is None:
        pytest.skip(f"CRFsuite's program not built: no {workload.CRFSUITE_SDIST} or no C "
                    "compiler")
    model = save_model(tmp_path / "dutch.crfsuite", fitted[0].model_, "crfsuite")
    data = tmp_path / "dutch.test.txt"
    workload.write_crfsuite_data(data, dutch[2], dutch[3])
    theirs = [str(program), "tag", "-m", str(model), str(data)]
    ours = [sys.executable, "-m", "crfsdca", "tag", "-m", str(model), str(data)]
    assert _run(ours) == _run(theirs)  # the same labels: the same work
    workload.alternate(benchmark, lambda: _run(ours), lambda: _run(theirs),
                       "CRFsuite's crfsuite tag", ROUNDS)
    benchmark.extra_info.update(command="crfsdca tag -m MODEL FILE",
                                reference_command="crfsuite tag -m MODEL FILE",
                                sentences=len(dutch[2]))
