"""The ``dump`` command: a model in plain text (CRFsuite's ``crfsuite dump``)."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model file")


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for its --help (numpy, numba, h5py)
    import numpy as np

    from ..formats.hdf5_model import FORMAT, FORMAT_VERSION
    from ..model_file import load_model

    m = load_model(args.model)
    w, layout = m.weights, m.layout
    out = sys.stdout
    E, B, W = layout.emission(w), layout.bias(w), layout.transition(w)
    write = out.write
    fmt = ("crfsuite (CRFsuite's binary model)" if m.options.get("format") == "crfsuite"
           else f"{FORMAT} {FORMAT_VERSION if m.transition_attributes else 1}")
    write(f"FILEHEADER = {{\n  format: {fmt}\n"
          f"  num_features: {int(np.count_nonzero(w))}\n  num_labels: {len(m.labels)}\n"
          f"  num_attrs: {len(m.attributes)}\n  options: {json.dumps(m.options)}\n"
          f"  training: {json.dumps(m.training)}\n}}\n\n")
    write("LABELS = {\n" + "".join(f"  {i:5d}: {s}\n" for i, s in enumerate(m.labels))
          + "}\n\n")
    write("ATTRIBUTES = {\n" + "".join(f"  {i:5d}: {s}\n" for i, s in enumerate(m.attributes))
          + "}\n\n")
    write("TRANSITIONS = {\n")
    for k, j in zip(*np.nonzero(W), strict=True):
        write(f"  (1) {m.labels[k]} --> {m.labels[j]}: {W[k, j]:f}\n")
    write("}\n\n")
    if m.transition_attributes:  # B templates that read the input (version 2)
        write("TRANSITION_ATTRIBUTES = {\n" + "".join(
            f"  {i:5d}: {s}\n" for i, s in enumerate(m.transition_attributes)) + "}\n\n")
        write("TRANSITION_FEATURES = {\n")
        WB = layout.edges(w)
        for e, k, j in zip(*np.nonzero(WB), strict=True):
            write(f"  (2) {m.transition_attributes[e]}: {m.labels[k]} --> {m.labels[j]}: "
                  f"{WB[e, k, j]:f}\n")
        write("}\n\n")
    if np.any(B):
        write("BIAS = {\n")
        for k, c in zip(*np.nonzero(B), strict=True):
            where = ("every", "first", "last")[c]
            write(f"  ({where}) {m.labels[k]}: {B[k, c]:f}\n")
        write("}\n\n")
    write("STATE_FEATURES = {\n")
    for a, k in zip(*np.nonzero(E), strict=True):
        write(f"  (0) {m.attributes[a]} --> {m.labels[k]}: {E[a, k]:f}\n")
    write("}\n\n")
    return 0
