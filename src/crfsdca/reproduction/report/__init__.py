"""From run traces to the paper's figures, tables and a markdown report.

- :mod:`.catalog`: every figure and table: name, data, title and captions;
- :mod:`.load`: run directories -> one tidy DataFrame (one row per trace row, with the
  run's method label and options from its ``meta.json``), and primal sub-optimality
  against a reference optimum P*;
- :mod:`.figures`: one function per figure (PNG + PDF, written atomically);
- :mod:`.tables`: time-to-target, line-search sub-precision and P* tables (CSV + markdown);
- :mod:`.claims`: each qualitative claim of the paper, decided from the traces;
- :mod:`.markdown`: ``results/report.md``;
- :mod:`.curves`: reading a trace: when a curve reaches a target, how two compare.

Every function degrades gracefully: a method or dataset absent from the runs gives a
"no data" panel, an empty table row set or a "not enough data" verdict, never an error.
The command line is :mod:`crfsdca.cli.report` (``python -m crfsdca report ...``).
"""

