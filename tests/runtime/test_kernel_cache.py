"""The kernels the wheel ships reach numba's cache wherever it is (crfsdca.runtime.kernel_cache),
other processors load the standard levels' (cpu_levels, level_cache), a package that
compiles anyway says so in one line, and ``crfsdca precompile`` refuses bad arguments in
one line."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
import types
import warnings

import numba
import pytest

from crfsdca.cli import main, precompile
from crfsdca.runtime import cpu_levels, kernel_cache, level_cache


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
    (["--level", "x86-64-v9"], "unknown level(s) ['x86-64-v9']"),
])
def test_precompile_refuses_bad_arguments_in_one_line(argv, says, capsys):
    assert main(["precompile", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_precompile_runs_a_workload(capsys):
    assert main(["precompile", "--only", "ap"]) == 0
    err = capsys.readouterr().err
    assert "ap:" in err and "kernels compiled into numba's cache" in err


# --- kernels of standard microarchitecture levels (cpu_levels, level_cache) ---

NEHALEM = ("+64bit,+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+cx16,+sahf,+popcnt,+sse3,+ssse3,"
           "+sse4.1,+sse4.2,+crc32,-avx,-avx2,-bmi,-bmi2,-f16c,-fma,-lzcnt,-movbe,-xsave,"
           "-avx512f,-avx512bw,-avx512cd,-avx512dq,-avx512vl")
"""An x86-64-v2 processor's feature string (Nehalem's, in LLVM's names)."""
HASWELL = NEHALEM.replace("-avx,-avx2,-bmi,-bmi2,-f16c,-fma,-lzcnt,-movbe,-xsave",
                          "+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe,+xsave")
SKYLAKE_X = HASWELL.replace("-avx512", "+avx512")
X86 = "x86_64-unknown-linux-gnu"


@pytest.mark.parametrize("triple, features, runs", [
    (X86, SKYLAKE_X, ("x86-64-v4", "x86-64-v3", "x86-64-v2")),
    (X86, HASWELL, ("x86-64-v3", "x86-64-v2")),
    (X86, NEHALEM, ("x86-64-v2",)),
    (X86, NEHALEM.replace("+popcnt", "-popcnt"), ()),
    (X86, NEHALEM.replace("+sse4.2,", ""), ()),            # not named: not known to be there
    (X86, HASWELL + ",-evex512", ("x86-64-v3", "x86-64-v2")),  # LLVM 18-20's 512-bit flag
    (X86, SKYLAKE_X + ",+evex512", ("x86-64-v4", "x86-64-v3", "x86-64-v2")),
    (X86, SKYLAKE_X + ",-evex512", ("x86-64-v3", "x86-64-v2")),
    (X86, NEHALEM.replace("+crc32,", ""), ("x86-64-v2",)),  # an LLVM without crc32
    (X86, "", ()),                                          # NUMBA_CPU_NAME=generic
    ("aarch64-unknown-linux-gnu", "", ("generic",)),
    ("aarch64-unknown-linux-gnu", "+neon,+fp-armv8", ("generic",)),
    ("powerpc64le-unknown-linux-gnu", "+altivec", ()),
])
def test_the_levels_a_processor_runs(triple, features, runs):
    assert cpu_levels.runnable(triple, features) == runs


def test_levels_are_named_in_llvms_feature_names():
    """Every feature a level requires is one this numba's LLVM names (a misspelt one
    would never be '+', and its level never load), but those it names in some versions."""
    import llvmlite.binding as ll

    known = set(ll.get_host_cpu_features())
    arch = ll.get_process_triple().split("-")[0]
    if arch not in cpu_levels.LEVELS:
        pytest.skip(f"no levels for {arch}")
    for name, required in cpu_levels.LEVELS[arch]:
        assert required - cpu_levels.NAMED_SINCE <= known, (name, required - known)


def test_levels_by_name():
    assert cpu_levels.named(["all"], X86) == ["x86-64-v4", "x86-64-v3", "x86-64-v2"]
    assert cpu_levels.named(["x86-64-v2", "x86-64-v4"], X86) == ["x86-64-v4", "x86-64-v2"]
    assert cpu_levels.named([], X86) == []
    with pytest.raises(ValueError, match=r"unknown level\(s\) \['generic'\]"):
        cpu_levels.named(["generic"], X86)


LEVEL_USE = """
import json
import numpy as np
from numba.core import event

class Compiled(event.Listener):
    modules = []
    def on_start(self, ev): pass
    def on_end(self, ev): self.modules.append(ev.data["dispatcher"].py_func.__module__)

event.register("numba:compile", Compiled())
from crfsdca.runtime import jit, level_cache
a, b = np.linspace(-3, 5, 37), np.sin(np.arange(37.0))
print(json.dumps({"values": [jit.dot(a, b), jit.abs_sum(b)], "loads": dict(level_cache.loads),
                  "compiled": sum(m.startswith("crfsdca") for m in Compiled.modules)}))
"""


