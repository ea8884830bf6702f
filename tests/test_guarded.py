"""Compiled code touches only its own buffers: every input (and, through the C
ABI, every output) sits flush against a PROT_NONE guard page (tests/guarded.py),
so one element read or written past either end is a SIGSEGV, and a write into an
input (mapped read-only) is one too.

Each group of cases runs in a child process (`python tests/test_guarded.py
GROUP`); a crash fails the group's test naming the case that was running. A
case runs its function through

  * jx.jit, inputs against the trailing guard and then the leading one;
  * the same jit-compiled code called directly with guarded outputs too;
  * an artifact built by `jx compile`'s path holding every case of the group,
    through jx.runtime's entry and through the C symbol with guarded outputs;

and checks every result against NumPy. Shapes are the awkward ones: vector
tails (1, 7, 13, 17, 31, 33, 63, 65, 127, 129, 1023, 1025) and 2-D/3-D shapes
whose rows end mid-vector.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import guarded

TESTS = Path(__file__).resolve().parent
SAMPLES = TESTS.parent / "samples"

SIZES = (1, 7, 13, 17, 31, 33, 63, 65, 127, 129, 1023, 1025)
SHAPES2 = ((3, 17), (33, 65), (1, 129), (65, 1), (7, 1025))
SIDES = ("end", "start")


@dataclass
class Case:
    name: str
    fn: Callable           # jx.numpy code
    ref: Callable          # the same computation in NumPy
    args: tuple            # NumPy inputs
    rtol: float = 1e-5
    atol: float = 1e-6


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _tag(shape) -> str:
    return "x".join(map(str, shape)) if isinstance(shape, tuple) else str(shape)


def _f32(rng, shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _jnp():
    import jx.numpy as jnp
    return jnp


# -- groups of cases ---------------------------------------------------------------

def elementwise_cases() -> list:
    jnp, out = _jnp(), []
    for s in SIZES + SHAPES2:
        shape = s if isinstance(s, tuple) else (s,)
        name = f"ew_f32_{_tag(s)}"
        r = _rng(name)
        out.append(Case(name, lambda x, y: jnp.tanh(x) * y + jnp.exp(-jnp.abs(x))
                        - jnp.sqrt(jnp.abs(y)),
                        lambda x, y: np.tanh(x) * y + np.exp(-np.abs(x)) - np.sqrt(np.abs(y)),
                        (_f32(r, shape), _f32(r, shape))))
        name = f"ew_i32_{_tag(s)}"
        r = _rng(name)
        ints = lambda: r.integers(-1000, 1000, shape).astype(np.int32)  # noqa: E731
        out.append(Case(name, lambda x, y: jnp.where(x > y, x - y, y * 3) + (x & 7),
                        lambda x, y: np.where(x > y, x - y, y * 3) + (x & 7), (ints(), ints())))
        if len(shape) == 2:
            name = f"ew_bcast_{_tag(s)}"
            r = _rng(name)
            out.append(Case(name, lambda x, b, c: jnp.maximum(x * b + c, 0.0),
                            lambda x, b, c: np.maximum(x * b + c, np.float32(0)),
                            (_f32(r, shape), _f32(r, shape[1:]), _f32(r, shape[:1] + (1,)))))
    for s in (7, 33, 1025, (3, 17)):
        shape = s if isinstance(s, tuple) else (s,)
        name = f"ew_f64_{_tag(s)}"
        r = _rng(name)
        out.append(Case(name, lambda x: jnp.log1p(x * x) / (1.0 + jnp.abs(x)),
                        lambda x: np.log1p(x * x) / (1.0 + np.abs(x)),
                        (r.standard_normal(shape),), rtol=1e-12, atol=1e-14))
        name = f"ew_u8_bool_{_tag(s)}"
        r = _rng(name)
        u8 = lambda: r.integers(0, 256, shape).astype(np.uint8)  # noqa: E731
        out.append(Case(name, lambda x, y: (x + y, (x > y) ^ (y > 100)),
                        lambda x, y: (x + y, (x > y) ^ (y > 100)), (u8(), u8())))
        name = f"ew_f16_mask_{_tag(s)}"
        r = _rng(name)
        h = r.uniform(-4, 4, shape).astype(np.float16)
        out.append(Case(name, lambda h, m, y: (h * 2.0 + 1.0, h.astype(jnp.float32),
                                               jnp.where(m, y, -y), jnp.sum(h)),
                        lambda h, m, y: (h * np.float16(2) + np.float16(1), h.astype(np.float32),
                                         np.where(m, y, -y), h.astype(np.float32).sum()),
                        (h, r.random(shape) < 0.5, _f32(r, shape)), rtol=2e-3, atol=2e-2))
        name = f"ew_ints_{_tag(s)}"
        r = _rng(name)
        i64, u32 = r.integers(-2**40, 2**40, shape), r.integers(0, 2**32, shape, dtype=np.uint32)
        i8 = r.integers(-128, 128, shape).astype(np.int8)
        out.append(Case(name, lambda a, b, c: (a * 3 - (a >> 2), b ^ (b >> 3), c + c,
                                               jnp.sum(a), jnp.max(b), c.astype(jnp.int32) * 5),
                        lambda a, b, c: (a * 3 - (a >> 2), b ^ (b >> 3), c + c, a.sum(), b.max(),
                                         c.astype(np.int32) * 5),
                        (i64, u32, i8)))
    return out


def _softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layernorm(x, g, b):
    jnp = _jnp()
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jnp.rsqrt(var + 1e-5) * g + b


def _layernorm_ref(x, g, b):
    x = x.astype(np.float64)
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


def reduction_cases() -> list:
    jnp, out = _jnp(), []
    for n in SIZES:
        name = f"red_{n}"
        out.append(Case(name, lambda x: (jnp.sum(x), jnp.max(x), jnp.argmax(x), jnp.argmin(x),
                                         jnp.mean(x)),
                        lambda x: (x.sum(dtype=np.float64), x.max(), np.int32(x.argmax()),
                                   np.int32(x.argmin()), x.mean(dtype=np.float64)),
                        (_f32(_rng(name), (n,)),), rtol=1e-5, atol=1e-4))
        name = f"red_i32_{n}"
        out.append(Case(name, lambda x: (jnp.sum(x), jnp.min(x)), lambda x: (x.sum(), x.min()),
                        (_rng(name).integers(-99, 99, n).astype(np.int32),)))
    for shape in SHAPES2 + ((3, 17, 33),):
        name = f"red_axes_{_tag(shape)}"
        out.append(Case(name, lambda x: (jnp.sum(x, axis=0), jnp.sum(x, axis=-1),
                                         jnp.max(x, axis=0), jnp.argmax(x, axis=-1),
                                         jnp.argmax(x, axis=0), jnp.mean(x, axis=-1)),
                        lambda x: (x.sum(0, dtype=np.float64), x.sum(-1, dtype=np.float64),
                                   x.max(0), x.argmax(-1).astype(np.int32),
                                   x.argmax(0).astype(np.int32), x.mean(-1, dtype=np.float64)),
                        (_f32(_rng(name), shape),), rtol=1e-5, atol=1e-4))
        name = f"layernorm_{_tag(shape)}"
        r = _rng(name)
        out.append(Case(name, _layernorm, _layernorm_ref,
                        (_f32(r, shape), _f32(r, shape[-1:]), _f32(r, shape[-1:])),
                        rtol=1e-4, atol=1e-4))
        name = f"softmax_{_tag(shape)}"
        out.append(Case(name, lambda x: jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
                        / jnp.sum(jnp.exp(x - jnp.max(x, axis=-1, keepdims=True)), axis=-1,
                                  keepdims=True),
                        _softmax_ref, (_f32(_rng(name), shape),), rtol=1e-5, atol=1e-6))
    return out


def _shifted_update(x):
    y = x.copy()
    y[1:, :-1] = x[:-1, 1:] * 2
    return y


def _last_row_add(x):
    y = x.copy()
    y[-1:, :] += np.float32(1.0)
    return y


def layout_cases() -> list:
    jnp, out = _jnp(), []
    for n in SIZES:
        name = f"layout_{n}"
        out.append(Case(name, lambda x, y: (jnp.pad(x, (2, 3), constant_values=1.5), x[::-1],
                                            x[1::2], jnp.concatenate([x, y, x[:1]])),
                        lambda x, y: (np.pad(x, (2, 3), constant_values=np.float32(1.5)),
                                      x[::-1], x[1::2], np.concatenate([x, y, x[:1]])),
                        (_f32(_rng(name), (n,)), _f32(_rng(name + "y"), (n + 2,)))))
    for shape in SHAPES2:
        name = f"layout_{_tag(shape)}"
        out.append(Case(name, lambda x, y: (x.T, jnp.pad(x, ((1, 2), (3, 0))),
                                            jnp.concatenate([x, y[:-1]], axis=1),
                                            jnp.concatenate([x, x[::-1]], axis=0), x[::-1, 1:],
                                            jnp.reshape(x.T, (-1,)),
                                            x.at[1:, :-1].set(x[:-1, 1:] * 2),
                                            x.at[-1:, :].add(1.0)),
                        lambda x, y: (x.T, np.pad(x, ((1, 2), (3, 0))),
                                      np.concatenate([x, y[:-1]], axis=1),
                                      np.concatenate([x, x[::-1]], axis=0), x[::-1, 1:],
                                      x.T.reshape(-1), _shifted_update(x), _last_row_add(x)),
                        (_f32(_rng(name), shape), _f32(_rng(name + "y"), (shape[0] + 1, 5)))))
    r = _rng("edges")
    z0, z03, z30, b05, c3 = (np.zeros((0,), np.float32), np.zeros((0, 3), np.float32),
                             np.zeros((3, 0), np.float32), np.zeros((0, 5), np.float32),
                             _f32(r, (3,)))
    out.append(Case("size_zero", lambda z0, z03, z30, b05, c3: (
                        jnp.tanh(z0) + 1.0, jnp.sum(z03, axis=0), jnp.sum(z03), z30 @ b05,
                        jnp.concatenate([z0, c3]), jnp.sort(z0), jnp.cumsum(z30, axis=1)),
                    lambda z0, z03, z30, b05, c3: (
                        z0, np.zeros(3), np.float32(0), np.zeros((3, 5)), c3, z0, z30),
                    (z0, z03, z30, b05, c3)))
    x = _f32(r, (3, 17))
    out.append(Case("aliased_results", lambda x: (x.reshape(-1), x, x, jnp.zeros(5), x.T.T),
                    lambda x: (x.reshape(-1), x, x, np.zeros(5), x), (x,)))
    x = _f32(r, (3, 17, 33))
    out.append(Case("middle_axis_3x17x33", lambda x: (
                        jnp.sum(x, axis=1), jnp.argmax(x, axis=1), jnp.cumsum(x, axis=1),
                        jnp.max(x, axis=(0, 2))),
                    lambda x: (x.sum(1, dtype=np.float64), x.argmax(1).astype(np.int32),
                               np.cumsum(x, 1, dtype=np.float64), x.max((0, 2))),
                    (x,), rtol=1e-5, atol=1e-5))
    for (m, k, n) in ((13, 17, 33), (1, 1025, 3)):
        a = r.integers(-9, 9, (m, k)).astype(np.int32)
        b = r.integers(-9, 9, (k, n)).astype(np.int32)
        out.append(Case(f"mm_i32_{m}x{k}x{n}", lambda a, b: a @ b, lambda a, b: a @ b, (a, b)))
    for shape in ((3, 17, 33), (7, 1, 65), (2, 63, 129)):
        name = f"transpose_{_tag(shape)}"
        out.append(Case(name, lambda x: (jnp.transpose(x, (2, 0, 1)), jnp.transpose(x, (1, 0, 2)),
                                         jnp.transpose(x, (2, 1, 0)) + 1.0),
                        lambda x: (x.transpose(2, 0, 1), x.transpose(1, 0, 2),
                                   x.transpose(2, 1, 0) + np.float32(1)),
                        (_f32(_rng(name), shape),)))
    return out


MKN = ((1, 1, 1), (1, 7, 13), (7, 1, 13), (13, 17, 1), (17, 31, 33), (33, 63, 65),
       (65, 127, 129), (129, 65, 31), (31, 1025, 7), (1, 1023, 65), (127, 129, 63),
       (63, 33, 1025), (129, 257, 129))


def matmul_cases() -> list:
    jnp, out = _jnp(), []
    f64 = lambda a: a.astype(np.float64)  # noqa: E731
    for m, k, n in MKN:
        tag = f"{m}x{k}x{n}"
        r = _rng(f"mm_{tag}")
        x, y, b = _f32(r, (m, k)), _f32(r, (k, n)), _f32(r, (n,))
        tol = dict(rtol=1e-4, atol=1e-4 * k ** 0.5)
        out.append(Case(f"mm_{tag}", lambda x, y: x @ y, lambda x, y: f64(x) @ f64(y),
                        (x, y), **tol))
        out.append(Case(f"mm_relu_{tag}", lambda x, y, b: jnp.maximum(x @ y + b, 0.0),
                        lambda x, y, b: np.maximum(f64(x) @ f64(y) + b, 0), (x, y, b), **tol))
        out.append(Case(f"mm_tn_{tag}", lambda xt, y: xt.T @ y, lambda xt, y: f64(xt).T @ f64(y),
                        (np.ascontiguousarray(x.T), y), **tol))
        out.append(Case(f"mm_nt_{tag}", lambda x, yt: x @ yt.T, lambda x, yt: f64(x) @ f64(yt).T,
                        (x, np.ascontiguousarray(y.T)), **tol))
    for k, n in ((1, 7), (17, 33), (129, 65), (1025, 13)):
        name = f"mv_{k}x{n}"
        r = _rng(name)
        v, w, a = _f32(r, (k,)), _f32(r, (k, n)), _f32(r, (n, k))
        out.append(Case(name, lambda v, w, a: (v @ w, a @ v, jnp.dot(v, v)),
                        lambda v, w, a: (f64(v) @ w, f64(a) @ v, f64(v) @ v), (v, w, a),
                        rtol=1e-4, atol=1e-4 * k ** 0.5))
    for shape_a, shape_b in (((3, 17, 33), (3, 33, 7)), ((2, 1, 65), (2, 65, 129))):
        name = f"bmm_{_tag(shape_a)}_{_tag(shape_b)}"
        r = _rng(name)
        out.append(Case(name, lambda a, b: a @ b, lambda a, b: f64(a) @ f64(b),
                        (_f32(r, shape_a), _f32(r, shape_b)), rtol=1e-4, atol=1e-3))
    for m, k, n in ((13, 17, 31), (65, 127, 129)):
        name = f"mm_f64_{m}x{k}x{n}"
        r = _rng(name)
        out.append(Case(name, lambda x, y: x @ y, lambda x, y: x @ y,
                        (r.standard_normal((m, k)), r.standard_normal((k, n))),
                        rtol=1e-10, atol=1e-10))
    return out


def _wrapped(i, n):
    return np.where(i < 0, i + n, i)


def _gather_clip_ref(x, i):
    return x[np.clip(_wrapped(i, len(x)), 0, len(x) - 1)]


def _take_fill_ref(x, i, fill):
    w = _wrapped(i, len(x))
    ok = (w >= 0) & (w < len(x))
    return np.where(ok.reshape(ok.shape + (1,) * (x.ndim - 1)), x[np.clip(w, 0, len(x) - 1)],
                    x.dtype.type(fill))


def _scatter_ref(x, i, v, mode, op):
    out, n = x.copy(), len(x)
    w = _wrapped(i, n)
    if mode == "clip":
        w, v = np.clip(w, 0, n - 1), v
    else:
        ok = (w >= 0) & (w < n)
        w, v = w[ok], v[ok]
    if op == "add":
        np.add.at(out, w, v)
    else:
        out[w] = v
    return out


def _unique_indices(rng, n, count):
    """Distinct positions in [0, 2n), some written as their negative alias: after
    wrapping no two hit the same element, so `set` has one answer."""
    count = min(count, 2 * n)
    w = rng.choice(2 * n, count, replace=False)
    neg = (w < n) & (rng.random(count) < 0.3)
    return np.where(neg, w - n, w).astype(np.int32)


def indexing_cases() -> list:
    jnp, out = _jnp(), []
    from jx import lax
    for n in (1, 7, 17, 33, 129, 1025):
        name = f"gather_{n}"
        r = _rng(name)
        x, idx = _f32(r, (n,)), r.integers(-2 * n - 1, 2 * n + 2, n + 3).astype(np.int32)
        x2 = _f32(r, (n, 5))
        out.append(Case(name, lambda x, i, x2: (x[i], jnp.take(x, i, mode="fill", fill_value=-7.0),
                                                jnp.take(x, i, mode="clip"), x2[i],
                                                jnp.take(x2, i, axis=0, mode="fill",
                                                         fill_value=0.5)),
                        lambda x, i, x2: (_gather_clip_ref(x, i), _take_fill_ref(x, i, -7.0),
                                          np.take(x, i, mode="clip"), _gather_clip_ref(x2, i),
                                          _take_fill_ref(x2, i, 0.5)),
                        (x, idx, x2)))
        name = f"scatter_{n}"
        r = _rng(name)
        idx = r.integers(-2 * n - 1, 2 * n + 2, n + 3).astype(np.int32)
        uniq = _unique_indices(r, n, n + 3)
        x, v, vu = _f32(r, (n,)), _f32(r, (n + 3,)), _f32(r, (len(uniq),))
        x2, v2 = _f32(r, (n, 5)), _f32(r, (len(uniq), 5))
        out.append(Case(name, lambda x, i, v, u, vu, x2, v2: (
                            x.at[i].add(v, mode="drop"), x.at[i].add(v, mode="clip"),
                            x.at[u].set(vu, mode="drop"), x2.at[u].set(v2, mode="drop")),
                        lambda x, i, v, u, vu, x2, v2: (
                            _scatter_ref(x, i, v, "drop", "add"),
                            _scatter_ref(x, i, v, "clip", "add"),
                            _scatter_ref(x, u, vu, "drop", "set"),
                            _scatter_ref(x2, u, v2, "drop", "set")),
                        (x, idx, v, uniq, vu, x2, v2), rtol=1e-5, atol=1e-5))
        name = f"gather_idx2d_{n}"
        r = _rng(name)
        idx2 = r.integers(-2 * n - 1, 2 * n + 2, (3, 5)).astype(np.int32)
        x2, v2 = _f32(r, (n, 5)), _f32(r, (3, 5, 5))
        out.append(Case(name, lambda x2, i, v2: (x2[i], x2.at[i].add(v2, mode="drop")),
                        lambda x2, i, v2: (_gather_clip_ref(x2, i),
                                           _scatter_ref(x2, i, v2, "drop", "add")),
                        (x2, idx2, v2), rtol=1e-5, atol=1e-5))
        k = max(1, n // 3)
        for start in (-2 * n, -1, n - k + 5):
            name = f"dynslice_{n}_{'m' if start < 0 else ''}{abs(start)}"
            r = _rng(name)
            s = int(np.clip(_wrapped(np.int64(start), n), 0, n - k))
            x, u = _f32(r, (n, 3)), _f32(r, (k, 3))

            def ref(x, st, u, s=s, k=k):
                y = x.copy()
                y[s:s + k] = u
                return x[s:s + k], y

            out.append(Case(name, lambda x, st, u, k=k: (lax.dynamic_slice(x, (st, 0), (k, 3)),
                                                       lax.dynamic_update_slice(x, u, (st, 0))),
                            ref, (x, np.int32(start), u)))
    for m, n in ((3, 17), (33, 65)):
        name = f"take_along_{m}x{n}"
        r = _rng(name)
        x, idx = _f32(r, (m, n)), r.integers(-n - 2, n + 2, (m, 9)).astype(np.int32)

        def ref(x, i):
            w = _wrapped(i, x.shape[1])
            ok = (w >= 0) & (w < x.shape[1])
            return np.where(ok, np.take_along_axis(x, np.clip(w, 0, x.shape[1] - 1), 1),
                            np.float32(0))

        out.append(Case(name, lambda x, i: jnp.take_along_axis(x, i, 1, mode="fill",
                                                                fill_value=0.0),
                        ref, (x, idx)))
    return out


def scan_sort_cases() -> list:
    from jx import lax
    jnp, out = _jnp(), []
    for n in SIZES:
        name = f"cumsum_sort_{n}"
        r = _rng(name)
        x, i = _f32(r, (n,)), r.integers(-5, 5, n).astype(np.int32)
        out.append(Case(name, lambda x, i: (jnp.cumsum(x), jnp.cumsum(i), jnp.sort(x),
                                            jnp.argsort(x), jnp.sort(i), jnp.argsort(i)),
                        lambda x, i: (np.cumsum(x, dtype=np.float64), np.cumsum(i),
                                      np.sort(x), np.argsort(x, kind="stable").astype(np.int32),
                                      np.sort(i), np.argsort(i, kind="stable").astype(np.int32)),
                        (x, i), rtol=1e-5, atol=1e-4))
    for shape in SHAPES2 + ((3, 17, 33),):
        name = f"cumsum_sort_{_tag(shape)}"
        x = _f32(_rng(name), shape)
        out.append(Case(name, lambda x: (jnp.cumsum(x, axis=0), jnp.cumsum(x, axis=-1),
                                         lax.cumsum(x, axis=0, reverse=True),
                                         jnp.sort(x, axis=-1), jnp.sort(x, axis=0),
                                         jnp.argsort(x, axis=0)),
                        lambda x: (np.cumsum(x, 0, dtype=np.float64),
                                   np.cumsum(x, -1, dtype=np.float64),
                                   np.cumsum(x[::-1], 0, dtype=np.float64)[::-1], np.sort(x, -1),
                                   np.sort(x, 0), np.argsort(x, 0, kind="stable").astype(np.int32)),
                        (x,), rtol=1e-5, atol=1e-4))
    return out


def parallel_cases() -> list:
    """Sizes past the thread-split thresholds (codegen/cpu/tuning.py: 2^17
    element-operations, 2^22 multiply-adds per thread), so the pool's chunk
    tails are exercised; the group runs with JX_NUM_THREADS=3 for uneven splits."""
    jnp, out = _jnp(), []
    f64 = lambda a: a.astype(np.float64)  # noqa: E731
    for shape in ((1023, 1025), (1048577,)):
        name = f"par_ew_{_tag(shape)}"
        r = _rng(name)
        out.append(Case(name, lambda x, y: (jnp.tanh(x) * y + 1.0, jnp.sum(x * x),
                                            jnp.max(x), jnp.argmax(x), jnp.cumsum(y, axis=0)),
                        lambda x, y: (np.tanh(x) * y + np.float32(1),
                                      (f64(x) ** 2).sum(), x.max(), np.int32(x.argmax()),
                                      np.cumsum(f64(y), axis=0)),
                        (_f32(r, shape), _f32(r, shape)), rtol=1e-4, atol=2e-2))   # f32 cumsum
    name = "par_rows_1025x1023"
    x = _f32(_rng(name), (1025, 1023))

    def rows_ref(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return (x.sum(0, dtype=np.float64), x.sum(-1, dtype=np.float64),
                x.argmax(-1).astype(np.int32), e / e.sum(-1, keepdims=True), x.T,
                np.sort(x, -1))
    out.append(Case(name, lambda x: (jnp.sum(x, axis=0), jnp.sum(x, axis=-1),
                                     jnp.argmax(x, axis=-1),
                                     jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
                                     / jnp.sum(jnp.exp(x - jnp.max(x, axis=-1, keepdims=True)),
                                               axis=-1, keepdims=True), x.T,
                                     jnp.sort(x, axis=-1)),
                    rows_ref, (x,), rtol=1e-5, atol=1e-4))
    # the GEMM's cache blocking on the reference host (f32: KC 336, NC 384, MC 1560;
    # f64: KC 168) plus one, and C narrower than a vector (one vector per row)
    for m, k, n, dt in ((257, 513, 129, "f4"), (1023, 129, 65, "f4"), (65, 1025, 257, "f4"),
                        (1, 4099, 2053, "f4"), (1561, 337, 385, "f4"), (13, 673, 769, "f4"),
                        (1025, 1009, 17, "f4"), (2047, 257, 16, "f4"), (13, 169, 193, "f8"),
                        (1561, 169, 17, "f8"), (129, 337, 769, "f8")):
        name = f"par_mm_{dt}_{m}x{k}x{n}"
        r = _rng(name)
        out.append(Case(name, lambda x, y, b: (x @ y, jnp.maximum(x @ y + b, 0.0)),
                        lambda x, y, b: (f64(x) @ f64(y), np.maximum(f64(x) @ f64(y) + b, 0)),
                        tuple(_f32(r, s).astype(dt) for s in ((m, k), (k, n), (n,))),
                        rtol=1e-4, atol=1e-4 * k ** 0.5))
    n = 300007
    name = f"par_index_{n}"
    r = _rng(name)
    idx = r.integers(-2 * n, 2 * n, n).astype(np.int32)
    out.append(Case(name, lambda x, i, v: (x[i], x.at[i].add(v, mode="drop")),
                    lambda x, i, v: (_gather_clip_ref(x, i), _scatter_ref(x, i, v, "drop", "add")),
                    (_f32(r, (n,)), idx, _f32(r, (n,))), rtol=1e-5, atol=1e-5))
    return out


def _eager(fn):
    """The reference for control flow and random bits: the same jx function on
    NumPy arrays, which jx evaluates eagerly with NumPy (no compiled code)."""
    def ref(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    return ref


def control_misc_cases() -> list:
    import jx
    from jx import lax
    jnp, out = _jnp(), []

    def loop(x, y):
        def body(i, acc):
            row = lax.dynamic_slice(x, (i + 2, 0), (1, 3))        # clamped past the end
            return lax.dynamic_update_slice(acc, row * i.astype(acc.dtype), (i, 0))
        return lax.fori_loop(0, x.shape[0], body, y)

    def scan(c, xs):
        step = lambda c, r: (c * 0.5 + r, jnp.sum(jnp.tanh(c)))  # noqa: E731
        return lax.scan(step, c, xs), lax.scan(step, c, xs, reverse=True)

    def while_(x):
        return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 1.5 + 1.0, x)

    def cond(p, x):
        return lax.cond(p > 0, lambda v: jnp.cumsum(v[::-1]), lambda v: v * 2.0, x)

    def cum(x):
        return (lax.cumprod(x * 0.1 + 1.0), lax.cummax(x, reverse=True), lax.cummin(x),
                lax.pad(x, np.float32(-1), [(-min(2, x.shape[0]), 3, 1)]),
                lax.slice(x, (0,), (x.shape[0],), (3,)), lax.rev(x, (0,)))

    def casts(x):
        return (x.astype(jnp.float16).astype(jnp.float32), jnp.clip(x * 40, -128, 127)
                .astype(jnp.int8), jnp.round(x * 3), jnp.isfinite(x / (x - x[0])),
                jnp.any(x > 1.5), jnp.all(x < 1.9))

    def rand(key, like):
        k1, k2 = jx.random.split(key)
        return jx.random.normal(k1, like.shape), jx.random.uniform(k2, like.shape + (3,))

    def sorts(x, a, b):
        return (jnp.sort(x, descending=True), jnp.argsort(x, descending=True),
                jnp.lexsort((a, b)))

    def sorts_ref(x, a, b):
        return (np.sort(x)[::-1], np.argsort(-x, kind="stable").astype(np.int32),
                np.lexsort((a, b)).astype(np.int32))

    for n in (1, 7, 17, 33, 129):
        r = _rng(f"control_{n}")
        x3, x5 = _f32(r, (n, 3)), _f32(r, (n, 5))
        x, a, b = _f32(r, (n,)), r.integers(0, 3, n).astype(np.int32), \
            r.integers(0, 4, n).astype(np.int32)
        out += [Case(f"loop_{n}", loop, _eager(loop), (x3, np.zeros((n, 3), np.float32))),
                Case(f"scan_{n}", scan, _eager(scan), (_f32(r, (5,)), x5), rtol=1e-5,
                     atol=1e-5),
                Case(f"while_{n}", while_, _eager(while_), (np.abs(x) + 0.1,), rtol=1e-5),
                Case(f"cond_{n}", cond, _eager(cond), (np.float32(1), x)),
                Case(f"cond_else_{n}", cond, _eager(cond), (np.float32(-1), x)),
                Case(f"cum_{n}", cum, _eager(cum), (x,)),
                Case(f"casts_{n}", casts, _eager(casts), (x,)),
                Case(f"random_{n}", rand, _eager(rand), (np.array([0, n], np.uint32), x)),
                Case(f"sorts_{n}", sorts, sorts_ref, (x, a, b))]
        i, j = (r.integers(-2 * n, 2 * n, n + 5).astype(np.int32),
                r.integers(-12, 12, n + 5).astype(np.int32))
        x9, v = _f32(r, (n, 9)), _f32(r, (n + 5,))

        def gather2d_ref(x9, i, j, v):
            wi, wj = np.clip(_wrapped(i, x9.shape[0]), 0, x9.shape[0] - 1), \
                np.clip(_wrapped(j, 9), 0, 8)
            wi2, wj2 = _wrapped(i, x9.shape[0]), _wrapped(j, 9)
            ok = (wi2 >= 0) & (wi2 < x9.shape[0]) & (wj2 >= 0) & (wj2 < 9)
            mx, mn = x9.copy(), x9.copy()
            np.maximum.at(mx, (wi2[ok], wj2[ok]), v[ok])
            np.minimum.at(mn, (wi2[ok], wj2[ok]), v[ok])
            return x9[wi, wj], mx, mn

        out.append(Case(f"gather2d_{n}", lambda x9, i, j, v: (
                            x9[i, j], x9.at[i, j].max(v, mode="drop"),
                            x9.at[i, j].min(v, mode="drop")),
                        gather2d_ref, (x9, i, j, v)))
    return out


PRIMITIVE_GROUPS = {"elementwise": elementwise_cases, "reductions": reduction_cases,
                    "layout": layout_cases, "matmul": matmul_cases,
                    "indexing": indexing_cases, "scan_sort": scan_sort_cases,
                    "control_misc": control_misc_cases, "parallel": parallel_cases}
GROUP_ENV = {"parallel": {"JX_NUM_THREADS": "3"}}


# -- samples ----------------------------------------------------------------------------

_MLP = ("x=f32[13,784]", "y=i32[13]", "params.w1=f32[784,65]", "params.b1=f32[65]",
        "params.w2=f32[65,33]", "params.b2=f32[33]", "params.w3=f32[33,10]")
# (model, entries (none: all), --shape overrides giving every entry awkward sizes);
# one artifact each
SAMPLE_BUILDS = (
    ("mlp", (), _MLP),
    ("train", ("sgd_step",), _MLP),
    ("train", ("per_example_grads",), ("w=f32[17]", "x=f32[33,17]", "y=f32[33]")),
    ("attention", (), ("x=f32[17,512]",)),
    ("elementwise", (), ("x=f32[33,65]",)),
    ("ode", (), ("a=f32[17,17]", "y0=f32[17]")),
)


def sample_entries(model: str, names: tuple, shapes: tuple) -> list:
    """The entries `jx compile --entry ... --shape ...` would build."""
    from jx.cli import loading
    module = loading.load_model(str(SAMPLES / f"{model}.py"))
    entries = loading.select_entries(module, names)
    loading.apply_shapes(entries, shapes)
    return entries


def sample_inputs(entry, rng) -> tuple:
    """Inputs for an entry's declared specs: labels in [0, 10), scaled weights."""
    import jx

    def leaf(spec):
        if spec.dtype == np.int32:
            return rng.integers(0, 10, spec.shape).astype(np.int32)
        scale = 1.0 / np.sqrt(spec.shape[0]) if len(spec.shape) == 2 else 0.5
        return (rng.standard_normal(spec.shape) * scale).astype(spec.dtype)
    return tuple(jx.tree_util.tree_map(leaf, a) for a in entry.args)


