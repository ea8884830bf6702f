"""Complex programs compiled (jx.jit, jx compile): the decomplex stage's split
layout through fusion, reductions, the GEMM, indexing, sorting and control flow,
checked against NumPy's complex arithmetic on fresh random inputs, complex64 and
complex128, over several shapes; plus the C ABI of complex leaves, other CPU
targets, and the errors where a primitive has no complex lowering."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import cpu_matrix
import jx
import jx.numpy as jnp
from jx import lax

# complex128 data stays complex128 (JAX's x64 mode); complex64 is asked for explicitly
pytestmark = pytest.mark.x64

COVERED = {"fft_z"}            # (the other complex primitives: tests/test_primitives.py)
# fft_z is staged by the complex lowering, after differentiation: batching is tested
# below and its derivatives refused
TRANSFORM_COVERED = {"fft_z"}

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
DTYPES = [C64, C128]
SHAPES = [(), (7,), (3, 5), (2, 3, 33)]
RTOL = {C64: 2e-6, C128: 1e-14}


def crand(rng, shape, dt, scale=2.0):
    return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale).astype(dt)


def close(got, want, dt, factor=1.0):
    """Componentwise within rtol of the magnitude of each element (a component
    that cancels to ~0 is judged against |z|, as complex error is)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    scale = np.maximum(np.abs(want.astype(np.complex128)), np.finfo(got.real.dtype).tiny)
    err = np.abs(got.astype(np.complex128) - want.astype(np.complex128)) / scale
    assert np.all(err <= RTOL[np.dtype(dt)] * factor * 8), float(err.max())


