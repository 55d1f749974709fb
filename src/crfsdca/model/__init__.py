"""The chain-CRF core in numba: oracle, entropies, statistics, objectives and metrics."""