def _sample_group(workdir: str) -> list:
    out = []
    for k, (model, names, shapes) in enumerate(SAMPLE_BUILDS):
        built: list = []

        def run(e, model=model, names=names, shapes=shapes, built=built, k=k):
            if not built:
                built += build_model(str(SAMPLES / f"{model}.py"),
                                     os.path.join(workdir, f"{model}{k}"), shapes, names)
            art, lib = built
            args = sample_inputs(e, _rng(f"{model}.{e.name}"))
            fn = (lambda *a: e.fn(*a, **e.static)) if e.static else e.fn
            want = fn(*args)          # eager: jx.numpy on NumPy arrays computes in NumPy
            check_jit(fn, args, want, 1e-3, 1e-4, what=f"jx.jit({model}.{e.name})")
            check_artifact(art, lib, e.name, args, want, 1e-3, 1e-4)
        out += [(f"{model}.{e.name}", lambda e=e, run=run: run(e))
                for e in sample_entries(model, names, shapes)]
    return out


# -- running a case ---------------------------------------------------------------------

def _leaves(tree) -> list:
    import jx
    return [np.asarray(v) for v in jx.tree_util.tree_leaves(tree)]


def _compare(got, want, rtol, atol, what):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), f"{what}: {len(got)} results, expected {len(want)}"
    for j, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{what}: result {j} has shape {g.shape}, expected {w.shape}"
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: result {j}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                       err_msg=f"{what}: result {j}")


