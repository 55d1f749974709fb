"""Chain-CRF training by stochastic dual coordinate ascent with adaptive sampling."""

import importlib

__version__ = "0.1.0"

__all__ = ["CRF", "CRFCV", "Corpus", "__version__", "metrics", "scorers", "templates"]


def __getattr__(name):
    """``crfsdca.CRF``, ``crfsdca.CRFCV``, ``crfsdca.Corpus``, ``crfsdca.metrics``,
    ``crfsdca.scorers`` and ``crfsdca.templates`` are imported on first use, so that
    ``import crfsdca`` stays light
    (the workflow imports the package without numba or scikit-learn) and ``import crfsdca
    as sklearn_crfsuite`` gives ``sklearn_crfsuite.metrics`` as sklearn-crfsuite does."""
    if name == "CRF":
        from .estimator import CRF  # lazy: `import crfsdca` loads no numba

        return CRF
    if name == "CRFCV":
        from .cv import CRFCV  # lazy, as CRF

        return CRFCV
    if name == "Corpus":
        from .corpus import Corpus  # lazy, as CRF

        return Corpus
    if name in ("metrics", "scorers", "templates"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'crfsdca' has no attribute {name!r}")
