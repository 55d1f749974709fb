"""The workflow's code inputs: the static import closure covers what each job really imports."""

import json
import subprocess
import sys

import pytest
from helpers.paths import ROOT

from crfsdca.reproduction.sources import closure, closure_files, direct_imports, module_path
from crfsdca.solvers.registry import SOLVER_NAMES, spec

# A train job, without the other commands' argument parsers: build a tiny dataset, run the
# train command's own run() with one solver, then list every crfsdca module loaded.
_TRAIN_JOB = """
import argparse, json, sys, tempfile
from pathlib import Path
from crfsdca.data.hdf5 import Dataset, write_dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
tmp = Path(tempfile.mkdtemp())
train = synthetic_sequences(12, 1, 5, 3, 9, 3, seed=1)
ds = Dataset(name="tiny", train=train, test=train, labels=["B-X", "I-X", "O"],
             attributes=[f"a{j}" for j in range(9)], radii=squared_radii(train, 3, 9))
write_dataset(tmp / "tiny.h5", ds)
before = set(sys.modules)
from crfsdca.cli import train
p = argparse.ArgumentParser()
train.add_arguments(p)
args = p.parse_args(["--data", str(tmp / "tiny.h5"), "--out", str(tmp / "run"),
                     "--solver", sys.argv[1], "--epochs", "1", "--progress", "off"])
assert train.run(args) == 0
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("crfsdca"))))
"""


@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_a_train_job_imports_nothing_outside_its_code_inputs(solver):
    run = subprocess.run([sys.executable, "-c", _TRAIN_JOB, solver], capture_output=True,
                         text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout.splitlines()[-1]))
    inputs = set(closure(["crfsdca.__main__", "crfsdca.cli.train", spec(solver).module]))
    assert spec(solver).module in loaded
    assert loaded <= inputs, sorted(loaded - inputs)


def test_a_solver_s_own_modules_are_not_inputs_of_the_other_solvers():
    own = {name: set(closure([spec(name).module])) for name in SOLVER_NAMES}
    assert "crfsdca.solvers.oeg_kernel" in own["oeg"]
    assert "crfsdca.solvers.sdca_kernel" in own["sdca"]
    assert all("crfsdca.solvers.oeg_kernel" not in mods
               for name, mods in own.items() if name != "oeg")
    # the shared pieces are inputs of every solver that uses them
    for name in ("sdca", "sag", "oeg"):
        assert "crfsdca.solvers.index" in own[name]
        assert "crfsdca.runtime.jit" in own[name]


def test_closure_follows_relative_function_level_and_package_imports(tmp_path):
    # cli.optimum imports crfsdca.reproduction.optimum inside a function; optimum imports
    # .solvers.base
    mods = closure(["crfsdca.cli.optimum"])
    for m in ("crfsdca.reproduction.optimum", "crfsdca.solvers.base", "crfsdca.solvers",
              "crfsdca.cli", "crfsdca"):
        assert m in mods
    # `from . import log` in a command module is the cli package itself
    assert "crfsdca.cli" in direct_imports("crfsdca.cli.download")
    assert module_path("crfsdca.no_such_module") is None
    files = closure_files(["crfsdca.solvers.rng"], source=ROOT)
    assert "src/crfsdca/solvers/rng.py" in files and "src/crfsdca/runtime/jit.py" in files
