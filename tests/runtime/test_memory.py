"""crfsdca.runtime.memory: the estimates against the solvers' own memory_bytes(), and the check
that stops a run before it allocates what does not fit."""

from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np
import pytest

from crfsdca.cli import main
from crfsdca.data.hdf5 import Dataset, write_dataset
from crfsdca.data.radii import squared_radii
from crfsdca.data.synthetic import synthetic_sequences
from crfsdca.errors import ResourceError
from crfsdca.runtime import memory
from crfsdca.solvers.base import Problem
from crfsdca.solvers.registry import SOLVERS, make_solver, spec


@pytest.fixture(scope="module")
def problem():
    K, A = 5, 40
    train = synthetic_sequences(300, 1, 12, K, A, 4, seed=3)
    test = synthetic_sequences(50, 1, 12, K, A, 4, seed=4)
    return Problem(train=train, n_attributes=A, n_labels=K, lam=1e-2,
                   radii=squared_radii(train, K, A), test=test,
                   label_names=tuple("ABCDE"))


def _memory_cases():
    """Every solver at its defaults, and once more with each value its registry entry
    says makes its state smaller (a smaller value where it names none)."""
    for name, s in SOLVERS.items():
        yield name, {}
        for w in s.shrink:
            value = w.taken() if w.value is not None else max(1, s.options[w.option].default // 3)
            yield name, {w.option: value}


@pytest.mark.parametrize("solver, options", list(_memory_cases()))
def test_estimates_match_the_solvers_own_accounts(problem, solver, options):
    """Each part within 2% of (and not below) what the built solver reports."""
    built = make_solver(solver, problem, **options).memory_bytes()
    resolved = spec(solver).options.resolve(options)
    estimate = spec(solver).configure(resolved).state_bytes(memory.DataSizes.of_problem(problem))
    assert set(estimate) == set(built)
    for name, actual in built.items():
        assert actual <= estimate[name] <= 1.02 * actual, (name, actual, estimate[name])


def test_sizes_of_a_file_are_those_of_its_problem(problem, tmp_path):
    ds = Dataset("syn", problem.train, problem.test, list("ABCDE"),
                 [f"a{j}" for j in range(40)], problem.radii)
    path = write_dataset(tmp_path / "syn.h5", ds)
    assert memory.DataSizes.of_file(path) == memory.DataSizes.of_problem(problem)
    assert memory.DataSizes.of_file(path).dim == problem.dim


def test_check_names_the_need_the_limit_and_the_way_out(monkeypatch):
    monkeypatch.setattr(memory, "available", lambda: (2**30, "cgroup limit"))
    memory.check(2**29, "small", "never shown")
    with pytest.raises(ResourceError, match=r"^big needs about 3.00 GiB \(marginals 2.50 GiB, "
                                            r"weights 512 MiB\), more than the 1.00 GiB left "
                                            r"\(cgroup limit\); use less$"):
        memory.check(3 * 2**30, "big", "use less",
                     {"weights": 2**29, "marginals": 5 * 2**29, "x": 1})


def test_available_is_the_tightest_bound(monkeypatch):
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "100")  # MB, below any process's RSS
    room, where = memory.available()
    assert (room, where) == (0, "SLURM allocation")
    monkeypatch.delenv("SLURM_MEM_PER_NODE")
    room, where = memory.available()
    assert room > 0 and where in ("available memory", "cgroup limit", "ulimit -v")


