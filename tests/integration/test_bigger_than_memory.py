"""A corpus whose dual store does not fit a hard memory limit trains from a generator
under it, to the certified objective of the same fit without the limit.

The limit is ``ulimit -d`` (RLIMIT_DATA, Linux 4.7 and later: the private writable
memory of a process, what its heap and anonymous mappings take; a file mapped shared,
as the store in ``store_dir`` is, is the page cache's): what a container's cgroup limit
does at scale, without needing root. The corpus has K = 40 labels and few attributes,
so that SDCA's stored marginals (N K^2 floats) dwarf everything else the fit holds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHILD = """
import json, resource, sys
room = int(sys.argv[1])
def vm_data():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmData"))
    return int(line.split()[1]) * 1024
import numpy as np
from crfsdca import CRF
CRF(c2=0.1, max_iterations=1).fit([[{"a": 1}, {"b": 1}]] * 3, [["x", "y"]] * 3)
import tempfile  # the kernels of the store the limit forces, compiled (and cached) before it:
with tempfile.TemporaryDirectory() as where:  # LLVM compiling under the limit aborts
    CRF(c2=0.1, max_iterations=1, dual_store="exact", store_dtype="float32",
        store_dir=where).fit([[{"a": 1}, {"b": 1}]] * 3, [["x", "y"]] * 3)
if room:  # the limit: what this process holds once ready, plus room
    limit = vm_data() + room
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

def pairs():
    rng = np.random.default_rng(0)
    for i in range(2000):
        tags = rng.integers(0, 40, size=20)
        noise = rng.integers(0, 50, size=20)
        yield ([{"w": f"t{t}", "n": f"n{z}"} for t, z in zip(tags, noise)],
               [f"L{t}" for t in tags])

crf = CRF(c2=1.0, random_state=0, dual_store="exact").fit(pairs())
last = crf.training_log_[-1]
try:  # a float32 store in memory, after the fit: refused by the limit?
    store = np.ones(38000 * 40 * 40, dtype=np.float32)
    in_memory = True
except MemoryError:
    in_memory = False
print(json.dumps({"loss": float(last["loss"]), "gap": float(last["gap"]),
                  "in_memory": in_memory,
                  "relative_gap": float(last["relative_gap"]),
                  "store_dir": crf.training_log_.method["store_dir"] is not None,
                  "store_dtype": crf.training_log_.method["store_dtype"]}))
"""

ROOM = 96 * 2**20
"""Room under the limit: more than the corpus, the weights and the buffers need, less
than the stored marginals (about 486 MB in float64, 243 MB in float32)."""


def _fit(room: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(room)], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA: Linux's")
def test_a_store_larger_than_the_limit_trains_to_the_same_certified_objective():
    free = _fit(0)
    limited = _fit(ROOM)
    assert not free["store_dir"] and free["store_dtype"] == "float64"
    assert limited["store_dir"] and limited["store_dtype"] == "float32"
    assert free["in_memory"] and not limited["in_memory"]  # the limit holds
    for run in (free, limited):
        assert run["relative_gap"] <= 3e-4
    # both losses lie within their gaps of the one optimum: the intervals meet
    assert abs(free["loss"] - limited["loss"]) <= free["gap"] + limited["gap"]