# (name, function, NumPy reference, domain of the arguments)
ELEMENTWISE = [
    ("add", lambda a, b: a + b, np.add, 2),
    ("sub", lambda a, b: a - b, np.subtract, 2),
    ("mul", lambda a, b: a * b, np.multiply, 2),
    ("div", lambda a, b: a / b, np.divide, 2),
    ("neg", lambda a: -a, np.negative, 1),
    ("conj", jnp.conj, np.conj, 1),
    ("square", jnp.square, np.square, 1),
    ("exp", jnp.exp, np.exp, 1),
    ("log", jnp.log, np.log, 1),
    ("sqrt", jnp.sqrt, np.sqrt, 1),
    ("sin", jnp.sin, np.sin, 1),
    ("cos", jnp.cos, np.cos, 1),
    ("tanh", jnp.tanh, np.tanh, 1),
    ("pow", lambda a, b: a ** b, np.power, 2),
    ("scalar", lambda a: 2j * a + (1 - 0.5j), lambda a: 2j * a + (1 - 0.5j), 1),
]


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("name,f,ref,arity", ELEMENTWISE, ids=[r[0] for r in ELEMENTWISE])
def test_elementwise_matches_numpy(name, f, ref, arity, dt, rng):
    g = jx.jit(f)
    for shape in SHAPES:
        args = [crand(rng, shape, dt) for _ in range(arity)]
        with np.errstate(all="ignore"):
            want = np.asarray(ref(*args)).astype(dt)
        close(g(*args), want, dt, factor=64 if name == "pow" else 4)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_parts_and_real_results(dt, rng):
    """real, imag, abs and angle give real arrays; comparisons give bool."""
    z = crand(rng, (4, 9), dt)
    w = np.where(rng.random((4, 9)) < 0.5, z, crand(rng, (4, 9), dt))
    re, im, ab, an, eq = jx.jit(lambda z, w: (jnp.real(z), jnp.imag(z), jnp.abs(z),
                                              jnp.angle(z), z == w))(z, w)
    part = z.real.dtype
    assert re.dtype == im.dtype == ab.dtype == an.dtype == part and eq.dtype == np.bool_
    np.testing.assert_array_equal(re, z.real)
    np.testing.assert_array_equal(im, z.imag)
    np.testing.assert_allclose(ab, np.abs(z), rtol=4 * np.finfo(part).eps)
    np.testing.assert_allclose(an, np.angle(z), rtol=8 * np.finfo(part).eps)
    np.testing.assert_array_equal(eq, z == w)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_conversions(dt, rng):
    z = crand(rng, (11,), dt)
    x = rng.standard_normal(11).astype(z.real.dtype)
    other = C128 if dt == C64 else C64
    zc, to_real, to_bool, back = jx.jit(lambda z, x: (z.astype(other), lax.real(z),
                                                       z.astype(bool), x.astype(dt)))(
        z, x.copy())
    np.testing.assert_array_equal(zc, z.astype(other))
    np.testing.assert_array_equal(to_real, z.real)
    np.testing.assert_array_equal(to_bool, z != 0)
    np.testing.assert_array_equal(back, x.astype(dt))
    assert jx.jit(lambda x, y: lax.complex(x, y))(x, -x).dtype == dt


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_reductions(dt, rng):
    z = crand(rng, (3, 5, 7), dt, scale=0.7)
    for axes in [None, 0, 1, (0, 2), 2]:
        close(jx.jit(lambda z: jnp.sum(z, axis=axes))(z), np.sum(z, axis=axes), dt, 8)
        close(jx.jit(lambda z: jnp.mean(z, axis=axes))(z), np.mean(z, axis=axes), dt, 8)
        close(jx.jit(lambda z: jnp.prod(z, axis=axes))(z), np.prod(z, axis=axes), dt, 64)
    close(jx.jit(lambda z: jnp.cumsum(z, axis=1))(z), np.cumsum(z, axis=1), dt, 8)
    close(jx.jit(lambda z: jnp.cumprod(z, axis=2))(z), np.cumprod(z, axis=2), dt, 64)
    close(jx.jit(lambda z: lax.cumprod(z, axis=0, reverse=True))(z),
          np.flip(np.cumprod(np.flip(z, 0), axis=0), 0), dt, 64)
    ties = (rng.integers(-2, 3, (4, 9)) + 1j * rng.integers(-2, 3, (4, 9))).astype(dt)
    for name, acc in (("cummax", np.maximum), ("cummin", np.minimum)):   # lexicographic
        np.testing.assert_array_equal(jx.jit(lambda z: getattr(lax, name)(z, axis=1))(ties),
                                      acc.accumulate(ties, axis=1))
        np.testing.assert_array_equal(
            jx.jit(lambda z: getattr(lax, name)(z, axis=0, reverse=True))(ties),
            np.flip(acc.accumulate(np.flip(ties, 0), axis=0), 0))
    empty = np.zeros((3, 0), dt)
    np.testing.assert_array_equal(jx.jit(lambda z: jnp.prod(z, axis=1))(empty), np.ones(3, dt))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_products(dt, rng):
    """dot_general on the split layout: four real GEMMs; real x complex: two."""
    a, b = crand(rng, (33, 47), dt), crand(rng, (47, 20), dt)
    r = rng.standard_normal((20, 47)).astype(a.real.dtype)
    close(jx.jit(jnp.matmul)(a, b), a @ b, dt, 64)
    close(jx.jit(lambda a, r: a @ r.T)(a, r), a @ r.T.astype(dt), dt, 64)
    close(jx.jit(jnp.vdot)(a[0], a[1]), np.vdot(a[0], a[1]), dt, 64)
    close(jx.jit(lambda a, b: lax.dot(a, b, preferred_element_type=dt))(a, b), a @ b, dt, 64)
    x = crand(rng, (4, 6, 5), dt)
    y = crand(rng, (4, 5, 3), dt)
    close(jx.jit(lambda x, y: jnp.einsum("bij,bjk->bik", x, y))(x, y),
          np.einsum("bij,bjk->bik", x, y), dt, 64)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_layout_and_indexing(dt, rng):
    z = crand(rng, (6, 8), dt)
    idx = rng.integers(0, 6, 5)

    def f(z, idx):
        return (z.T[::2], jnp.pad(z, ((1, 0), (0, 2)), constant_values=1 - 2j),
                jnp.concatenate([z, 1j * z], 0), z[idx], z.at[idx].add(1j),
                lax.dynamic_slice(z, (idx[0], 1), (2, 3)), jnp.where(z.real > 0, z, 0),
                jnp.flip(z, 1).reshape(4, 12))

    want = (z.T[::2], np.pad(z, ((1, 0), (0, 2)), constant_values=1 - 2j),
            np.concatenate([z, 1j * z], 0), z[idx], None, z[idx[0]:idx[0] + 2, 1:4],
            np.where(z.real > 0, z, 0), np.flip(z, 1).reshape(4, 12))
    added = z.copy()
    np.add.at(added, idx, 1j)
    got = jx.jit(f)(z, idx)
    for g, w in zip(got, want[:4] + (added,) + want[5:]):
        np.testing.assert_array_equal(np.asarray(g), w.astype(dt))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_sort_is_lexicographic(dt, rng):
    z = (rng.integers(-2, 3, 40) + 1j * rng.integers(-2, 3, 40)).astype(dt)
    np.testing.assert_array_equal(jx.jit(jnp.sort)(z), np.sort(z))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_control_flow_carries_complex(dt, rng):
    c = crand(rng, (5, 4), dt, scale=0.5)

    def orbit(c):
        return lax.fori_loop(0, 6, lambda i, z: z * z + c, jnp.zeros_like(c))

    want = np.zeros_like(c)
    for _ in range(6):
        want = want * want + c
    close(jx.jit(orbit)(c), want, dt, 64)

    def walk(c):
        def step(z, x):
            z = z * x + 1j
            return z, jnp.abs(z) + z
        return lax.scan(step, c[0], c)

    z, want_ys = c[0], []
    for x in c:
        z = z * x + 1j
        want_ys.append(np.abs(z) + z)
    got_z, got_ys = jx.jit(walk)(c)
    close(got_z, z, dt, 64)
    close(got_ys, np.stack(want_ys), dt, 64)

    def grow(c):
        return lax.while_loop(lambda s: jnp.abs(s[0]).sum() < 100.0,
                              lambda s: (s[0] * (1.5 + 0.5j), s[1] + 1), (c, 0))

    zz, n = c, 0
    while np.abs(zz).sum() < 100.0:
        zz, n = zz * (1.5 + 0.5j), n + 1
    got, got_n = jx.jit(grow)(c)
    assert int(got_n) == n
    close(got, zz, dt, 64)
    pick = jx.jit(lambda p, c: lax.cond(p, lambda c: c * 1j, lambda c: jnp.conj(c), c))
    close(pick(True, c), c * 1j, dt)
    close(pick(False, c), np.conj(c), dt)


