"""The readers of files that users share, fuzzed: CRFsuite's data files, CRFsuite's model
files (the crf1dm chunks and their CQDB), crfsdca's HDF5 model and its ``.dual`` state, the
workflow's config with its attribute templates, and ``crfsdca tag``'s input.

Every input either loads into something whose every index is in range, or is refused
with one line naming the file (:mod:`fuzz.targets` says what each reader's answer must
be). Inputs are mutations of seeds made from the vendored corpora and the package's own
writers (:mod:`fuzz.seeds`, :mod:`fuzz.mutate`); worker processes run them, and the
supervisor (:mod:`fuzz.engine`) keeps any input that raises a traceback, crashes the
process, hangs, or allocates past a bound. ``make fuzz`` runs it long; the test suite
runs a short budget and replays the cases kept in ``tests/fuzz/regressions``::

    PYTHONPATH=tests python -m fuzz --inputs 1000000 --jobs 2 --out .venv/fuzz
"""
