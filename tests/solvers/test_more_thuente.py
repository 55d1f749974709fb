"""liblbfgs's More-Thuente line search (CRFsuite's default): its steps on functions whose
minimizer is known, and the strong Wolfe conditions at every point it accepts. That it
takes CRFsuite's steps is tested against python-crfsuite itself, iterate by iterate, in
test_lbfgs_crfsuite.py."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crfsdca.solvers.more_thuente import more_thuente, trial_step

FTOL, GTOL = 1e-4, 0.9


def counted(f):
    """phi for a scalar function given as t -> (f(t), f'(t)), with its evaluations."""
    calls = []

    def phi(t):
        value, slope = f(t)
        calls.append(t)
        return value, np.array([slope]), slope

    return phi, calls


def test_a_step_that_meets_the_conditions_is_taken_as_it_is():
    phi, calls = counted(lambda t: ((t - 2) ** 2, 2 * (t - 2)))
    assert more_thuente(phi, 4.0, -4.0, 1.0, FTOL, GTOL, 20)[0] == 1.0
    assert calls == [1.0]


def test_on_a_quadratic_the_interpolation_lands_on_the_minimizer():
    """A step too long (f rises): the cubic and the quadratic through the two points are
    the function itself, both give 2, and the second evaluation is the minimizer."""
    phi, calls = counted(lambda t: ((t - 2) ** 2, 2 * (t - 2)))
    t, f, _ = more_thuente(phi, 4.0, -4.0, 10.0, FTOL, GTOL, 20)
    assert calls == [10.0, t] and t == pytest.approx(2.0, rel=1e-12) and f < 1e-20


def test_a_step_too_short_grows_by_at_most_four_times_the_interval():
    """Still falling as steeply (case 4, not bracketed): the next trial is the end of the
    allowed range, t + 4 (t - 0)."""
    phi, calls = counted(lambda t: (-t, -1.0) if t < 3 else (t - 6, 1.0))
    more_thuente(phi, 0.0, -1.0, 0.5, FTOL, GTOL, 20)
    assert calls[:2] == [0.5, 2.5]


def test_errors_are_none():
    phi, _ = counted(lambda t: (-t, -1.0))  # unbounded below: the step hits its bound
    assert more_thuente(phi, 0.0, -1.0, 1.0, FTOL, GTOL, 20) is None
    assert more_thuente(phi, 0.0, 1.0, 1.0, FTOL, GTOL, 20) is None  # not a descent
    phi, calls = counted(lambda t: ((t - 2) ** 2, 2 * (t - 2)))
    assert more_thuente(phi, 4.0, -4.0, 10.0, FTOL, GTOL, 1) is None and len(calls) == 1


def test_a_point_where_f_is_not_finite_is_halved_towards_the_best():
    phi, calls = counted(lambda t: (math.inf, math.nan) if t > 4 else ((t - 1) ** 2, 2 * (t - 1)))
    t, f, _ = more_thuente(phi, 1.0, -2.0, 16.0, FTOL, GTOL, 20)
    assert calls[:2] == [16.0, 8.0] and abs(2 * (t - 1)) <= GTOL * 2.0


def test_the_trial_step_leaves_everything_as_it_was_for_a_trial_outside_the_bracket():
    out = trial_step(0.0, 1.0, -1.0, 2.0, 3.0, 1.0, 5.0, 0.0, 0.0, 0.0, 2.0, True)
    assert out == (0.0, 1.0, -1.0, 2.0, 3.0, 1.0, 5.0, True, False)


def smooth_convex(terms, curvature):
    """t -> (f(t), f'(t)) of f(t) = sum_j c_j log(1 + exp(a_j t + b_j)) + curvature t^2 / 2
    - s t, s chosen so that f'(0) = -1."""
    def f(t):
        value, slope = curvature * t * t / 2, curvature * t
        for a, b, c in terms:
            z = a * t + b
            value += c * (max(z, 0.0) + math.log1p(math.exp(-abs(z))))
            slope += c * a / (1.0 + math.exp(-z)) if z > -700 else 0.0
        return value, slope

    shift = f(0.0)[1] + 1.0
    return lambda t: (f(t)[0] - shift * t, f(t)[1] - shift)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(-20, 20), st.floats(-20, 20), st.floats(0.01, 10)),
                min_size=1, max_size=6),
       st.floats(1e-4, 10), st.floats(1e-6, 1e3))
def test_a_point_it_accepts_meets_the_strong_wolfe_conditions(terms, curvature, step):
    """On a smooth convex function: an accepted point meets both conditions; a failure is
    one of liblbfgs's error exits, which evaluate the best step again (an interval that
    no longer shrinks, a trial outside it) or spend the evaluations."""
    f = smooth_convex(terms, curvature)
    phi, calls = counted(f)
    f0 = f(0.0)[0]
    found = more_thuente(phi, f0, -1.0, step, FTOL, GTOL, 20)
    assert len(calls) <= 20
    if found is None:
        assert calls[-1] in calls[:-1] or len(calls) == 20
    else:
        t, value, grad = found
        assert value <= f0 - FTOL * t and abs(grad[0]) <= GTOL


def test_it_succeeds_on_nearly_every_smooth_convex_function():
    """liblbfgs's search fails now and then (where the curvature test misses by a hair
    and its cubic step falls back to the interval's lower end): on 500 random functions,
    at most 1% of the searches (none, when written), and none takes more than 20
    evaluations."""
    rng = np.random.default_rng(7)
    fails = 0
    for _ in range(500):
        m = rng.integers(1, 7)
        terms = list(zip(rng.uniform(-20, 20, m), rng.uniform(-20, 20, m),
                         rng.uniform(0.01, 10, m), strict=True))
        f = smooth_convex(terms, rng.uniform(1e-4, 10))
        phi, calls = counted(f)
        fails += more_thuente(phi, f(0.0)[0], -1.0, 10 ** rng.uniform(-6, 3), FTOL, GTOL,
                              20) is None
    assert fails <= 5
