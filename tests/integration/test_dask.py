"""Scale-out through Dask: scikit-learn's search over ``crfsdca.CRF`` with joblib's Dask
backend on a ``dask.distributed`` cluster of process workers gives the local run's best
parameters and scores (the estimator pickles, and workers compile or load the kernels from
numba's cache like any process)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from crfsdca import CRF

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")


def _data():
    rng = np.random.default_rng(4)
    words = ["the", "a", "cat", "dog", "sat", "ran", "on", "mat"]
    tags = {"the": "D", "a": "D", "cat": "N", "dog": "N", "mat": "N", "sat": "V",
            "ran": "V", "on": "P"}
    X, y = [], []
    for _ in range(80):
        sent = list(rng.choice(words, size=rng.integers(3, 7)))
        X.append([{"w": w, "first": i == 0, "prev": sent[i - 1] if i else "<s>"}
                  for i, w in enumerate(sent)])
        y.append([tags[w] if rng.random() > 0.1 else "N" for w in sent])
    return X, y


@pytest.mark.slow
def test_grid_search_on_a_dask_cluster_equals_the_local_one():
    X, y = _data()
    grid = {"c2": [0.05, 0.5, 2.0], "c1": [0.0, 0.1]}
    local = GridSearchCV(CRF(), grid, cv=3).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), joblib.parallel_backend("dask"):
        remote = GridSearchCV(CRF(), grid, cv=3, n_jobs=-1).fit(X, y)
    assert remote.best_params_ == local.best_params_
    np.testing.assert_allclose(remote.cv_results_["mean_test_score"],
                               local.cv_results_["mean_test_score"], rtol=0, atol=1e-12)
    assert remote.predict(X[:5]) == local.predict(X[:5])