def _host_features() -> str:
    import llvmlite.binding as ll

    return ll.get_host_cpu_features().flatten()


@pytest.fixture(scope="module")
def level_cache_dir(tmp_path_factory):
    """A numba cache holding two small kernels (jit.dot, jit.abs_sum) compiled for this
    processor, then for x86-64-v3 and -v2 by ``precompile``'s level compilation."""
    import llvmlite.binding as ll

    if ll.get_process_triple().split("-")[0] != "x86_64":
        pytest.skip("the x86-64 levels")
    if "x86-64-v3" not in cpu_levels.runnable(ll.get_process_triple(), _host_features()):
        pytest.skip("this processor does not run x86-64-v3")
    base = tmp_path_factory.mktemp("levels")
    cache = base / "cache"
    host = _use(cache)
    assert host["compiled"] == 2, host
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NUMBA_CACHE_DIR", str(cache))  # the level processes' numba cache
        precompile.compile_levels(["x86-64-v3", "x86-64-v2"], jobs=2, log=lambda _: None)
    return cache, host["values"]


def _use(cache, **env):
    out = subprocess.run([sys.executable, "-c", LEVEL_USE], capture_output=True, text=True,
                         env=dict(os.environ, NUMBA_CACHE_DIR=str(cache), **env))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_precompile_compiles_each_cached_kernel_for_the_levels(level_cache_dir):
    cache, _ = level_cache_dir
    assert kernel_cache.missing_levels(["x86-64-v3", "x86-64-v2"], str(cache)) == []
    assert kernel_cache.missing_levels(["x86-64-v4"], str(cache))


@pytest.mark.parametrize("features, level", [
    ("host", "x86-64-v3"),     # the best level compiled that this processor runs
    (HASWELL, "x86-64-v3"),
    (NEHALEM, "x86-64-v2"),    # never v3 on a v2 processor
])
def test_another_processor_loads_the_best_level_it_runs(level_cache_dir, features, level):
    cache, values = level_cache_dir
    features = _host_features() if features == "host" else features
    out = _use(cache, NUMBA_CPU_NAME="skylake", NUMBA_CPU_FEATURES=features)
    assert out["compiled"] == 0 and out["loads"] == {level: 2}, out
    assert out["values"] == values  # the same bits: dot's order is fixed, no fastmath


def test_the_host_loads_its_own_kernels_first(level_cache_dir):
    cache, values = level_cache_dir
    out = _use(cache)
    assert out["compiled"] == 0 and set(out["loads"]) == {_host_cpu_name()}, out


def _host_cpu_name() -> str:
    import llvmlite.binding as ll

    return ll.get_host_cpu_name()


@pytest.mark.parametrize("env", [
    {"NUMBA_CPU_NAME": "skylake", "NUMBA_CPU_FEATURES": NEHALEM.replace("+sse4.2", "-sse4.2")},
    {"NUMBA_CPU_NAME": "generic"},        # no feature string: nothing known, compile
])
def test_a_processor_no_level_fits_compiles(level_cache_dir, env, tmp_path):
    cache, values = level_cache_dir
    shutil.copytree(cache, tmp_path / "cache")
    out = _use(tmp_path / "cache", **env)
    assert out["compiled"] == 2 and out["loads"] == {}, out


def test_a_key_not_as_expected_compiles():
    """numba's cache key in another shape (another numba's internals): no level is
    looked up, the kernel compiles."""
    magic = (X86, "skylake", SKYLAKE_X)
    fake = types.SimpleNamespace(_index_key=lambda sig, codegen: ("sig", magic))
    assert level_cache.LevelCache._load_level(fake, "sig", None, magic) == (None, None)
    other = types.SimpleNamespace(_index_key=lambda sig, codegen: ("sig", "magic", "h"))
    assert level_cache.LevelCache._load_level(other, "sig", None, magic) == (None, None)


