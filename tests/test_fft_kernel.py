"""The CPU FFT kernels of the split-layout primitives (jx.prims.fft_split) against
np.fft on fresh random data: every radix, odd primes, Bluestein sizes, large
lengths, batches, float32 and float64, with a relative L2 error bound that grows
with log2(n); their batching, refused derivatives and shape errors; code for
other CPUs (other vector widths)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jx
from jx.core import bind
from jx.errors import JxError, ShapeError
from jx.prims import fft_split as fs

import cpu_matrix

COVERED = {"fft_c2c", "fft_r2c", "fft_c2r"}
# staged only by the complex lowering pass (after differentiation): batching here,
# derivatives refused
TRANSFORM_COVERED = {"fft_c2c", "fft_r2c", "fft_c2r"}

SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 12, 15, 16, 49, 60, 64, 97, 210, 1000, 1024, 1331, 4096,
         10007]
# 100000 = 8 4 5^5: a pass's leftover groups and strides, split over threads
LARGE = [1 << 16, 100000, 1 << 20]
C = 2.0          # the error bound: C eps log2(n) (the kernels measure below 0.4)


@pytest.fixture
def rng():
    return np.random.default_rng()


def _all(n):
    """Every primitive at length n, in one compiled function."""
    def f(re, im, hre, him):
        return (bind(fs.fft_c2c, re, im, inverse=False), bind(fs.fft_c2c, re, im, inverse=True),
                bind(fs.fft_r2c, re), bind(fs.fft_c2r, hre, him, n=n))
    return jx.jit(f)


def _err(got, ref):
    return np.linalg.norm(np.asarray(got) - ref) / max(np.linalg.norm(ref), 1e-300)


def _check(n, batch, dt, rng):
    re, im = (rng.standard_normal(batch + (n,)).astype(dt) for _ in range(2))
    hre, him = (rng.standard_normal(batch + (n // 2 + 1,)).astype(dt) for _ in range(2))
    (fr, fi), (ir_, ii), (rr, ri), (x,) = _all(n)(re, im, hre, him)
    assert all(np.asarray(o).dtype == dt for o in (fr, fi, ir_, ii, rr, ri, x))
    z = re.astype(np.float64) + 1j * im
    h = hre.astype(np.float64) + 1j * him
    bound = C * np.finfo(dt).eps * max(1.0, math.log2(n))
    for got, ref, what in ((np.asarray(fr) + 1j * np.asarray(fi), np.fft.fft(z), "fft"),
                           (np.asarray(ir_) + 1j * np.asarray(ii), np.fft.ifft(z), "ifft"),
                           (np.asarray(rr) + 1j * np.asarray(ri), np.fft.rfft(re.astype(
                               np.float64)), "rfft"),
                           (np.asarray(x), np.fft.irfft(h, n), "irfft")):
        assert got.shape == ref.shape, (what, got.shape, ref.shape)
        err = _err(got, ref)
        assert err <= bound, f"{what} n={n} {np.dtype(dt).name}: error {err:.3g} > {bound:.3g}"


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_every_size(n, dt, rng):
    _check(n, (3,), dt, rng)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_batched_over_leading_axes(dt, rng):
    _check(60, (3, 5), dt, rng)
    _check(1024, (2, 3), dt, rng)
    _check(1 << 17, (2,), dt, rng)      # threaded passes inside the rows' parallel chunks


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", LARGE)
def test_large(n, dt, rng):
    _check(n, (1,), dt, rng)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis", [((3, 8, 5), 1), ((16, 3), 0), ((2, 97, 32), 1),
                                         ((1000, 20), 0), ((4, 1, 7), 1), ((5, 6, 7), -2),
                                         ((64, 128), 0)])
def test_c2c_along_other_axes(shape, axis, dt, rng):
    """Columns side by side (direct plans) or one at a time (Bluestein's, n = 97)."""
    re, im = (rng.standard_normal(shape).astype(dt) for _ in range(2))
    z = re.astype(np.float64) + 1j * im
    bound = C * np.finfo(dt).eps * max(1.0, math.log2(shape[axis]))
    for inverse in (False, True):
        fr, fi = jx.jit(lambda a, b: bind(fs.fft_c2c, a, b, inverse=inverse, axis=axis))(re, im)
        ref = np.fft.ifft(z, axis=axis) if inverse else np.fft.fft(z, axis=axis)
        assert _err(np.asarray(fr) + 1j * np.asarray(fi), ref) <= bound


def test_float32_outputs_keep_float32(rng):
    re = rng.standard_normal((2, 8)).astype(np.float32)
    outs = jx.jit(lambda a, b: bind(fs.fft_c2c, a, b, inverse=False))(re, re)
    assert all(np.asarray(o).dtype == np.float32 for o in outs)
    ref = fs.fft_c2c.impl(re, re, inverse=False)
    assert all(r.dtype == np.float32 for r in ref)


def test_vmap_batches_and_derivatives_are_refused(rng):
    re, im = (rng.standard_normal((4, 3, 16)).astype(np.float32) for _ in range(2))
    f = jx.jit(jx.vmap(lambda a, b: bind(fs.fft_c2c, a, b, inverse=False), in_axes=(1, 1)))
    fr, fi = f(re, im)
    ref = np.fft.fft(np.swapaxes(re + 1j * im, 0, 1))
    assert _err(np.asarray(fr) + 1j * np.asarray(fi), ref) < 1e-5
    g = jx.jit(jx.vmap(lambda x: bind(fs.fft_r2c, x)))
    rr, ri = g(re[0])
    assert _err(np.asarray(rr) + 1j * np.asarray(ri), np.fft.rfft(re[0])) < 1e-5
    # an unbatched imaginary part is broadcast
    h = jx.jit(jx.vmap(lambda a, b: bind(fs.fft_c2r, a, b, n=30)[0], in_axes=(0, None)))
    x = h(re.reshape(12, 16), im[0, 0])
    ref = np.fft.irfft(re.reshape(12, 16) + 1j * im[0, 0], 30)
    assert _err(x, ref) < 1e-5
    # a counted-from-the-front axis moves with the batch axis
    f0 = jx.jit(jx.vmap(lambda a, b: bind(fs.fft_c2c, a, b, inverse=False, axis=0)))
    fr, fi = f0(re, im)
    assert _err(np.asarray(fr) + 1j * np.asarray(fi), np.fft.fft(re + 1j * im, axis=1)) < 1e-5
    for prim, args, params in ((fs.fft_c2c, (re[0], im[0]), {"inverse": False}),
                               (fs.fft_r2c, (re[0],), {}),
                               (fs.fft_c2r, (re[0, :, :9], im[0, :, :9]), {"n": 16})):
        with pytest.raises(JxError, match="after differentiation"):
            jx.grad(lambda *a: jx.numpy.sum(bind(prim, *a, **params)[0]))(*args)


def test_shape_errors():
    f32 = np.zeros((2, 0), np.float32)
    with pytest.raises(ShapeError, match="length 0"):
        jx.jit(lambda a, b: bind(fs.fft_c2c, a, b, inverse=False))(f32, f32)
    with pytest.raises(ShapeError, match="float32 or float64"):
        jx.jit(lambda a: bind(fs.fft_r2c, a))(np.zeros(4, np.int32))
    with pytest.raises(ShapeError, match="n//2 \\+ 1"):
        z = np.zeros(5, np.float32)
        jx.jit(lambda a, b: bind(fs.fft_c2r, a, b, n=16))(z, z)
    with pytest.raises(ShapeError, match="axis"):
        jx.jit(lambda a, b: bind(fs.fft_c2c, a, b, inverse=False, axis=2))(
            np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32))
    with pytest.raises(ShapeError, match="one shape"):
        jx.jit(lambda a, b: bind(fs.fft_c2c, a, b, inverse=True))(
            np.zeros(4, np.float32), np.zeros(5, np.float32))


