"""From run traces to the paper's figures, tables and a markdown report.

- :mod:`.load`: run directories -> one tidy DataFrame (one row per trace row, with the
  run's method label and options from its ``meta.json``), and primal sub-optimality
  against a reference optimum P*;
- :mod:`.figures`: one function per figure (PNG + PDF, written atomically);
- :mod:`.tables`: time-to-target, line-search sub-precision and P* tables (CSV + markdown);
- :mod:`.claims`: each qualitative claim of the paper, decided from the traces;
- :mod:`.markdown`: ``results/report.md``.

Every function degrades gracefully: a method or dataset absent from the runs gives a
"no data" panel, an empty table row set or a "not enough data" verdict, never an error.
The command line is :mod:`crfsdca.cli_report` (``python -m crfsdca report ...``).
"""

from .load import RunSet, load_runs, method_label

__all__ = ["RunSet", "load_runs", "method_label"]
