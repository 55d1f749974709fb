"""CRF++'s and Wapiti's feature templates and column files, from Python.

A template file (CRF++'s ``U01:%x[-1,0]/%x[0,0]`` lines and a bare ``B``, or Wapiti's
pattern file) turns rows of columns into items, the lists of attribute names that
[`CRF.fit`][crfsdca.estimator.CRF.fit] takes; the same file that
``crfsdca learn -T template`` reads. How to come from CRF++ or Wapiti, and the options'
mapping: [the guide](../guide/from-crfpp-and-wapiti.md).

>>> from sklearn.pipeline import make_pipeline
>>> from crfsdca import CRF, templates
>>> train = templates.read_columns("train.data")           # doctest: +SKIP
>>> model = make_pipeline(templates.TemplateFeatures("template"),
...                       CRF(**templates.crfpp_parameters(cost=1.0)))  # doctest: +SKIP
>>> model.fit(train.X, train.y).predict(templates.read_columns("test.data").X)  # doctest: +SKIP

The rules (padding tokens, Wapiti's syntax, what is refused) are those of the guide; a
template or column file that cannot be read raises one
``crfsdca.errors.DataFormatError`` naming the file and the line.
"""

from __future__ import annotations

from pathlib import Path

from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .data.column_templates import (
    Columns,
    Template,
    frequent_attributes,
    keep_attributes,
    parse_template,
    read_columns,
    read_template,
)
from .data.transitions import TRANSITION_PREFIX

__all__ = ["TRANSITION_PREFIX", "Columns", "Template", "TemplateFeatures", "crfpp_parameters",
           "load_template", "read_columns", "wapiti_parameters"]


def load_template(source, dialect: str | None = None) -> Template:
    """A template from a file or from its text.

    Parameters
    ----------
    source : str, path or Template
        A ``Template`` (returned as it is), a
        ``pathlib.Path`` (read), or a str: the template's text where it holds a newline
        or a ``%`` or is a lone ``B`` line, else a file's name.
    dialect : {"crfpp", "wapiti"} or None
        The syntax; None: Wapiti's where the text uses what only Wapiti has (``u``, ``b``
        or ``*`` line types, ``%X``, ``@`` positions), else CRF++'s. It fixes the
        padding tokens read beyond the edges (``_B-1`` or ``_x-1``).

    Raises
    ------
    crfsdca.errors.DataFormatError
        A template that cannot be read, naming the file (``<template>`` for a text) and
        the line.
    """
    if isinstance(source, Template):
        return source
    if isinstance(source, str) and ("\n" in source or "%" in source
                                    or source.strip() in ("B", "b")):
        return parse_template(source, "<template>", dialect)
    return read_template(Path(source), dialect)


def crfpp_parameters(cost: float = 1.0, l1: bool = False) -> dict:
    """[`CRF`][crfsdca.estimator.CRF]'s parameters for CRF++'s model at ``crf_learn -c
    cost`` (``-a CRF-L1`` with ``l1``).

    CRF++ minimizes sum_i NLL_i + ||w||^2 / (2 C) (``-a CRF-L2``, its default) or sum_i
    NLL_i + ||w||_1 / C (``CRF-L1``); crfsdca sum_i NLL_i + c1 ||w||_1 + c2 ||w||^2. So
    c2 = 1 / (2 C), or c1 = 1 / C. CRF++ has a weight for every attribute and label and
    every pair of labels: ``all_possible_states`` and ``all_possible_transitions``; its
    ``B`` lines that read the input are the template's transition attributes
    (``transition_prefix``).
    """
    if not cost > 0:
        raise ValueError(f"cost must be > 0, got {cost!r}")
    reg = {"c1": 1.0 / cost, "c2": 0.0} if l1 else {"c1": 0.0, "c2": 1.0 / (2.0 * cost)}
    return {**reg, "all_possible_states": True, "all_possible_transitions": True,
            "transition_prefix": TRANSITION_PREFIX}


def wapiti_parameters(rho1: float = 0.5, rho2: float = 0.0001) -> dict:
    """[`CRF`][crfsdca.estimator.CRF]'s parameters for Wapiti's model at ``wapiti train
    -1 rho1 -2 rho2`` (the defaults are Wapiti's).

    Wapiti minimizes sum_i NLL_i + rho1 ||w||_1 + rho2 / 2 ||w||^2 (``gradient.c``); so
    c1 = rho1 and c2 = rho2 / 2. Wapiti has a weight for every attribute and label and
    every pair of labels: ``all_possible_states`` and ``all_possible_transitions``; its
    ``b`` and ``*`` lines that read the input are the template's transition attributes
    (``transition_prefix``).
    """
    if not (rho1 >= 0 and rho2 >= 0):
        raise ValueError(f"rho1 and rho2 must be >= 0, got {rho1!r} and {rho2!r}")
    return {"c1": float(rho1), "c2": rho2 / 2.0, "all_possible_states": True,
            "all_possible_transitions": True, "transition_prefix": TRANSITION_PREFIX}


class TemplateFeatures(TransformerMixin, BaseEstimator):
    """A scikit-learn transformer: sequences of rows of columns to items by a template.

    Parameters
    ----------
    template : str, path or Template
        The template, as [`load_template`][crfsdca.templates.load_template] takes it.
    dialect : {"crfpp", "wapiti"} or None
        The template's syntax (None: told from the text).
    min_freq : int, default 1
        CRF++'s ``-f``: attributes generated fewer times than this in the data given to
        ``fit`` are left out (a cut-off on each string, whatever its label).

    Attributes
    ----------
    template_ : Template
        The parsed template.
    vocabulary_ : set of str or None
        With ``min_freq`` > 1, the attributes kept; None otherwise.

    Notes
    -----
    ``X`` is a list of sequences, each a list of rows, each row the observation columns
    of a token (the label is in ``y``): what [`read_columns`][crfsdca.templates.read_columns]
    returns as ``X``. A row that is a str is one column.
    """

    def __init__(self, template=None, dialect: str | None = None, min_freq: int = 1):
        self.template = template
        self.dialect = dialect
        self.min_freq = min_freq

    def _items(self, X):
        return self.template_.items(X)

    def fit(self, X, y=None):
        """Parse the template (and count the attributes, with ``min_freq`` > 1)."""
        self.fit_transform(X, y)
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """``fit``, then the items of ``X``, generated once."""
        if self.template is None:
            raise ValueError("TemplateFeatures needs a template (a file, or its text)")
        if not (isinstance(self.min_freq, int) and self.min_freq >= 1):
            raise ValueError(f"min_freq must be an integer >= 1, got {self.min_freq!r}")
        self.template_ = load_template(self.template, self.dialect)
        items = self._items(X)
        self.vocabulary_ = None
        if self.min_freq > 1:
            self.vocabulary_ = frequent_attributes(items, self.min_freq)
            items = keep_attributes(items, self.vocabulary_)
        return items

    def transform(self, X):
        """The items of ``X``: for each token, the template's attributes (less those cut
        by ``min_freq``)."""
        check_is_fitted(self, "template_")
        items = self._items(X)
        if self.vocabulary_ is not None:
            items = keep_attributes(items, self.vocabulary_)
        return items