@pytest.mark.parametrize("cpu", ["x86-64", "x86-64-v3", "skylake-avx512"])
def test_other_cpus(cpu, monkeypatch, rng):
    """Other vector widths (SSE2: 4 floats, AVX2: 8, AVX-512: 16): the first
    stages' lane shuffles and the stride loops' tails differ with the width."""
    cpu_matrix.runnable(cpu)
    monkeypatch.setenv("JX_CPU", cpu)
    for n in (24, 97, 1000):
        _check(n, (2,), np.float32, rng)
    with jx.flags.enable_x64(True):
        _check(1000, (2,), np.float64, rng)


MODEL = '''
import jx
from jx.core import bind
from jx.prims import fft_split as fs

@jx.export(re=jx.f32[4, 97], im=jx.f32[4, 97], x=jx.f32[3, 1024])
def spectra(re, im, x):
    return bind(fs.fft_c2c, re, im, inverse=False), bind(fs.fft_r2c, x)
'''


@pytest.mark.skipif(__import__("shutil").which("cc") is None, reason="needs a C compiler (cc)")
def test_artifact(tmp_path, rng):
    """In a shared object the tables are made at the first call as in jx.jit."""
    from jx import runtime as rt
    from jx.cli.compile import compile_model
    (tmp_path / "spectra.py").write_text(MODEL)
    lib = compile_model(str(tmp_path / "spectra.py"), str(tmp_path / "out"), (), (), "cpu",
                        None, None)["library"]
    re, im = (rng.standard_normal((4, 97)).astype(np.float32) for _ in range(2))
    x = rng.standard_normal((3, 1024)).astype(np.float32)
    (fr, fi), (rr, ri) = rt.load(lib).spectra(re, im, x)
    assert _err(fr + 1j * fi, np.fft.fft(re + 1j * im.astype(np.float64))) < 1e-6
    assert _err(rr + 1j * ri, np.fft.rfft(x.astype(np.float64))) < 1e-6


