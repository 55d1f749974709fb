"""Chain-CRF training by stochastic dual coordinate ascent with adaptive sampling."""

__version__ = "0.1.0"