def test_train_refuses_a_store_above_the_limit_before_allocating(tmp_path, monkeypatch, capsys):
    K, A = 4, 10
    train = synthetic_sequences(20, 2, 5, K, A, 2, seed=1)
    ds = Dataset("syn", train, None, list("ABCD"), [f"a{j}" for j in range(A)],
                 squared_radii(train, K, A))
    path = write_dataset(tmp_path / "syn.h5", ds)
    monkeypatch.setattr(memory, "available", lambda: (1000, "ulimit -v"))
    out = tmp_path / "run"
    assert main(["train", "--data", str(path), "--out", str(out), "--progress", "off"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("crfsdca train: error: sdca on syn needs about") and "(ulimit -v)" in err
    assert "--store-dtype float32 halves the stored marginals" in err and "--subset k" in err
    assert not out.exists()
    assert main(["optimum", "--data", str(path), "--out", str(tmp_path / "o.h5")]) == 2
    assert "a smaller --maxcor" in capsys.readouterr().err


def test_train_under_a_real_ulimit_stops_with_the_estimate(tmp_path):
    """A 16 GB dual store under `ulimit -v 4G`: one line, exit 2 (a MemoryError traceback
    before the check)."""
    K, A = 200, 20
    train = synthetic_sequences(5000, 8, 12, K, A, 2, seed=1)
    ds = Dataset("big", train, None, [f"L{k}" for k in range(K)], [f"a{j}" for j in range(A)],
                 squared_radii(train, K, A))
    path = write_dataset(tmp_path / "big.h5", ds)
    limit = 4 * 2**30

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    run = subprocess.run([sys.executable, "-m", "crfsdca", "train", "--data", str(path),
                          "--out", str(tmp_path / "run"), "--progress", "off"],
                         preexec_fn=cap, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert "sdca on big needs about" in last and "(ulimit -v)" in last, run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "run").exists()


def test_featurize_bound_is_above_the_measured_peak(tmp_path):
    """The featurizer's estimate is not below its traced peak, on text whose vocabulary
    grows fast (the worst case for the Python vocabulary)."""
    import random
    import tracemalloc

    import yaml
    from helpers.paths import ROOT

    from crfsdca.data.featurize import featurize

    rng = random.Random(0)
    words = [f"w{rng.randrange(10**6)}" for _ in range(4000)]
    text = "\n\n".join("\n".join(f"{rng.choice(words)} T{rng.randrange(40)} "
                                 f"{rng.choice(('B', 'I', 'O'))}" for _ in range(20))
                       for _ in range(500))
    (tmp_path / "train.txt").write_text(text + "\n")
    templates = yaml.safe_load((ROOT / "config.yaml").read_text())["datasets"]["conll"][
        "templates"]
    spec_ = {"reader": "conll", "source": str(tmp_path), "options": {"train": "train.txt"},
             "templates": templates}
    tracemalloc.start()
    try:
        ds = featurize("syn", spec_)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ds.train.n_tokens == 10_000
    assert memory.featurize_bytes(10_000 * len(templates)) >= peak


def test_featurize_stops_before_indexing_a_corpus_that_does_not_fit(tmp_path, monkeypatch):
    from crfsdca.data.featurize import featurize

    (tmp_path / "train.txt").write_text("a DT B\ncat NN I\n\nthe DT B\n")
    spec_ = {"reader": "conll", "source": str(tmp_path), "options": {"train": "train.txt"},
             "templates": [[["w", 0]], [["pos", 0]]]}
    monkeypatch.setattr(memory, "available", lambda: (100, "available memory"))
    with pytest.raises(ResourceError, match=r"featurizing 'tiny' \(6 token attributes at most\)"
                                            r" needs about"):
        featurize("tiny", spec_)


def test_workflow_job_memory_comes_from_this_module(problem, tmp_path):
    """The workflow's mem_mb (common.smk) is the module's estimate, never below the state."""
    from helpers.workflow import load_common

    ds = Dataset("syn", problem.train, problem.test, list("ABCDE"),
                 [f"a{j}" for j in range(40)], problem.radii)
    data = write_dataset(tmp_path / "syn.h5", ds)
    wf = load_common()
    sizes = memory.DataSizes.of_file(data)
    for (dataset, run), (solver, options, _) in list(wf.RUNS.items())[:40]:
        wc = type("W", (), {"dataset": dataset, "run": run})
        inp = type("I", (), {"data": str(data)})
        mb = wf.train_mem_mb(wc, inp)
        assert mb * 2**20 >= spec(solver).configure(options).train_job_bytes(sizes)
        assert mb * 2**20 < spec(solver).configure(options).train_job_bytes(sizes) + 2**20
    # before featurize has run (a dry run on a fresh clone): FileNotFoundError naming the
    # file, which Snakemake takes for "to be determined" (<TBD>) and evaluates again later
    absent = str(tmp_path / "absent.h5")
    for mem_mb in (wf.train_mem_mb, wf.optimum_mem_mb, wf.crfsuite_mem_mb):
        with pytest.raises(FileNotFoundError, match="absent.h5") as e:
            mem_mb(wc, type("I", (), {"data": absent}))
        assert e.value.filename == absent
    assert np.isclose(wf.optimum_mem_mb(wc, type("I", (), {"data": str(data)})) * 2**20,
                      memory.optimum_job_bytes(wf.config["optimum"]["maxcor"], sizes),
                      rtol=1e-3)


def test_stream_arrays_are_aligned_writable_and_their_own_memory():
    """The marginal store's allocator (its own mapping, no huge pages): any size, zero
    included, starts on a cache line, is writable, and a copy holds the values cast."""
    import mmap

    from crfsdca.runtime.jit import ALIGNMENT, stream_copy, stream_empty

    for n in (0, 1, 7, 100_003):
        a = stream_empty(n, np.float32)
        assert a.shape == (n,) and a.dtype == np.float32 and a.flags.writeable
        assert a.ctypes.data % ALIGNMENT == 0 and isinstance(a.base.obj, mmap.mmap)
        a[:] = 1.5
        assert a.sum() == 1.5 * n
    src = np.arange(10, dtype=np.float64) / 3
    b = stream_copy(src)
    assert b.dtype == src.dtype and (b == src).all() and not np.shares_memory(b, src)
    assert (stream_copy(src, np.float32) == src.astype(np.float32)).all()


def test_sdca_keeps_its_store_out_of_numpys_allocator(problem):
    solver = make_solver("sdca", problem, seed=0)
    solver.run(problem.n)
    _, pair = solver.marginals
    import mmap

    assert isinstance(pair.base.obj, mmap.mmap)


def test_lbfgs_s_estimate_counts_the_feature_set_it_works_on(problem):
    """L-BFGS keeps its history on the feature set alone: the estimate follows the mask
    (CoNLL-2000's 453,094 features of 7.4 million weights: 16x less)."""
    import dataclasses

    from crfsdca.model.features import crfsuite_mask

    mask = crfsuite_mask(problem.train, problem.n_attributes, problem.n_labels)
    masked = dataclasses.replace(problem, feature_mask=mask)
    sizes = memory.DataSizes.of_problem(masked)
    assert sizes.features == int(mask.sum()) < sizes.dim
    built = make_solver("lbfgs", masked, memory=4).memory_bytes()
    resolved = spec("lbfgs").options.resolve({"memory": 4})
    assert spec("lbfgs").configure(resolved).state_bytes(sizes) == built


def _store_needs(tmp_path):
    """Tiny training items and what the default SDCA fit on them needs (train_bytes) with
    its exact float64 store, a float32 store, and a store in a file of ``tmp_path``."""
    from crfsdca.cli.precompile import tiny_data
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.training.learn import make_problem, solver_config

    X, y = tiny_data(50)
    labels = sorted({t for s in y for t in s})
    seq = encode(X, y, Vocabulary(), Vocabulary(), grow=True).seq
    sizes = memory.DataSizes.of_problem(make_problem(
        seq, int(seq.attr_indices.max()) + 1, len(labels), labels, 0.1, radii=False))
    return (X, y, *(solver_config("sdca", {"dual_store": "exact", **options}).train_bytes(
        sizes) for options in ({}, {"store_dtype": "float32"}, {"store_dir": str(tmp_path)})))


def test_the_default_fit_shrinks_its_store_to_fit_and_says_so(monkeypatch, tmp_path):
    """Where SDCA's float64 marginal store would not fit but a float32 one would, a fit
    that left store_dtype to the estimator trains in float32 with one warning. Where it
    would not fit either way, the store goes to a file (store_dir, the float width the
    fit asked for kept), the same model; a state that does not fit even so is refused."""
    from crfsdca import CRF
    from crfsdca.errors import ResourceError

    X, y, wide, narrow, on_disk = _store_needs(tmp_path)
    assert on_disk < narrow < wide
    monkeypatch.setattr(memory, "available", lambda: ((wide + narrow) // 2, "test limit"))
    with pytest.warns(RuntimeWarning, match="store_dtype='float32' so that the state fits"):
        crf = CRF(c2=0.1, max_iterations=2, dual_store="exact").fit(X, y)
    assert crf.training_log_.method["store_dtype"] == "float32"
    assert crf.training_log_.method["store_dir"] is None
    with pytest.warns(RuntimeWarning, match="store_dir='.+' so that the state fits"):
        wide_paged = CRF(c2=0.1, max_iterations=2, dual_store="exact",
                         store_dtype="float64").fit(X, y)
    assert wide_paged.training_log_.method["store_dtype"] == "float64"
    monkeypatch.setattr(memory, "available", lambda: ((on_disk + narrow) // 2, "test limit"))
    with pytest.warns(RuntimeWarning, match="store_dtype='float32', store_dir='.+' so that"):
        paged = CRF(c2=0.1, max_iterations=2, dual_store="exact").fit(X, y)
    assert np.array_equal(paged.model_.weights, crf.model_.weights)
    monkeypatch.setattr(memory, "available",
                        lambda: (on_disk + (narrow - on_disk) // 10, "test limit"))
    with pytest.warns(RuntimeWarning, match="store_dir=.+: SDCA's draws outside its "
                                            "windows"):
        CRF(c2=0.1, max_iterations=2, dual_store="exact").fit(X, y)
    with pytest.raises(ResourceError, match="missing: cannot make a file there"):
        CRF(c2=0.1, max_iterations=2, dual_store="exact", store_dtype="float32",
            store_dir=str(tmp_path / "missing")).fit(X, y)
    monkeypatch.setattr(memory, "available", lambda: (on_disk // 2, "test limit"))
    with pytest.raises(ResourceError, match="more than the"):
        CRF(c2=0.1, max_iterations=2, dual_store="exact").fit(X, y)


@pytest.mark.parametrize("files", [
    {"/proc/self/cgroup": "4:memory:/\n", "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1000",
     "/sys/fs/cgroup/memory/memory.usage_in_bytes": "900",
     "/sys/fs/cgroup/memory/memory.stat": "cache 500\ninactive_file 200\n"
                                          "total_inactive_file 300\n"},
    {"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "1000",
     "/sys/fs/cgroup/memory.current": "900", "/sys/fs/cgroup/memory.stat": "inactive_file 300\n"},
])
def test_a_cgroup_leaves_its_limit_less_what_it_cannot_take_back(monkeypatch, files):
    """Usage counts the page cache; its inactive file pages (files read once, a store's
    written pages) are the kernel's first to take back, so they count as room."""
    monkeypatch.setattr(memory, "_read", lambda path: files.get(str(path)))
    assert memory._cgroup_room() == 1000 - 900 + 300


def test_the_compact_store_shrinks_to_a_file_only(monkeypatch, tmp_path):
    """The default (compact) store has no float32 form: where it would not fit, the fit
    puts it in a file, float64 kept, the same model."""
    from crfsdca import CRF
    from crfsdca.cli.precompile import tiny_data
    from crfsdca.data.items import Vocabulary, encode
    from crfsdca.training.learn import make_problem, solver_config

    X, y = tiny_data(50)
    labels = sorted({t for s in y for t in s})
    seq = encode(X, y, Vocabulary(), Vocabulary(), grow=True).seq
    sizes = memory.DataSizes.of_problem(make_problem(
        seq, int(seq.attr_indices.max()) + 1, len(labels), labels, 0.1, radii=False))
    wide, on_disk = (solver_config("sdca", options).train_bytes(sizes) for options in (
        {"dual_store": "compact"}, {"dual_store": "compact", "store_dir": str(tmp_path)}))
    assert on_disk < wide
    in_memory = CRF(c2=0.1, max_iterations=2).fit(X, y)
    monkeypatch.setattr(memory, "available", lambda: ((wide + on_disk) // 2, "test limit"))
    with pytest.warns(RuntimeWarning, match="store_dir='.+' so that the state fits"):
        paged = CRF(c2=0.1, max_iterations=2).fit(X, y)
    assert paged.training_log_.method["store_dtype"] == "float64"
    assert paged.training_log_.method["dual_store"] == "compact"
    assert np.array_equal(paged.model_.weights, in_memory.model_.weights)


def test_max_memory_bounds_the_fit_like_a_limit(monkeypatch, tmp_path, capsys):
    """``max_memory`` is one more limit, less what the process holds: a budget between
    the float32 and float64 stores' needs gives the float32 store, one between the store
    in a file's and float32's a store in a file, one below them a refusal naming it;
    sizes as strings; bad values refused at fit; CRFCV's paths and ``crfsdca learn -p``
    honour it; outside a fit the budget is gone."""
    from crfsdca import CRF, CRFCV
    from crfsdca.cli import main
    from crfsdca.errors import ResourceError

    X, y, wide, narrow, on_disk = _store_needs(tmp_path)
    real = memory._status_bytes
    monkeypatch.setattr(memory, "_status_bytes",  # the process holds nothing: exact rooms
                        lambda field: 0 if field == "VmRSS" else real(field))
    with pytest.warns(RuntimeWarning, match="store_dtype='float32' so that the state fits"):
        crf = CRF(c2=0.1, max_iterations=2, dual_store="exact",
                  max_memory=(wide + narrow) // 2).fit(X, y)
    assert crf.training_log_.method["store_dtype"] == "float32"
    with pytest.warns(RuntimeWarning, match="store_dir='.+' so that the state fits"):
        paged = CRF(c2=0.1, max_iterations=2, dual_store="exact",
                    max_memory=str((on_disk + narrow) // 2)).fit(X, y)
    assert np.array_equal(paged.model_.weights, crf.model_.weights)
    with pytest.raises(ResourceError, match=r"left \(max_memory\)"):
        CRF(c2=0.1, max_iterations=2, dual_store="exact", max_memory=on_disk // 2).fit(X, y)
    assert memory.available()[1] != "max_memory"
    monkeypatch.setattr(memory, "_status_bytes", real)
    for bad in ("lots", 0, -5, True):
        with pytest.raises(ValueError, match="max_memory must be"):
            CRF(max_memory=bad).fit(X, y)
    with pytest.raises(ResourceError, match=r"left \(max_memory\)"):
        CRF(max_memory="1K").fit(X, y)
    with pytest.raises(ResourceError, match=r"left \(max_memory\)"):
        CRFCV(c1s=[0.0], c2s=[0.1], cv=2, max_memory="1K").fit(X, y)
    data = tmp_path / "train.txt"
    data.write_text("".join("".join(f"{lab}\t{' '.join(k for k in item)}\n"
                                    for item, lab in zip(xs, ys, strict=True)) + "\n"
                            for xs, ys in zip(X, y, strict=True)), encoding="utf-8")
    capsys.readouterr()
    assert main(["learn", "-q", "-p", "max_memory=1K", str(data)]) == 2
    assert "(max_memory)" in capsys.readouterr().err
