"""CRFsuite-style attribute extraction from templates.

A *template* is a tuple of (field, offset) pairs. At token t it generates one attribute
string, as CRFsuite's example extractors (``crfutils.apply_templates``) do::

    name  = '|'.join('%s[%d]' % (field, offset) for field, offset in template)
    value = '|'.join(fields[field][t + offset] for field, offset in template)
    attribute = name + '=' + value            # e.g. 'w[-1]|w[0]=the|cat'

An attribute is not generated when some t + offset falls outside the sentence (no padding
words are invented), nor when a field has no value at that token (flag fields below are
defined only where the flag is true).

Fields are the reader's columns (``w`` the word, ``pos`` the part of speech...) and these
fields derived from the word ``w``:

========== =============================================================================
``lower``   the word in lowercase
``preN``    its first N characters (the whole word if it is shorter), N = 1, 2, ...
``sufN``    its last N characters (the whole word if it is shorter)
``shape``   character classes with repeats collapsed: upper X, lower x, digit d, other
            characters kept (``Mr.`` -> ``Xx.``, ``1,200`` -> ``d,d``)
``digit``   ``1`` if the word contains a digit (undefined otherwise)
``hyphen``  ``1`` if the word contains ``-`` (undefined otherwise)
``title``   ``1`` if the word starts with an uppercase letter (undefined otherwise)
``upper``   ``1`` if every cased character is uppercase (undefined otherwise)
========== =============================================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from crfsdca.errors import ConfigError

Template = tuple[tuple[str, int], ...]

_AFFIX = re.compile(r"^(pre|suf)([1-9][0-9]*)$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _shape(word: str) -> str:
    out = []
    last = ""
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if c != last:
            out.append(c)
            last = c
    return "".join(out)


def _flag(pred: Callable[[str], bool]) -> Callable[[str], str | None]:
    return lambda w: "1" if pred(w) else None


_DERIVED: dict[str, Callable[[str], str | None]] = {
    "lower": str.lower,
    "shape": _shape,
    "digit": _flag(lambda w: any(c.isdigit() for c in w)),
    "hyphen": _flag(lambda w: "-" in w),
    "title": _flag(lambda w: w[:1].isupper()),
    "upper": _flag(str.isupper),
}

DERIVED_FIELDS = (*_DERIVED, "preN", "sufN")


def _derived_function(name: str) -> Callable[[str], str | None] | None:
    if name in _DERIVED:
        return _DERIVED[name]
    m = _AFFIX.match(name)
    if m:
        k = int(m.group(2))
        return (lambda w: w[:k]) if m.group(1) == "pre" else (lambda w: w[-k:])
    return None


def parse_templates(spec: Sequence) -> list[Template]:
    """Validate templates from config (lists of [field, offset] pairs) into tuples."""
    if not isinstance(spec, Sequence) or isinstance(spec, str):
        raise ConfigError(f"templates must be a list of templates, got {spec!r}")
    out: list[Template] = []
    for i, tmpl in enumerate(spec):
        if not isinstance(tmpl, Sequence) or isinstance(tmpl, str) or not tmpl:
            raise ConfigError(f"template {i}: expected a non-empty list of [field, offset] "
                              f"pairs, got {tmpl!r}")
        pairs = []
        for pair in tmpl:
            if (not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2
                    or not isinstance(pair[0], str) or not _FIELD_NAME.match(pair[0])
                    or isinstance(pair[1], bool) or not isinstance(pair[1], int)):
                raise ConfigError(f"template {i}: expected [field, integer offset], got {pair!r}")
            pairs.append((pair[0], int(pair[1])))
        out.append(tuple(pairs))
    return out


def template_name(template: Template) -> str:
    """The attribute-name part of a template, e.g. ``w[-1]|w[0]``."""
    return "|".join(f"{f}[{o}]" for f, o in template)


def template_fields(templates: Sequence[Template]) -> list[str]:
    """Fields the templates use, in first-use order."""
    seen: dict[str, None] = {}
    for t in templates:
        for f, _ in t:
            seen.setdefault(f, None)
    return list(seen)


def check_fields(templates: Sequence[Template], columns: Sequence[str]) -> None:
    """ConfigError unless every field the templates use is a column of the reader's data
    (``columns``) or a derived field (of the word column ``w``): a typo in config.yaml is
    found when the workflow reads it, not when featurize runs."""
    for f in template_fields(templates):
        if f in columns:
            continue
        if _derived_function(f) is None:
            raise ConfigError(f"template field {f!r} is neither a column of the data "
                              f"({', '.join(columns) or 'none'}) nor a derived field "
                              f"({', '.join(DERIVED_FIELDS)})")
        if "w" not in columns:
            raise ConfigError(f"derived field {f!r} needs the word column 'w'")


class Extractor:
    """Applies a list of templates to sentences (a dict of per-token field lists)."""

    def __init__(self, templates: Sequence[Template]):
        self.templates = [tuple(t) for t in templates]
        self._compiled = [
            (template_name(t) + "=", t, min(o for _, o in t), max(o for _, o in t))
            for t in self.templates
        ]
        self.fields = template_fields(self.templates)
        self._cache: dict[str, dict[str, str | None]] = {f: {} for f in self.fields}

    def _field_values(self, fields: dict[str, list[str]]) -> dict[str, list[str | None]]:
        out: dict[str, list[str | None]] = {}
        for f in self.fields:
            if f in fields:
                out[f] = fields[f]
                continue
            fn = _derived_function(f)
            if fn is None:
                raise ConfigError(f"template field {f!r} is neither a column of the data "
                                  f"({', '.join(fields) or 'none'}) nor a derived field "
                                  f"({', '.join(DERIVED_FIELDS)})")
            if "w" not in fields:
                raise ConfigError(f"derived field {f!r} needs the word column 'w'")
            cache = self._cache[f]
            vals = []
            for w in fields["w"]:
                v = cache.get(w, cache)  # the cache itself as a 'missing' sentinel
                if v is cache:
                    v = cache[w] = fn(w)
                vals.append(v)
            out[f] = vals
        return out

    def __call__(self, fields: dict[str, list[str]], n_tokens: int) -> list[list[str]]:
        """Attribute strings of every token of one sentence, in template order per token."""
        values = self._field_values(fields)
        out: list[list[str]] = [[] for _ in range(n_tokens)]
        for prefix, tmpl, omin, omax in self._compiled:
            lo, hi = max(0, -omin), min(n_tokens, n_tokens - omax)
            if len(tmpl) == 1:
                (f, o), = tmpl
                col = values[f]
                for t in range(lo, hi):
                    v = col[t + o]
                    if v is not None:
                        out[t].append(prefix + v)
            else:
                cols = [(values[f], o) for f, o in tmpl]
                for t in range(lo, hi):
                    vs = [c[t + o] for c, o in cols]
                    if None not in vs:
                        out[t].append(prefix + "|".join(vs))
        return out