def test_only_the_packages_kernels_get_the_level_cache(tmp_path):
    from numba.core import caching, dispatcher

    source = tmp_path / "user_kernels.py"
    source.write_text("def f(x):\n    return x + 1\n")
    spec = importlib.util.spec_from_file_location("user_kernels", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert type(dispatcher.FunctionCache(module.f)) is caching.FunctionCache
    assert type(dispatcher.FunctionCache(kernel_cache.install)) is level_cache.LevelCache


# --- the one line where a shipped package compiles ---

@pytest.fixture
def marker(tmp_path, monkeypatch):
    """A shipped package's marker (this numba, this Python, built on a 'znver5' with the
    x86-64 levels); notices not yet given."""
    path = tmp_path / "kernels-shipped.txt"
    path.write_text(f"crfsdca 0\nnumba {numba.__version__}\npython "
                    f"{sys.implementation.cache_tag}\ncpu znver5\nfeatures {SKYLAKE_X}\n"
                    f"levels x86-64-v4 x86-64-v3 x86-64-v2\n")
    monkeypatch.setattr(kernel_cache, "MARKER", str(path))
    monkeypatch.setattr(kernel_cache, "_noticed", False)
    return path


def _notices(magic) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel_cache.compile_notice(magic)
        kernel_cache.compile_notice(magic)  # once per process
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("edit, magic, says", [
    (("numba ", "numba 0.1.0-"), (X86, "skylake", SKYLAKE_X), "this is numba"),
    (("python ", "python cpython-39-"), (X86, "skylake", SKYLAKE_X), "this is cpython"),
    (None, (X86, "generic", ""), "this processor (generic) runs none of those"),
    (None, (X86, "znver5", SKYLAKE_X), "a kernel the wheel does not ship"),
])
def test_one_line_says_the_kernels_compile_once(marker, edit, magic, says):
    if edit:
        marker.write_text(marker.read_text().replace(*edit))
    notices = _notices(magic)
    assert len(notices) == 1 and "\n" not in notices[0], notices
    assert says in notices[0] and "compiles kernels on first use here, once" in notices[0]


def test_no_notice_without_shipped_kernels(marker):
    marker.unlink()
    assert _notices((X86, "generic", "")) == []


def test_seed_leaves_another_numbas_kernels(folders):
    shipped, target = folders
    _index(shipped / "a.f-1.py311.nbi", "same", ["a.f-1.py311.1.nbc"], version="0.1.0")
    _index(target / "a.f-1.py311.nbi", "same", ["a.f-1.py311.1.nbc"])  # compiled here
    before = (target / "a.f-1.py311.nbi").read_bytes()
    kernel_cache.seed(str(shipped), str(target))
    assert (target / "a.f-1.py311.nbi").read_bytes() == before


def test_write_marker_refuses_a_kernel_without_its_levels(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache, "stamps_follow_content", lambda: True)  # numba 0.59
    monkeypatch.setattr(kernel_cache, "PACKAGE", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "MARKER", str(tmp_path / "kernels-shipped.txt"))
    host = (X86, "znver5", SKYLAKE_X)
    keys = {("sig", host, "h"): "f.1.nbc", ("sig", (X86, "x86-64-v3", ""), "h"): "f.2.nbc"}
    (tmp_path / "__pycache__").mkdir()
    with open(tmp_path / "__pycache__" / "m.f-1.py311.nbi", "wb") as f:
        pickle.dump(numba.__version__, f)
        f.write(pickle.dumps(("stamp", keys)))
    assert kernel_cache.missing_levels(["x86-64-v3"], str(tmp_path)) == []
    with pytest.raises(RuntimeError, match="1 kernels lack a level.*lacks x86-64-v2"):
        kernel_cache.write_marker(["x86-64-v3", "x86-64-v2"])
    assert not (tmp_path / "kernels-shipped.txt").exists()


def test_seed_reads_indexes_whose_signatures_name_types_not_importable(folders):
    """numba's index keys name the package's own types (SDCA's buffers), whose module is
    half-imported when the locator seeds its folder: the stamp is read without them."""
    shipped, target = folders
    module = types.ModuleType("crfsdca_not_importable")

    class Buffers:
        pass

    Buffers.__module__, Buffers.__qualname__ = module.__name__, "Buffers"
    module.Buffers = Buffers
    sys.modules[module.__name__] = module
    try:
        with open(shipped / "k.f-1.py311.nbi", "wb") as f:
            pickle.dump(numba.__version__, f, protocol=-1)
            f.write(pickle.dumps(("stamp", {((Buffers(),), "magic", "h"): "k.f-1.py311.1.nbc"})))
        (shipped / "k.f-1.py311.1.nbc").write_bytes(b"code")
    finally:
        del sys.modules[module.__name__]
    with pytest.raises(ModuleNotFoundError):
        pickle.loads((shipped / "k.f-1.py311.nbi").read_bytes()[len(pickle.dumps(
            numba.__version__, protocol=-1)):])
    kernel_cache.seed(str(shipped), str(target))
    assert (target / "k.f-1.py311.1.nbc").read_bytes() == b"code"
    assert kernel_cache._index_stamp(str(target / "k.f-1.py311.nbi")) == (numba.__version__,
                                                                          "stamp")


def test_write_marker_refuses_a_numba_that_stamps_file_times(tmp_path, monkeypatch):
    """numba 0.59 stamps a source by (mtime, size): pip writes the files anew, so shipped
    kernels could never load; the build stops instead of shipping them."""
    from numba.core import caching

    def by_time(self):
        st = os.stat(self._py_file)
        return st.st_mtime, st.st_size

    monkeypatch.setattr(caching._SourceFileBackedLocatorMixin, "get_source_stamp", by_time)
    monkeypatch.setattr(kernel_cache, "MARKER", str(tmp_path / "kernels-shipped.txt"))
    assert not kernel_cache.stamps_follow_content()
    with pytest.raises(RuntimeError, match="stamps its cache by the sources' file times"):
        kernel_cache.write_marker([])
    assert not (tmp_path / "kernels-shipped.txt").exists()
