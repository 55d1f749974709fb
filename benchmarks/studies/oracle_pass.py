"""Time one full oracle pass (forward-backward with all marginals) over each training set.

Question: How fast is one oracle pass (forward-backward with all marginals) against
    plain numpy?
Date: 2026-11-21
Commit: 930926f
Answer: 0.18 s over CONLL's 8,936 training sentences (1.16 M tokens/s), 166 times the
    plain-numpy reference. The suite's `test_oracle_pass` measures the pass now.
Frozen: kept as it ran (moved from benchmarks/ on 2026-11-27), still runnable: `python
benchmarks/studies/oracle_pass.py`.

Prints tokens per second of the numba core and of a plain-numpy implementation
(vectorized over labels, Python loop over tokens, as the paper's own code) measured
in the same run on the first sequences of the same data, and their ratio.

    python benchmarks/studies/oracle_pass.py [--datasets ocr conll ner pos pos-synthetic]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import numpy_reference
from common import DATASETS, best_time, featurized_problems, machine, markdown_table, random_weights

from crfsdca.model.objective import oracle_pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=[*DATASETS, "pos-synthetic"])
    ap.add_argument("--numpy-tokens", type=int, default=20_000,
                    help="tokens the numpy reference is timed on (it is slow)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"machine: {machine()}; one thread", file=sys.stderr)
    rows = []
    for name, problem in featurized_problems(args.datasets):
        seq, A, K = problem.train, problem.n_attributes, problem.n_labels
        w = random_weights(problem)
        t = best_time(lambda: oracle_pass(w, seq, A, K), args.repeat)  # noqa: B023
        n_np = int(np.searchsorted(seq.offsets, args.numpy_tokens))
        n_np = max(1, min(n_np, seq.n_sequences))
        t0 = time.perf_counter()
        for i in range(n_np):
            numpy_reference.oracle(w, seq, i, A, K)
        t_np = time.perf_counter() - t0
        tok_np = int(seq.offsets[n_np])
        rate, rate_np = seq.n_tokens / t, tok_np / t_np
        rows.append({"dataset": name, "n": seq.n_sequences, "N": seq.n_tokens, "K": K,
                     "seconds/pass": f"{t:.3f}", "tokens/s": f"{rate:,.0f}",
                     "numpy tokens/s": f"{rate_np:,.0f}", "speed-up": f"{rate / rate_np:.0f}x"})
        print(f"{name}: {t:.3f}s per pass", file=sys.stderr)
    print(f"Machine: {machine()}. One oracle pass = scores + exp(W) + forward-backward with "
          "unary and pairwise marginals for every training sequence; best of "
          f"{args.repeat}.\n")
    print(markdown_table(rows, ["dataset", "n", "N", "K", "seconds/pass", "tokens/s",
                                "numpy tokens/s", "speed-up"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