def _guard(tree, side):
    import jx
    return jx.tree_util.tree_map(lambda a: guarded.guarded_copy(a, side), tree)


def _raw_calls(fn, in_leaves, out_specs, want, rtol, atol, what):
    """Call a C-ABI function with guarded (read-only) inputs and guarded outputs."""
    for side in SIDES:
        ins = [guarded.guarded_copy(a, side) for a in in_leaves]
        outs = [guarded.guarded_empty(shape, dtype, side) for shape, dtype in out_specs]
        status = guarded.call_entry(fn, ins, outs)
        assert status == 0, f"{what}: status {status}"
        for j, o in enumerate(outs):
            guarded.check_canary(o, f"{what}, output {j} against the {side} guard")
        _compare(outs, want, rtol, atol, f"{what}, outputs against the {side} guard")


def check_jit(fn, args, want, rtol, atol, what="jx.jit"):
    import jx
    jitted = jx.jit(fn)
    for side in SIDES:
        _compare(jitted(*_guard(args, side)), want, rtol, atol,
                 f"{what}, inputs against the {side} guard")
    (compiled,) = jitted._cache.values()
    cf = compiled.fn
    _raw_calls(cf.fn, _leaves(args), cf.out_specs, want, rtol, atol, f"{what} code, C ABI")