def test_mandelbrot_matches_numpy():
    """The escape-count iteration as users write it: a complex fori_loop carry."""
    x = np.linspace(-2, 1, 48, dtype=np.float32)
    y = np.linspace(-1.2, 1.2, 40, dtype=np.float32)
    c = (x[None, :] + 1j * y[:, None]).astype(np.complex64)

    def counts(c):
        def body(i, s):
            z, n = s
            z = z * z + c
            return z, n + (jnp.abs(z) <= 2).astype(jnp.int32)
        return lax.fori_loop(0, 30, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))[1]

    z, n = np.zeros_like(c), np.zeros(c.shape, np.int32)
    with np.errstate(all="ignore"):
        for _ in range(30):
            z = z * z + c
            n += np.abs(z) <= 2
    got = np.asarray(jx.jit(counts)(c))
    assert (got == n).mean() > 0.995 and np.abs(got - n).max() <= 1


def test_complex_primitive_without_lowering_names_it():
    z = np.ones(4, np.complex64)
    idx = np.array([0, 2])
    with pytest.raises(NotImplementedError, match="scatter_mul of complex values"):
        jx.jit(lambda z: z.at[idx].multiply(2j))(z)


@pytest.mark.parametrize("cpu", cpu_matrix.MATRIX)
def test_other_cpu_targets(cpu, monkeypatch, rng):
    """Interleaved loads and stores of the boundary, and the split arithmetic,
    for every CPU of the matrix."""
    from jx.codegen.cpu import target
    cpu_name = cpu_matrix.runnable(cpu)
    monkeypatch.setenv("JX_CPU", cpu)
    assert target.jit_cpu() == cpu_name
    z, w = crand(rng, (37, 19), C64), crand(rng, (37, 19), C64)
    got = jx.jit(lambda z, w: (z * w + jnp.conj(z), jnp.sum(z * w, 0)))(z, w)
    close(got[0], z * w + np.conj(z), C64, 4)
    close(got[1], np.sum(z * w, 0), C64, 16)


