"""scikit-learn's estimator protocol for :class:`crfsdca.CRF`, without importing scikit-learn.

Importing ``sklearn.base`` takes about 100 MiB of resident memory and 0.9 s (it imports
scipy.stats, and pandas where installed): as much memory as a default fit's weights and
data on CoNLL-2002 Dutch. A fit, a prediction or a saved model uses nothing of it, so
:class:`Params` gives the estimator what scikit-learn's tools call (``get_params`` and
``set_params`` for ``clone``, searches and pipelines; the tags; a repr that shows the
parameters set; metadata routing), as scikit-learn's developer guide allows any estimator
to; what needs scikit-learn's own classes (the tags, routing, the notebook display)
imports them when called (a notebook's first display of an estimator imports it). Held
to ``BaseEstimator``'s behaviour by ``tests/training/test_params.py``.
"""

from __future__ import annotations

import functools
import inspect
from collections import defaultdict

_ROUTING = ("get_metadata_routing", "_get_metadata_request", "_get_default_requests",
            "_get_class_level_metadata_request_values", "_build_request_for_signature")
"""What scikit-learn's metadata routing asks of an estimator, besides ``set_*_request``."""


class Params:
    """``get_params``/``set_params`` over the parameters of ``__init__``, which stores each
    under its own name, as ``sklearn.base.BaseEstimator`` reads them."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted (as scikit-learn lists them)."""
        signature = inspect.signature(cls.__init__)
        return sorted(p.name for p in signature.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> dict:
        """The parameters of this estimator (with ``deep``, those of estimator-valued
        parameters too, as ``name__parameter``)."""
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params):
        """Set parameters (``name__parameter`` sets an estimator-valued parameter's);
        ValueError naming the valid ones for an unknown name. Returns the estimator."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict = defaultdict(dict)
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. Valid "
                                 f"parameters are: {self._get_param_names()!r}.")
            if delim:
                nested[key][sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def _changed_params(self) -> dict:
        """The parameters whose value differs from the constructor's default (by repr,
        as scikit-learn's repr decides)."""
        defaults = {p.name: p.default
                    for p in inspect.signature(type(self).__init__).parameters.values()}
        return {k: v for k, v in self.get_params(deep=False).items()
                if defaults.get(k, inspect.Parameter.empty) is inspect.Parameter.empty
                or repr(v) != repr(defaults[k])}

    def __repr__(self) -> str:
        """``Name(param=value, ...)`` of the parameters set, wrapped as scikit-learn's
        pretty printer wraps it (80 columns, a parameter never split)."""
        name = type(self).__name__
        items = [f"{k}={v!r}" for k, v in self._changed_params().items()]
        one_line = f"{name}({', '.join(items)})"
        if len(one_line) <= 80:
            return one_line
        indent = len(name) + 1
        width = budget = 80 - indent + 1  # each item takes its length and ", "
        out = [name, "("]
        for j, item in enumerate(items):
            if j == len(items) - 1:  # room for the ")"
                budget -= 1
                width -= 1
            if width < len(item) + 2:
                width = budget
                if j:
                    out.append(",\n" + " " * indent)
            elif j:
                out.append(", ")
            width -= len(item) + 2
            out.append(item)
        return "".join([*out, ")"])

    def __getattr__(self, name: str):
        """Metadata routing (``set_fit_request``, ``get_metadata_routing``...), which
        scikit-learn's ``BaseEstimator`` gets from its routing mixin: taken from that mixin
        when first asked for (``sklearn.set_config(enable_metadata_routing=True)``)."""
        if name in _ROUTING or (name.startswith("set_") and name.endswith("_request")):
            twin = _routing_twin(type(self))
            attr = inspect.getattr_static(twin, name)
            return attr.__get__(self, twin) if hasattr(attr, "__get__") else attr
        prop = inspect.getattr_static(type(self), name, None)
        if isinstance(prop, property):  # it raised an AttributeError (NotFittedError): again
            return prop.__get__(self, type(self))
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __sklearn_tags__(self):
        """``sklearn.base.BaseEstimator``'s tags (scikit-learn >= 1.6 asks for them)."""
        from sklearn.utils import Tags, TargetTags  # lazy: called by scikit-learn, loaded

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None)

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """A notebook's display: scikit-learn's diagram with its text."""
        from sklearn.utils import estimator_html_repr  # lazy: 0.9 s, for a notebook only

        return {"text/plain": repr(self), "text/html": estimator_html_repr(self)}


@functools.cache
def _routing_twin(cls: type) -> type:
    """``cls`` with scikit-learn's routing mixin, whose methods read the estimator's
    methods' signatures (``fit``'s ``sample_weight``...) as for any estimator."""
    from sklearn.utils._metadata_requests import _MetadataRequester  # lazy: asked by sklearn

    return type(cls.__name__, (cls, _MetadataRequester), {"__module__": cls.__module__})