def check_artifact(art, lib, name, args, want, rtol, atol):
    entry = art[name]
    for side in SIDES:
        _compare(entry(*_guard(args, side)), want, rtol, atol,
                 f"artifact entry {name}, inputs against the {side} guard")
    leaves = _leaves(args)
    assert [a.shape for a in leaves] == [leaf.shape for leaf in entry.inputs]
    _raw_calls(lib[entry.spec.symbol], leaves, [(o.shape, o.dtype) for o in entry.outputs], want,
               rtol, atol, f"artifact symbol jx_{name}")


# -- artifacts ----------------------------------------------------------------------------

def _spec_text(a: np.ndarray) -> str:
    return f"jx.ShapeDtypeStruct({tuple(a.shape)!r}, np.dtype({a.dtype.name!r}))"


def _model_source(group: str, cases: list) -> str:
    """A model file exporting every case of the group as an entry of that name."""
    lines = ["import sys", f"sys.path.insert(0, {str(TESTS)!r})", "import numpy as np",
             "import jx", "import test_guarded as _t",
             f"_CASES = {{c.name: c for c in _t.PRIMITIVE_GROUPS[{group!r}]()}}", ""]
    for c in cases:
        params = ", ".join(f"a{i}" for i in range(len(c.args)))
        specs = ", ".join(_spec_text(np.asarray(a)) for a in c.args)
        lines += [f"@jx.export({specs}, name={c.name!r})", f"def {c.name}({params}):",
                  f"    return _CASES[{c.name!r}].fn({params})", ""]
    return "\n".join(lines)