def test_passes_are_routines_shared_by_every_length():
    """A transform's passes are calls of routines generic in the stride and group
    count (fft_stages.pass_routine), compiled once per host: a program's own module
    has no pass loop, and lengths of the same radices call the same routines."""
    from jx.codegen.cpu import target
    from jx.codegen.cpu.module import ModuleBuilder

    def module_text(n):
        x = np.zeros((2, n), np.float32)
        prog = jx.jit(lambda re, im: bind(fs.fft_c2c, re, im, inverse=True)).lower(x, x)
        mb = ModuleBuilder("f", parallel=True, cpu=target.host_cpu(), reloc="pic")
        mb.entry("f", prog)
        return mb.text(), set(mb.routines())

    seen = {}
    for n in (2048, 4096, 1 << 18):
        text, routines = module_text(n)
        passes = {r for r in routines if r.startswith("jx.fft.pass.")}
        assert passes and "fft.q" not in text and "fft.t." not in text, n
        assert "jx.fft.fill.float32" in routines, routines              # its table
        assert any(r.endswith(".scaled") for r in passes), passes     # the inverse's 1/n
        seen[n] = passes
    assert seen[2048] & seen[4096] and seen[4096] & seen[1 << 18]


def test_real_transform_passes_are_routines():
    """The even-length real transforms' split, post-pass, pre-pass and join are
    routines generic in the length: a program's module holds none of their loops."""
    from jx.codegen.cpu import target
    from jx.codegen.cpu.module import ModuleBuilder
    x = np.zeros((3, 1000), np.float32)
    h = np.zeros((3, 501), np.float32)
    prog = jx.jit(lambda x, hr, hi: (bind(fs.fft_r2c, x), bind(fs.fft_c2r, hr, hi, n=1000))
                  ).lower(x, h, h)
    mb = ModuleBuilder("f", parallel=True, cpu=target.host_cpu(), reloc="pic")
    mb.entry("f", prog)
    text, routines = mb.text(), set(mb.routines())
    for name in ("split", "join", "r2c.post", "c2r.pre"):
        assert f"jx.fft.{name}.float32" in routines, (name, routines)
    assert "r2c.post" not in text.replace('"jx.fft.r2c.post.float32"', "")
