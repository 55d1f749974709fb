"""Solvers: SDCA (the paper's algorithm) and the baselines, on one shared monitor."""