def build_model(path: str, out_dir: str, shapes: tuple = (), entries: tuple = ()):
    """Build an artifact through `jx compile`'s path; (artifact, its ctypes library)."""
    import jx.runtime as rt
    from jx.cli.compile import compile_model
    res = compile_model(path, out_dir, entries, shapes, "cpu", os.environ.get("JX_CPU"), None)
    return rt.load(res["library"]), ctypes.CDLL(res["library"], mode=os.RTLD_LOCAL)


def _primitive_group(group: str, workdir: str) -> list:
    cases = PRIMITIVE_GROUPS[group]()
    model = os.path.join(workdir, f"guard_{group}.py")
    with open(model, "w") as f:
        f.write(_model_source(group, cases))
    art, lib = build_model(model, os.path.join(workdir, "out"))

    def run(c):
        want = c.ref(*c.args)
        check_jit(c.fn, c.args, want, c.rtol, c.atol)
        check_artifact(art, lib, c.name, c.args, want, c.rtol, c.atol)
    return [(c.name, lambda c=c: run(c)) for c in cases]


# -- the harness itself ---------------------------------------------------------------------

def _selftest_group() -> list:
    """Deliberate faults: each must be reported under its own name."""
    def past_end():
        a = guarded.guarded_copy(np.arange(7, dtype=np.float32), "end")
        ctypes.string_at(a.ctypes.data, a.nbytes + 1)

    def before_start():
        a = guarded.guarded_copy(np.arange(7, dtype=np.float32), "start")
        ctypes.string_at(a.ctypes.data - 1, 1)

    def write_input():
        a = guarded.guarded_copy(np.arange(7, dtype=np.float32), "end")
        ctypes.memset(a.ctypes.data, 0, 1)

    def clean():
        for side in SIDES:
            a = guarded.guarded_copy(np.arange(7, dtype=np.float32), side)
            assert ctypes.string_at(a.ctypes.data, a.nbytes) == a.tobytes()

    def wrong():
        raise AssertionError("deliberately wrong")
    return [("past_end", past_end), ("before_start", before_start),
            ("write_input", write_input), ("clean", clean), ("wrong", wrong)]


