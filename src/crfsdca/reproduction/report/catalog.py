"""Every figure and table of the reproduction, in one place: name, data, title, captions.

The ``report`` command's choices, the functions that draw and compute them
(:func:`crfsdca.reproduction.report.figures.draw`,
:func:`crfsdca.reproduction.report.tables.build`), the workflow's rules and their inputs
(which experiment groups each one reads) and the captions of ``snakemake --report`` and of
``report.md`` all come from here. Pure Python, so that the workflow can import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Artifact:
    """A figure or a table of the report.

    ``groups`` are the experiment groups (config ``experiments``) whose runs it reads;
    ``"crfsuite"`` stands for CRFsuite's runs. ``title`` is one line; ``caption`` says
    what it shows (the ``snakemake --report`` caption); ``text`` is the figure's paragraph
    in ``report.md``.
    """

    name: str
    groups: tuple[str, ...]
    title: str
    caption: str
    text: str = ""


CRFSUITE_GROUP = "crfsuite"

_THREADS = ("Every job runs single-threaded (numba and BLAS threads pinned to 1, CRFsuite "
            "is single-threaded) and Snakemake runs at most as many jobs as cores, so the "
            "seconds of different methods compare")

FIGURES: dict[str, Artifact] = {a.name: a for a in (
    Artifact(
        "fig2_sampling", ("fig2_sampling",),
        "Figure 2: SDCA's sampling schemes on OCR at non-uniformity 0.8.",
        "Figure 2 of the paper: SDCA's sampling schemes on OCR at non-uniformity 0.8 "
        "(uniform, importance, gap, gap x importance, max). log10 primal sub-optimality "
        "log10(P(w) - P*) against oracle calls / n (left) and parameter updates / n (right), "
        "identical for SDCA (one oracle call per update). P* is the L-BFGS optimum (or a "
        "lower primal value reached by a run); report.md says which.",
        "log10 primal sub-optimality of SDCA with each sampling scheme on OCR "
        "(non-uniformity 0.8), against oracle calls / n and parameter updates / n "
        "(identical for SDCA: one oracle call per update)."),
    Artifact(
        "fig3_nonuniformity", ("fig3_nonuniformity",),
        "Figure 3: gap sampling on NER at non-uniformity 0 to 1.",
        "Figure 3 of the paper: SDCA with gap sampling on NER at non-uniformity theta = 0, "
        "0.2, 0.5, 0.8 and 1 (theta = 0 is uniform sampling). log10 primal sub-optimality "
        "against oracle calls / n and parameter updates / n.",
        "SDCA with gap sampling on NER, one curve per non-uniformity theta (theta = 0 is "
        "uniform sampling)."),
    Artifact(
        "fig4_methods", ("fig4_methods",),
        "Figure 4 (with Figure 6's oracle-call panels): SDCA, SDCA-GAP, SAG-NUS, SAG-NUS*, "
        "OEG on the four datasets.",
        "Figure 4 of the paper (panels a-f) with the oracle-call panels of its Figure 6: "
        "SDCA, SDCA-GAP, SAG-NUS, SAG-NUS* and OEG on OCR, CONLL, NER and POS (rows). log10 "
        "primal sub-optimality against oracle calls / n (left: forward-backward and forward "
        "passes, including the line searches of the SAG family and OEG's rejected trials) "
        "and against parameter updates / n (right).",
        "Rows: datasets; columns: oracle calls / n and parameter updates / n. SAG-NUS and "
        "SAG-NUS* spend extra forward passes in their line search, OEG several oracle calls "
        "per accepted update, so their curves differ between the columns."),
    Artifact(
        "fig7_test_error", ("fig4_methods",),
        "Figure 7: test error against epochs.",
        "Figure 7 of the paper: test error (token error rate, %) of SDCA, SDCA-GAP, SAG-NUS, "
        "SAG-NUS* and OEG against epochs (oracle calls / n), one panel per dataset.",
        "Token error rate on the test split against epochs (oracle calls / n)."),
    Artifact(
        "fig8_line_search", ("fig8_line_search",),
        "Figure 8: line search at sub-precision 1e-3 against one Newton step.",
        "Figure 8 of the paper: SDCA-GAP with its Newton line search at sub-precision 1e-3 "
        "(solid) against the paper's one Newton step (dashed: its rtsafe from gamma = 0.5 at "
        "sub-precision 0.5, which \"effectively means that Newton stops after 1 step\") "
        "and our single Newton step from the regula-falsi point (dotted), on the four "
        "datasets (the paper shows NER and POS); log10 primal sub-optimality against "
        "parameter updates / n. The paper finds one step fine on OCR, CONLL and POS and "
        "failing on NER.",
        "SDCA-GAP at sub-precision 1e-3 (solid), with the paper's one Newton step (dashed) "
        "and with our single Newton step (dotted), against parameter updates / n."),
    Artifact(
        "fig9_gap_estimate", ("fig4_methods",),
        "Figure 9: estimated and true duality gap along SDCA-GAP runs.",
        "Figure 9 of the paper: along SDCA-GAP runs, log10 of the true duality gap (full "
        "batch, P(w) - D(mu)) and of the running estimate (mean of the stored, possibly stale "
        "individual gaps g_i), against epochs. The box gives the range of estimate / true "
        "after the first 2 epochs (the stored gaps start at 100).",
        "log10 of the true duality gap (full batch) and of SDCA-GAP's running estimate (mean "
        "of the stored, possibly stale g_i); the box gives the range of estimate / true after "
        "the first 2 epochs."),
    Artifact(
        "subprecision", ("subprecision",),
        "Section 6.2: line-search sub-precision 1e-1 to 1e-8.",
        "Section 6.2 of the paper: SDCA-GAP with line-search sub-precision 1e-1 to 1e-8. Per "
        "dataset: log10 primal sub-optimality against parameter updates / n and against "
        "solver seconds, and per sub-precision the mean line-search iterations per update "
        "(bars) and the share of solver time spent in the line search (line, right axis).",
        "SDCA-GAP at each line-search sub-precision: sub-optimality against updates / n and "
        "solver seconds, and per sub-precision the mean line-search iterations per update "
        "(bars) and the share of solver time in the line search (line)."),
    Artifact(
        "threads", ("threads",),
        "SDCA-GAP on several threads.",
        "SDCA-GAP (gap sampling, non-uniformity 0.8) on 1, 2, ... threads: log10 relative "
        "sub-optimality (P - P*) / P* against solver seconds, one panel per dataset. The "
        "steps are the same on every thread count (one part, docs/math.md section 9); the "
        "threads run the full-batch passes and the refresh of the stored gaps.",
        "SDCA-GAP on 1, 2, ... threads (the same steps; the passes on the threads): "
        "relative sub-optimality against solver seconds."),
    Artifact(
        "wallclock", ("fig4_methods", CRFSUITE_GROUP),
        "Every method against solver seconds.",
        "Every method with its default options (SDCA samplers, SAG-NUS, SAG-NUS*, OEG, "
        "L-BFGS and, where run, CRFsuite's L-BFGS) against solver seconds, one panel per "
        "dataset. Monitoring (full-batch primal, test error) is excluded from the time. "
        + _THREADS + "; the table crfsuite_speed reads them off at relative sub-optimality "
        "1e-2, 1e-4 and 1e-6.",
        "Every method with its default options against solver seconds (monitoring excluded; "
        "the first interval of a run can include numba compilation if the cache was cold). "
        + _THREADS + "; the table under \"Side by side with CRFsuite\" reads them off at "
        "relative sub-optimality 1e-2, 1e-4 and 1e-6."),
)}

TABLES: dict[str, Artifact] = {a.name: a for a in (
    Artifact(
        "time_to_target", ("fig4_methods", CRFSUITE_GROUP),
        "Time to reach a sub-optimality.",
        "Epochs, oracle calls / n and solver seconds each method (default options) needs to "
        "reach primal sub-optimality P - P* <= 1e-2, 1e-4 and 1e-6 on each dataset: the "
        "first trace checkpoint at or below the target, \"—\" (inf in the CSV) when never "
        "reached within the run's budget. The CSV also has parameter updates / n."),
    Artifact(
        "subprecision", ("subprecision",),
        "Line-search sub-precision (Section 6.2).",
        "Line-search sub-precision study (Section 6.2): for SDCA-GAP at each sub-precision, "
        "the mean line-search iterations per parameter update, the share of solver time in "
        "the line search, and the sub-optimality, updates / n and seconds at the end of the "
        "run."),
    Artifact(
        "optimum", ("fig4_methods",),
        "Reference optima P*.",
        "Reference optimum per dataset: P* used for the sub-optimality curves (the L-BFGS "
        "optimum, or a lower primal value reached by a run), the L-BFGS certificate (gradient "
        "norm and the gap bound ||grad P||^2 / (2 lambda)), and the best primal value of the "
        "traces."),
    Artifact(
        "threads", ("threads",),
        "SDCA-GAP's time to 1e-4 against the number of threads.",
        "Solver seconds at which SDCA-GAP on each number of threads first reaches relative "
        "sub-optimality (P - P*) / P* <= 1e-4 (the first checkpoint at or below it), its "
        "updates / n there, and the speed-up over one thread, measured in the same "
        "reproduction. Each run holds as many cores as threads."),
    Artifact(
        "crfsuite_speed", ("fig4_methods", CRFSUITE_GROUP),
        "Side by side with CRFsuite.",
        "Side by side with CRFsuite: solver seconds at which SDCA, SDCA-GAP, SAG-NUS, OEG, "
        "our L-BFGS and CRFsuite's L-BFGS (python-crfsuite, on exactly our objective; its "
        "primal is its loss / n) first reach relative sub-optimality (P - P*) / P* <= 1e-2, "
        "1e-4 and 1e-6 on each dataset (the first trace checkpoint at or below the target, "
        "nothing interpolated), and the ratio CRFsuite / SDCA-GAP. \"—\" (inf in the CSV): "
        "never reached within the run; \"n/r\": the target is below the precision to which "
        "P* is known; \"> x\" / \"< x\": a bound on the ratio when only one of the two "
        "reaches the target. " + _THREADS + "."),
)}

TABLE1 = Artifact(
    "table1_datasets", (), "Table 1: datasets.",
    "Table 1 of the paper: for each dataset, d (number of weights, A*K + 3*K + K*K), n "
    "(training sequences), N (training tokens), K (labels), A (attributes), a (mean active "
    "attributes per token) and the float64 memory of the pairwise dual marginals, "
    "(N - n) K^2 * 8 bytes. One row with our numbers, one with the paper's; "
    "docs/reproduction/table1.md "
    "explains the differences.")

REPORT = Artifact(
    "report", (), "The reproduction report.",
    "The reproduction report (results/report.md): every figure and table, and each "
    "qualitative claim of the paper with the verdict and numbers computed from the run "
    "traces.")