def test_artifact_has_complex_leaves(tmp_path, rng):
    """jx compile of complex entries: the manifest and header name the dtypes, the
    loader checks them, results match NumPy."""
    model = tmp_path / "phase.py"
    model.write_text(
        "import jx\nimport jx.numpy as jnp\n\n"
        "@jx.export(z=jx.c64[16], theta=jx.f32[16])\n"
        "def rotate(z, theta):\n"
        "    return z * jnp.exp(1j * theta), jnp.abs(z)\n")
    res = subprocess.run([sys.executable, "-m", "jx.cli.main", "compile", str(model), "-o",
                          str(tmp_path / "build")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    header = (tmp_path / "build" / "phase.h").read_text()
    assert "complex64" in header and "float _Complex" in header
    lib = jx.runtime.load(str(tmp_path / "build" / "libphase.so"))
    z, theta = crand(rng, (16,), C64), rng.standard_normal(16).astype(np.float32)
    rot, mag = lib.rotate(z, theta)
    assert rot.dtype == C64 and mag.dtype == np.float32
    close(rot, z * np.exp(1j * theta.astype(C64)), C64, 4)
    np.testing.assert_allclose(mag, np.abs(z), rtol=1e-6)
    with pytest.raises(Exception, match="complex64"):
        lib.rotate(z.real.copy(), theta)


def test_fft_along_other_axes_transforms_in_place(rng):
    """jnp.fft moves the axes it transforms last; the lowering transforms them where
    they are (fft_c2c's axis) and the moves cancel: no transpose kernel is left."""
    from jx.passes import pipeline
    from jx.passes.fuse import fuse
    x = crand(rng, (6, 8, 5), C64)
    for f, ref in [(lambda x: jnp.fft.fft(x, axis=0), lambda x: np.fft.fft(x, axis=0)),
                   (lambda x: jnp.fft.ifftn(x, axes=(0, 2)),
                    lambda x: np.fft.ifftn(x, axes=(0, 2))),
                   (lambda x: jnp.fft.fft2(x, axes=(2, 0)),
                    lambda x: np.fft.fft2(x, axes=(2, 0)))]:
        close(jx.jit(f)(x), ref(x).astype(C64), C64, 64)
        g = jx.make_graph(f)(x)
        for stage in pipeline.STAGES.values():
            g = stage(g)
        names = [e.prim.name for k in fuse(g).kernels for e in k.eqns]
        assert "transpose" not in names and "fft_c2c" in names, names


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_fft_z_reads_and_writes_interleaved(dt, rng):
    """fft_z, the transform of a complex array in its own layout, against NumPy:
    radices, Bluestein, length 1, batches, the inverse; vmap batches it and
    derivatives are refused (it exists only after differentiation)."""
    from jx.core import bind
    from jx.prims import fft_split as fs
    for shape in [(1,), (7,), (3, 64), (2, 3, 60), (10007,), (5, 1024)]:
        z = crand(rng, shape, dt)
        for inverse in (False, True):
            got = jx.jit(lambda z: bind(fs.fft_z, z, inverse=inverse)[0])(z)
            want = (np.fft.ifft(z) if inverse else np.fft.fft(z)).astype(dt)
            err = np.linalg.norm(np.asarray(got) - want) / max(np.linalg.norm(want), 1e-30)
            assert err < 4 * np.finfo(z.real.dtype).eps * max(1, np.log2(shape[-1])), shape
    z = crand(rng, (4, 3, 16), dt)
    got = jx.jit(jx.vmap(lambda v: bind(fs.fft_z, v, inverse=False)[0], in_axes=1))(z)
    close(got, np.stack([np.fft.fft(z[:, j]) for j in range(3)]).astype(dt), dt, 64)
    with pytest.raises(jx.JxError, match="after differentiation"):
        jx.jvp(lambda v: bind(fs.fft_z, v, inverse=False)[0], (z,), (z,))


def test_fft_of_a_complex_input_is_one_kernel(rng):
    """An FFT along the last axis of a program's complex input reads it interleaved
    and writes the result interleaved (fft_z, no split or join passes); of a value
    computed inside, it runs on the split parts (fft_c2c)."""
    from jx.passes import pipeline
    from jx.passes.fuse import fuse

    def kernels(f, *args):
        g = jx.make_graph(f)(*args)
        for stage in pipeline.STAGES.values():
            g = stage(g)
        return [k.root.prim.name for k in fuse(g).kernels]

    z = crand(rng, (8, 32), C64)
    assert kernels(jnp.fft.fft, z) == ["fft_z"]
    assert "fft_c2c" in kernels(lambda z: jnp.fft.fft(z * 2j), z)
    np.testing.assert_allclose(jx.jit(lambda z: jnp.abs(jnp.fft.ifft(z)))(z),
                               np.abs(np.fft.ifft(z)), rtol=1e-5, atol=1e-6)