def group_cases(group: str, workdir: str) -> list:
    if group == "selftest":
        return _selftest_group()
    if group == "samples":
        return _sample_group(workdir)
    return _primitive_group(group, workdir)


def _count(group: str) -> int:
    if group == "samples":
        return sum(len(sample_entries(m, n, s)) for m, n, s in SAMPLE_BUILDS)
    return len(PRIMITIVE_GROUPS[group]())


needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")


def test_guard_pages_catch_stray_accesses():
    passed, problems = guarded.run_group(__file__, "selftest")
    assert passed == 1, problems
    assert len(problems) == 4, problems
    for name, problem in zip(("past_end", "before_start", "write_input"), problems):
        assert problem.startswith(f"{name}: the child process died with signal 11 (SIGSEGV)")
    assert problems[3].startswith("wrong: AssertionError: deliberately wrong")


def test_guarded_layout_and_canary():
    for side in SIDES:
        for shape, dtype in (((7,), np.float32), ((3, 17), np.float64), ((0,), np.int32),
                             ((1025,), np.uint8)):
            a = guarded.guarded_empty(shape, dtype, side, fill=1)
            buf = guarded.buffer_of(a)
            if side == "end":
                assert a.ctypes.data + a.nbytes == buf.data_end
            else:
                assert a.ctypes.data == buf.data_start
            assert (a == 1).all()
            guarded.check_canary(a, "fresh")
    a = guarded.guarded_empty((7,), np.float32, "end")
    ctypes.memset(a.ctypes.data - 2, 0, 1)
    with pytest.raises(AssertionError, match=r"1 byte\(s\) before the array"):
        guarded.check_canary(a, "a")
    b = guarded.guarded_copy(np.arange(5.0))
    assert not b.flags.writeable and (b == np.arange(5.0)).all()


