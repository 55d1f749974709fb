"""The train command end to end on a small dataset file, and its errors."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from crfsdca.cli import main
from crfsdca.data.hdf5 import Dataset, write_dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences


@pytest.fixture
def dataset_file(tmp_path):
    K, A = 3, 15
    train = synthetic_sequences(30, 1, 6, K, A, 3, seed=1)
    test = synthetic_sequences(10, 1, 6, K, A, 3, seed=2)
    ds = Dataset(name="tiny", train=train, test=test, labels=["B-X", "I-X", "O"],
                 attributes=[f"a{j}" for j in range(A)],
                 radii=squared_radii(train, K, A))
    return write_dataset(tmp_path / "tiny.h5", ds)


@pytest.mark.parametrize("solver_args", [
    ["--solver", "sdca", "--sampler", "gap"],
    ["--solver", "sdca", "--sampler", "perm", "--line-search", "golden"],
])
def test_train_writes_a_complete_run(dataset_file, tmp_path, solver_args, capsys):
    out = tmp_path / "run"
    code = main(["train", "--data", str(dataset_file), "--out", str(out), "--epochs", "3",
                 "--seed", "4", "--progress", "off", *solver_args])
    assert code == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "budget" and meta["dataset"]["name"] == "tiny"
    assert meta["machine"]["cores"] >= 1 and len(meta["dataset"]["sha256"]) == 64
    lines = (out / "trace.csv").read_text().splitlines()
    assert len(lines) == 1 + 7  # header, then epochs 0, 0.1, 0.25, 0.5, 1, 2, 3
    final = meta["final"]
    assert final["epoch"] == 3.0 and np.isfinite(final["test_error"])
    assert 0 <= final["test_f1"] <= 100  # B-X/I-X/O labels have a chunk reading


def test_train_is_reproducible_from_its_seed(dataset_file, tmp_path):
    traces = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        main(["train", "--data", str(dataset_file), "--out", str(out), "--epochs", "2",
              "--seed", "9", "--progress", "off"])
        rows = [r.split(",") for r in (out / "trace.csv").read_text().splitlines()]
        col = rows[0].index("seconds")
        traces.append([[v for j, v in enumerate(r) if j != col and not rows[0][j]
                        .startswith("share_") and rows[0][j] != "ls_time_share"]
                       for r in rows])
    assert traces[0] == traces[1]


@pytest.mark.parametrize("args, message", [
    (["--data", "missing.h5"], "missing.h5: no such file"),
    (["--epochs", "0"], "argument --epochs: expected a value in (0, inf), got '0'"),
    (["--epochs", "inf"], "argument --epochs: expected a finite value in (0, inf)"),
    (["--epochs", "nan"], "argument --epochs: expected a number, got nan"),
    (["--period", "0"], "argument --period: expected a value in (0, inf)"),
    (["--period", "-1"], "argument --period: expected a value in (0, inf)"),
    (["--epochs", "1e9", "--period", "1"], "would record 1e+09 trace rows, more than 100,000"),
    (["--seconds", "-1"], "argument --seconds: expected a value in (0, inf)"),
    (["--gap-tol", "-1"], "argument --gap-tol: expected a value in (0, inf)"),
    (["--refresh-every", "-1"], "argument --refresh-every: expected a value in [0, inf)"),
    (["--lambda", "nan"], "argument --lambda: expected a number, got nan"),
    (["--lambda", "-1"], "argument --lambda: expected a value in (0, inf)"),
    (["--lambda", "0"], "argument --lambda: expected a value in (0, inf)"),
    (["--non-uniformity", "2"], "argument --non-uniformity: expected a value in [0, 1]"),
    (["--subset", "0"], "argument --subset: expected a value in [1, inf)"),
    (["--seed", "-3"], "argument --seed: expected a value in [0, inf)"),
    (["--sag-decrease", "0.5"], "--sag-decrease is an option of sag, not of --solver sdca"),
    (["--solver", "lbfgs", "--epochs", "2.5"],
     "--epochs counts lbfgs's iterations: a whole number, got 2.5"),
])
def test_train_reports_bad_input_in_one_line(dataset_file, tmp_path, args, message, capsys):
    """Each bad argument: exit 2, one line naming the option and what was expected, and
    nothing written (checked before the dataset is read)."""
    base = ["train", "--data", str(dataset_file), "--out", str(tmp_path / "r"),
            "--progress", "off"]
    code = main(base + args)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("crfsdca train: error:") and message in err, err
    assert not (tmp_path / "r").exists()


def test_train_checks_its_output_before_training(dataset_file, tmp_path, capsys):
    """--out that cannot be created fails at once, not after the training (run lost)."""
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    for out, message in ((a_file, "is a file; expected a directory"),
                         (a_file / "run", f"{a_file} is a file, not a directory")):
        assert main(["train", "--data", str(dataset_file), "--out", str(out),
                     "--progress", "off"]) == 2
        err = capsys.readouterr().err
        assert message in err and "sdca on tiny" not in err, err  # before the solver


@pytest.mark.parametrize("command, kind", [("optimum", "dir"), ("crfsuite", "file")])
def test_optimum_and_crfsuite_check_their_output_first(dataset_file, tmp_path, capsys,
                                                         command, kind):
    taken = tmp_path / "taken"
    if kind == "dir":
        taken.mkdir()
        message = "is a directory; expected a file"
    else:
        taken.write_text("x")
        message = "is a file; expected a directory"
    assert main([command, "--data", str(dataset_file), "--out", str(taken)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.parametrize("lam", [-1.0, float("nan"), float("inf")])
def test_a_problem_refuses_a_bad_lambda(dataset_file, lam):
    from crfsdca.data.hdf5 import load_dataset
    from crfsdca.errors import ConfigError
    from crfsdca.solvers.base import Problem

    ds = load_dataset(dataset_file)
    with pytest.raises(ConfigError, match="lambda: expected"):
        Problem.from_dataset(ds, lam=lam)
    with pytest.raises(ConfigError, match="lambda: expected"):
        Problem(ds.train, ds.n_attributes, ds.n_labels, lam)


def test_lambda_zero_is_for_the_solvers_that_need_no_l2_term(dataset_file):
    """lambda = 0 (CRFsuite's c2 = 0) is a problem L-BFGS solves (OWL-QN with an L1 term);
    the dual methods, which need a strongly convex objective, refuse it by name."""
    from crfsdca.data.hdf5 import load_dataset
    from crfsdca.errors import ConfigError
    from crfsdca.solvers.base import Problem
    from crfsdca.solvers.registry import SOLVERS, make_solver

    ds = load_dataset(dataset_file)
    p = Problem.from_dataset(ds, lam=0.0)
    for name, s in SOLVERS.items():
        if s.needs_l2:
            with pytest.raises(ConfigError, match=f"{name} needs an L2 term"):
                make_solver(name, p)
    lbfgs = make_solver("lbfgs", Problem.from_dataset(ds, lam=0.0, l1=0.01))
    lbfgs.run(3)
    assert lbfgs.counters()["updates"] == 3


def test_train_refuses_a_read_only_directory(dataset_file, unwritable_dir, capsys):
    out = unwritable_dir / "run"
    assert main(["train", "--data", str(dataset_file), "--out", str(out)]) == 2
    assert "cannot write in" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("args", [
    ["--lambda", "1e-300"],
    ["--solver", "sag", "--sag-lipschitz-init", "1e-300"],
])
def test_a_diverging_run_stops_and_is_not_a_result(dataset_file, tmp_path, args):
    """NaN or inf in the primal or dual: status diverged, exit 3, at the first checkpoint
    that shows it; the report refuses the run."""
    from crfsdca.errors import DataFormatError
    from crfsdca.reproduction.report.load import load_runs

    out = tmp_path / "runs" / "r"
    code = main(["train", "--data", str(dataset_file), "--out", str(out), "--epochs", "20",
                 "--progress", "off", *args])
    assert code == 3
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "diverged" and meta["final"]["epoch"] < 1
    with pytest.raises(DataFormatError, match="status 'diverged' is not a finished run"):
        load_runs([tmp_path / "runs"])


def test_sigterm_keeps_the_run_as_terminated(dataset_file, tmp_path):
    """kill (SIGTERM) mid-training saves trace, weights and meta.json (terminated), exit
    143, as Ctrl-C does (interrupted, 130)."""
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "crfsdca", "train", "--data", str(dataset_file), "--out",
         str(out), "--epochs", "100000", "--period", "1000", "--progress", "on"],
        stderr=subprocess.PIPE, text=True)
    seen = ""
    while "epoch" not in seen:  # the first row is recorded: training has started
        seen += proc.stderr.read(1)
        assert seen or proc.poll() is None, seen
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 143, err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "terminated" and meta["final"]["epoch"] > 0
    assert len((out / "trace.csv").read_text().splitlines()) >= 3
    assert (out / "weights.h5").stat().st_size > 0
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "trace.csv", "weights.h5"]


def test_a_subset_problem_keeps_the_first_sequences_and_their_radii(dataset_file):
    from crfsdca.data.hdf5 import load_dataset
    from crfsdca.solvers.base import Problem

    ds = load_dataset(dataset_file)
    p = Problem.from_dataset(ds, subset=12)
    assert p.n == 12 and p.lam == 1.0 / 12
    np.testing.assert_array_equal(p.train.offsets, ds.train.offsets[:13])
    np.testing.assert_array_equal(p.radii, ds.radii[:12])
    assert p.test is ds.test and p.label_names == tuple(ds.labels)
    assert Problem.from_dataset(ds, lam=0.5, subset=12).lam == 0.5
    assert Problem.from_dataset(ds, subset=1000).n == ds.train.n_sequences
