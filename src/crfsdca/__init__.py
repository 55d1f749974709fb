"""Chain-CRF training by stochastic dual coordinate ascent with adaptive sampling."""

__version__ = "0.1.0"

__all__ = ["CRF", "__version__"]


def __getattr__(name):
    """``crfsdca.CRF`` is imported on first use, so that ``import crfsdca`` stays light
    (the workflow imports the package without numba or scikit-learn)."""
    if name == "CRF":
        from .estimator import CRF

        return CRF
    raise AttributeError(f"module 'crfsdca' has no attribute {name!r}")