@needs_cc
@pytest.mark.parametrize("group", [*PRIMITIVE_GROUPS, "samples"])
def test_compiled_code_stays_inside_its_buffers(group):
    passed, problems = guarded.run_group(__file__, group, env=GROUP_ENV.get(group))
    assert not problems, "\n".join(problems)
    assert passed == _count(group)


@needs_cc
@pytest.mark.parametrize("group,cpu", [("elementwise", "x86-64"), ("reductions", "x86-64-v3")])
def test_other_targets_stay_inside_their_buffers(group, cpu):
    """Narrower vectors have other loop tails (SSE2: 4 floats, AVX2: 8, no masks)."""
    passed, problems = guarded.run_group(__file__, group, env={"JX_CPU": cpu})
    assert not problems, "\n".join(problems)
    assert passed == _count(group)


# -- valgrind: one sample model through an artifact, called from C ---------------------------

def _c_pattern(n: int, dtype: np.dtype, k: int) -> np.ndarray:
    """samples/c/main.c's fill: element i of input k is ((7i + 13k) mod 17) - 8, /16 for floats."""
    v = (7 * np.arange(n) + 13 * k) % 17 - 8
    return (v / 16.0 if dtype.kind == "f" else v).astype(dtype)


def _c_checksum(outputs: list) -> float:
    return float(sum((o.astype(np.float64).ravel() * (np.arange(o.size) % 7 + 1)).sum()
                     for o in outputs))


