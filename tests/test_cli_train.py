"""The train command end to end on a small dataset file, and its errors."""

import json

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
    (["--data", "missing.h5"], "no such file"),
    (["--epochs", "0"], "--epochs must be positive"),
    (["--non-uniformity", "2"], "non-uniformity"),
    (["--subset", "0"], "subset must be at least 1"),
])
def test_train_reports_bad_input_in_one_line(dataset_file, tmp_path, args, message, capsys):
    base = ["train", "--data", str(dataset_file), "--out", str(tmp_path / "r"),
            "--progress", "off"]
    code = main(base + args)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("crfsdca train: error:") and message in err


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
