"""The vectorizable exp and log are as accurate as libm."""

import numpy as np
from numba import njit

from crfsdca.model.fastmath import fexp, flog, flog_normal, xlogx
from crfsdca.runtime.jit import NJIT


@njit(**NJIT)
def _apply_log(x, out):
    for i in range(x.size):
        out[i] = flog(x[i])


@njit(**NJIT)
def _apply_log_normal(x, out):
    for i in range(x.size):
        out[i] = flog_normal(x[i])


@njit(**NJIT)
def _apply_exp(x, out):
    for i in range(x.size):
        out[i] = fexp(x[i])


@njit(**NJIT)
def _xlogx(x):
    return xlogx(x)


def _ulps(a, b):
    return np.abs(a - b) / np.spacing(np.abs(b))


def test_log_within_one_ulp_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.exp(rng.uniform(-744, 709, 200_000)), rng.random(10_000),
                        [1.0, 2.0, 0.5, np.sqrt(2), 5e-324, 1e-310, np.finfo(float).max]])
    out = np.empty_like(x)
    _apply_log(x, out)
    assert _ulps(out, np.log(x)).max() <= 1.0
    special = np.array([0.0, np.inf])
    _apply_log(special, out[:2])
    assert out[0] == -np.inf and out[1] == np.inf


def test_log_normal_is_log_from_the_smallest_normal_and_its_floor_below():
    rng = np.random.default_rng(2)
    tiny = np.finfo(float).tiny
    x = np.concatenate([np.exp(rng.uniform(np.log(tiny), 709, 100_000)), rng.random(10_000),
                        [tiny, 1.0, np.finfo(float).max]])
    out = np.empty_like(x)
    _apply_log_normal(x, out)
    ref = np.empty_like(x)
    _apply_log(x, ref)
    assert np.array_equal(out, ref)
    below = np.array([0.0, 5e-324, 1e-310, np.nextafter(tiny, 0.0), -1.0])
    _apply_log_normal(below, out[:5])
    assert np.all(out[:5] == np.log(tiny))


def test_exp_within_one_ulp_on_normal_range():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-708, 709.78, 200_000), rng.normal(size=10_000),
                        [0.0, -708.0, 709.78, 709.7827]])
    out = np.empty_like(x)
    _apply_exp(x, out)
    exact = np.exp(x.astype(np.longdouble)).astype(np.float64)  # numpy 1.26's exp: 2 ulps off
    assert _ulps(out, exact).max() <= 1.0
    edge = np.array([-800.0, -np.inf, 710.0, np.inf, np.nan])
    _apply_exp(edge, out[:5])
    assert out[0] == 0.0 and out[1] == 0.0 and out[2] == np.inf and out[3] == np.inf
    assert np.isnan(out[4])


def test_xlogx_convention():
    assert _xlogx(0.0) == 0.0
    assert abs(_xlogx(0.5) - 0.5 * np.log(0.5)) < 1e-16