VALGRIND_CASES = {
    # entry -> (model, --shape overrides); mlp at awkward sizes, serial code
    "predict": ("mlp", tuple(s for s in _MLP if not s.startswith("y="))),
    "loss": ("mlp", _MLP),
    # 131k elements x 12 operations: split over the artifact's worker threads
    "chain": ("elementwise", ("x=f32[513,257]",)),
}


@needs_cc
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.parametrize("entry", list(VALGRIND_CASES))
def test_valgrind_sample_artifact_from_c(entry, tmp_path):
    """A sample entry built for x86-64-v3 (valgrind has no AVX-512), called three
    times from samples/c/main.c with exactly-sized malloc'd buffers under memcheck
    (3 threads): no invalid access, no uninitialised value used; its checksum is
    the NumPy reference's."""
    import jx
    import jx.runtime as rt
    from jx.cli.compile import compile_model
    model, shapes = VALGRIND_CASES[entry]
    out = tmp_path / "out"
    res = compile_model(str(SAMPLES / f"{model}.py"), str(out), (entry,), shapes, "cpu",
                        "x86-64-v3", None)
    exe = tmp_path / "driver"
    cc = subprocess.run(["cc", "-O1", "-g", "-std=c99", f"-I{out}",
                         f"-DJX_HEADER=\"{model}.h\"", f"-DJX_PREFIX={model}",
                         f"-DJX_PREFIX_UPPER={model.upper()}", f"-DJX_ENTRY={entry}",
                         f"-DJX_ENTRY_UPPER={entry.upper()}", str(SAMPLES / "c" / "main.c"),
                         str(res["library"]), f"-Wl,-rpath,{out}", "-o", str(exe)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    r = subprocess.run(["valgrind", "--error-exitcode=99", "--track-origins=yes", str(exe), "2"],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "JX_NUM_THREADS": "3"})
    assert r.returncode == 0, r.stderr[-4000:]
    assert "ERROR SUMMARY: 0 errors" in r.stderr, r.stderr[-4000:]
    spec = rt.load(res["library"])[entry]
    leaves = [_c_pattern(int(np.prod(leaf.shape)), leaf.dtype, k).reshape(leaf.shape)
              for k, leaf in enumerate(spec.inputs)]
    (e,) = sample_entries(model, (entry,), shapes)
    args = jx.tree_util.unflatten(jx.tree_util.tree_structure(tuple(e.args)), leaves)
    want = _c_checksum(_leaves(e.fn(*args)))
    got = float(r.stdout.split("checksum ")[1].split()[0])
    assert got == pytest.approx(want, rel=1e-4, abs=1e-4)


if __name__ == "__main__":
    os.environ.setdefault("JX_TUNE", "off")      # as the suite runs (conftest.py)
    with tempfile.TemporaryDirectory(prefix="jx-guarded-") as _work:
        sys.exit(guarded.serve(lambda g: group_cases(g, _work), sys.argv[1:]))
