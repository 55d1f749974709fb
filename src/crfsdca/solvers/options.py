"""Solver options declared once: each is a name, a type, a default, a range or choices, a help.

An :class:`OptionTable` is the single source of a solver's options (CRFsuite's
``exchange_options`` does the same for its trainers): from it come the solver's
defaults and validation (:meth:`OptionTable.resolve`), the ``train`` command's flags
(:meth:`OptionTable.add_arguments`), the workflow's validation of experiment runs and
their directory names, the estimator's parameters, and the report's method labels
(:meth:`OptionTable.label_parts`). The tables themselves are in
:mod:`crfsdca.solvers.registry`; this module is pure Python, so the workflow can import
it without numba.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError

_BOUNDS = re.compile(r"^\s*([\[(])\s*(-?inf|[-+0-9.e]+)\s*,\s*(-?inf|[-+0-9.e]+)\s*([\])])\s*$")


def short_number(x: float) -> str:
    """A number as labels show it: 1e-4, 2.5e-5, 0.5, 10."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if 0.1 < abs(x) < 1e4:
        return f"{x:g}"
    mantissa, exponent = f"{x:.6e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def _parse_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


@dataclass(frozen=True)
class Option:
    """One option of a solver.

    ``bounds`` is an interval such as ``"(0, 1]"`` or ``"[0, inf)"`` (numbers only);
    ``nullable`` admits None (meaning "derive it", e.g. the theoretical step size);
    ``trajectory`` says whether the option changes what the solver computes (options
    that do not, such as a counting convention, never name a run). ``label`` is how a
    non-default value reads in a method label: a format string with ``{value}``, a
    mapping from values to text, or a function (value, all options) -> text; ``None``
    gives ``name=value``. ``relevant`` says, from all options, whether this one plays a
    role (the non-uniformity does not for uniform sampling); an irrelevant option is left
    out of labels. ``shared`` options keep their name on the command line when the table
    has a prefix (one ``--store-dtype`` for several solvers). ``crfsuite`` is the name of
    the CRFsuite parameter the option is (``num_memories``), which the estimator and
    ``learn`` take, its value names translated by ``crfsuite_values``
    (``{"MoreThuente": "more-thuente"}``); ``crfsuite_default`` is the value that does what
    CRFsuite does, the estimator's and ``learn``'s default (None: the table's).
    """

    name: str
    kind: type
    default: object
    help: str
    choices: tuple[str, ...] | None = None
    bounds: str | None = None
    nullable: bool = False
    trajectory: bool = True
    label: str | Mapping | Callable | None = None
    relevant: Callable[[dict], bool] | None = None
    shared: bool = False
    crfsuite: str | None = None
    crfsuite_default: object = None
    crfsuite_values: Mapping | None = None
    _interval: tuple = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self):
        if self.bounds is not None:
            m = _BOUNDS.match(self.bounds)
            if not m:
                raise ValueError(f"option {self.name}: bad bounds {self.bounds!r}")
            object.__setattr__(self, "_interval", (m.group(1) == "[", float(m.group(2)),
                                                   float(m.group(3)), m.group(4) == "]"))
        if self.default is not None or not self.nullable:
            self.parse(self.default)  # a default must pass its own checks

    def parse(self, value):
        """``value`` (from a command line, a YAML file or Python) as this option's type.

        Raises ValueError saying what was expected.
        """
        if value is None:
            if self.nullable:
                return None
            raise ValueError("a value is required")
        if self.kind is bool:
            return _parse_bool(value)
        if self.kind is str:
            text = str(value)
            if self.choices is not None and text not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}; got {text!r}")
            return text
        if isinstance(value, bool):
            raise ValueError(f"expected a number, got {value!r}")
        try:
            number = self.kind(value) if self.kind is float else _to_int(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected {'an integer' if self.kind is int else 'a number'}, "
                             f"got {value!r}") from None
        if self.kind is float and math.isnan(number):
            raise ValueError("expected a number, got nan")
        if self._interval:
            lo_closed, lo, hi, hi_closed = self._interval
            ok_lo = number >= lo if lo_closed else number > lo
            ok_hi = number <= hi if hi_closed else number < hi
            if not (ok_lo and ok_hi):
                what = "a finite value" if math.isinf(number) else "a value"
                raise ValueError(f"expected {what} in {self.bounds}, got {value!r}")
        return number

    def from_crfsuite(self, value):
        """A CRFsuite value of the option (its value names translated), checked."""
        if self.crfsuite_values is not None and value in self.crfsuite_values:
            value = self.crfsuite_values[value]
        return self.parse(value)

    def describe(self) -> str:
        """The help text with the option's range or choices and its default."""
        what = self.help
        if self.bounds is not None:
            what += f"; in {self.bounds}"
        default = "none" if self.default is None else self.default
        return f"{what} (default {default})"

    def label_text(self, value, options: dict) -> str:
        if callable(self.label):
            return self.label(value, options)
        shown = short_number(value) if isinstance(value, float) else value
        if isinstance(self.label, Mapping):
            return self.label.get(value, f"{self.name}={shown}")
        if isinstance(self.label, str):
            return self.label.format(value=shown)
        return f"{self.name}={shown}"


