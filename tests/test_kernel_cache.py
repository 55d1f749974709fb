"""The kernels the wheel ships reach numba's cache wherever it is (crfsdca.runtime.kernel_cache),
and ``crfsdca precompile`` refuses bad arguments in one line."""

from __future__ import annotations

import pickle

import numba
import pytest

from crfsdca.cli import main
from crfsdca.runtime import kernel_cache


def _index(path, stamp, data_files=(), version=numba.__version__):
    """A cache index as numba writes it, and its data files."""
    with open(path, "wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(pickle.dumps((stamp, {("sig", i): n for i, n in enumerate(data_files)})))
    for name in data_files:
        (path.parent / name).write_bytes(f"{name} of {stamp}".encode())


@pytest.fixture
def folders(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache, "_seeded", set())
    shipped, target = tmp_path / "shipped", tmp_path / "target"
    shipped.mkdir()
    target.mkdir()
    return shipped, target


def test_seed_copies_what_the_target_lacks(folders):
    shipped, target = folders
    _index(shipped / "oracle.f-10.py311.nbi", "new", ["oracle.f-10.py311.1.nbc"])
    kernel_cache.seed(str(shipped), str(target))
    assert (target / "oracle.f-10.py311.nbi").read_bytes() == \
        (shipped / "oracle.f-10.py311.nbi").read_bytes()
    assert (target / "oracle.f-10.py311.1.nbc").read_bytes() == b"oracle.f-10.py311.1.nbc of new"
    assert not list(target.glob("*.tmp"))


def test_seed_keeps_the_targets_kernels_of_the_same_source(folders):
    shipped, target = folders
    _index(shipped / "oracle.f-10.py311.nbi", "same", ["oracle.f-10.py311.1.nbc"])
    _index(target / "oracle.f-10.py311.nbi", "same",
           ["oracle.f-10.py311.1.nbc", "oracle.f-10.py311.2.nbc"])  # one compiled here too
    before = (target / "oracle.f-10.py311.nbi").read_bytes()
    kernel_cache.seed(str(shipped), str(target))
    assert (target / "oracle.f-10.py311.nbi").read_bytes() == before
    assert (target / "oracle.f-10.py311.2.nbc").exists()


def test_seed_replaces_kernels_of_another_source_or_numba(folders):
    shipped, target = folders
    _index(shipped / "a.f-1.py311.nbi", "new", ["a.f-1.py311.1.nbc"])
    _index(target / "a.f-1.py311.nbi", "old", ["a.f-1.py311.1.nbc"])
    _index(shipped / "b.g-2.py311.nbi", "same", ["b.g-2.py311.1.nbc"])
    _index(target / "b.g-2.py311.nbi", "same", ["b.g-2.py311.1.nbc"], version="0.1.0")
    kernel_cache.seed(str(shipped), str(target))
    assert kernel_cache._index_stamp(str(target / "a.f-1.py311.nbi")) == (numba.__version__,
                                                                          "new")
    assert (target / "a.f-1.py311.1.nbc").read_bytes() == b"a.f-1.py311.1.nbc of new"
    assert kernel_cache._index_stamp(str(target / "b.g-2.py311.nbi"))[0] == numba.__version__


def test_seed_skips_an_unreadable_index(folders):
    shipped, target = folders
    (shipped / "a.f-1.py311.nbi").write_bytes(b"not a pickle")
    kernel_cache.seed(str(shipped), str(target))
    assert not list(target.iterdir())


def test_only_the_packages_kernels_are_handled(tmp_path):
    source = tmp_path / "user.py"
    source.write_text("def f():\n    return 1\n")
    assert kernel_cache.ShippedKernels.from_function(test_only_the_packages_kernels_are_handled,
                                                     str(source)) is None
    locator = kernel_cache.ShippedKernels.from_function(kernel_cache.install,
                                                        kernel_cache.__file__)
    assert locator is not None and locator.get_source_stamp()


def test_install_is_idempotent_and_first():
    kernel_cache.install()
    kernel_cache.install()
    classes = kernel_cache._IMPL._locator_classes
    assert classes[0] is kernel_cache.ShippedKernels
    assert classes.count(kernel_cache.ShippedKernels) == 1


@pytest.mark.parametrize("argv, says", [
    (["--jobs", "0"], "--jobs must be at least 1"),
    (["--only", "nope"], "unknown workload(s) ['nope']"),
])
def test_precompile_refuses_bad_arguments_in_one_line(argv, says, capsys):
    assert main(["precompile", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_precompile_runs_a_workload(capsys):
    assert main(["precompile", "--only", "ap"]) == 0
    err = capsys.readouterr().err
    assert "ap:" in err and "kernels compiled into numba's cache" in err