def _to_int(value) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
        return int(value)
    return int(str(value).strip())


class OptionTable:
    """The options of one solver, in declaration order.

    ``prefix`` is put before the names of the options on the command line and in
    experiment runs (``sag`` gives ``--sag-decrease`` and the run key ``sag_decrease``),
    so that solvers can share one command line.
    """

    def __init__(self, solver: str, options: Iterable[Option], prefix: str = ""):
        self.solver = solver
        self.options = tuple(options)
        self.prefix = prefix
        self._by_name = {o.name: o for o in self.options}
        if len(self._by_name) != len(self.options):
            raise ValueError(f"{solver}: an option is declared twice")
        self._by_key = {self.key(o.name): o for o in self.options}

    def __getitem__(self, name: str) -> Option:
        return self._by_name[name]

    def __iter__(self):
        return iter(self.options)

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def key(self, name: str) -> str:
        """The option's key in experiment runs (and, with dashes, its command-line flag)."""
        option = self._by_name[name]
        return name if option.shared or not self.prefix else f"{self.prefix}_{name}"

    def flag(self, name: str) -> str:
        return "--" + self.key(name).replace("_", "-")

    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}

    def check(self, name: str, value):
        """``value`` parsed for option ``name``; a ConfigError names the solver and option."""
        try:
            return self._by_name[name].parse(value)
        except ValueError as e:
            raise ConfigError(f"{self.solver} option {name}: {e}") from None

    def resolve(self, given: Mapping | None = None, keys: bool = False) -> dict:
        """All options, defaults filled in and every given value checked.

        ``given`` maps option names (or, with ``keys``, run keys such as ``sag_decrease``)
        to values; an unknown name is a ConfigError that lists the known ones.
        """
        lookup = self._by_key if keys else self._by_name
        out = self.defaults()
        for name, value in (given or {}).items():
            option = lookup.get(name)
            if option is None:
                raise ConfigError(self.unknown(name, keys))
            out[option.name] = self.check(option.name, value)
        return out

    def unknown(self, name: str, keys: bool = False) -> str:
        known = list(self._by_key if keys else self._by_name)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return (f"{self.solver} has no option {name!r}{hint}; its options are "
                f"{', '.join(known) or 'none'}")

    def non_default(self, values: Mapping, trajectory_only: bool = True) -> dict:
        """The options whose value differs from the default (and change the trajectory)."""
        return {o.name: values[o.name] for o in self.options
                if o.name in values and values[o.name] != o.default
                and (o.trajectory or not trajectory_only)}

    def changed(self, values: Mapping, skip: Iterable[str] = ()) -> list[str]:
        """Names of the options away from their default that play a role (in order)."""
        full = {**self.defaults(), **values}
        return [o.name for o in self.options
                if o.name not in skip and not _same(full[o.name], o.default)
                and (o.relevant is None or o.relevant(full))]

    def label_parts(self, values: Mapping, skip: Iterable[str] = ()) -> list[str]:
        """Label fragments of the changed options (see :meth:`changed`)."""
        full = {**self.defaults(), **values}
        texts = (self[name].label_text(full[name], full) for name in self.changed(full, skip))
        return [t for t in texts if t]

    def add_arguments(self, group, seen: set[str] | None = None) -> None:
        """The table's flags in an argparse group; each parses and checks its value.

        Defaults are left out of the namespace (``argparse.SUPPRESS``), so that the
        command knows which options were given; :meth:`resolve` fills them in. Flags in
        ``seen`` (shared with a table added before) are skipped.
        """
        for o in self.options:
            flag = self.flag(o.name)
            if seen is not None:
                if flag in seen:
                    continue
                seen.add(flag)
            kwargs = dict(dest=self.key(o.name), default=argparse.SUPPRESS, help=o.describe(),
                          type=_argparse_type(o))
            if o.choices is not None:
                kwargs["metavar"] = "{" + ",".join(o.choices) + "}"
            elif o.kind is not str:
                kwargs["metavar"] = o.kind.__name__.upper()
            if o.kind is bool:
                kwargs.update(nargs="?", const=True, metavar="BOOL")
            group.add_argument(flag, **kwargs)

    def given_in(self, namespace: argparse.Namespace) -> dict:
        """{option name: value} of this table's flags given on a command line."""
        return {o.name: getattr(namespace, self.key(o.name)) for o in self.options
                if hasattr(namespace, self.key(o.name))}


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-12)
    return a == b


def _argparse_type(option: Option):
    def parse(text: str):
        if option.nullable and text.strip().lower() in ("none", "null"):
            return None
        try:
            return option.parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = option.kind.__name__
    return parse
