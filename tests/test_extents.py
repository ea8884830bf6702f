"""Extents and index widths: 64-bit index arithmetic past 2**31 elements, shapes too
large to index refused at trace time, unallocatable results and workspaces refused
at call time, malformed --shape specs and entry names as one-paragraph errors."""
from __future__ import annotations

import functools
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import jx
import jx.numpy as jnp
from jx.codegen.cpu.jit import CompiledFunction
from jx.ir import MAX_ARRAY_BYTES, ShapedArray

ROOT = Path(__file__).resolve().parent.parent
HUGE = (1 << 31) + 16          # elements: past what a 32-bit index can count
THIS = Path(__file__).name


def _kernel_ir(fn, *specs) -> str:
    """The (unoptimised) LLVM IR jx.jit would compile for fn at these specs."""
    return CompiledFunction(jx.jit(fn).lower(*specs), "k").ir_text


def _line_of(text: str) -> int:
    src = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(src, 1) if text in line)


# ---------------------------------------------------------------- argmax / argmin index width

@pytest.mark.parametrize("fn", [jnp.argmax, jnp.argmin])
@pytest.mark.parametrize("spec", [jx.i8[HUGE], jx.f32[2, HUGE]])
def test_arg_reduction_counts_in_64_bits_past_2_31(fn, spec):
    """The running index, loop counter and offsets are i64; the int32 result is
    converted only once, at the end (traced and compiled only: f32 would need 16 GiB)."""
    ir = _kernel_ir(fn, spec)
    trips = int(np.prod(spec.shape, dtype=object)) - 1          # the flattened reduction
    assert "alloca i64" in ir and re.search(rf"icmp ult i64 \S+, {trips}\b", ir)
    phis = re.findall(r"= phi\s+(\S+)", ir)
    assert phis and set(phis) == {"i64"}, phis
    assert not re.search(r"= (add|sub|mul|udiv|urem|sdiv|srem)( \w+)* i32 ", ir)
    assert len(re.findall(r"trunc i64 \S+ to i32", ir)) == 1


def _mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.skipif(_mem_available() < 8 << 30, reason="needs ~2 GiB free beyond the suite")
def test_arg_reduction_over_2_31_plus_elements_runs():
    x = np.zeros(HUGE, np.int8)                  # 2 GiB: the one real allocation here
    x[HUGE - 11] = 5                              # past 2**31
    x[100] = -3
    with jx.enable_x64():                          # an int64 index: 64-bit mode
        got = jx.jit(lambda v: jx.lax.argmax(v, 0, np.int64))(x)
        assert got == HUGE - 11 == np.argmax(x)
        assert jx.jit(lambda v: jx.lax.argmin(v, 0, np.int64))(x) == 100
    # the default int32 result keeps the low 32 bits, as JAX's int32 index does
    assert jx.jit(jnp.argmax)(x) == np.int64(HUGE - 11).astype(np.int32)
    # a negative int32 index counts from an end past 2**31
    assert jx.jit(lambda v, i: v[i])(x, np.int32(-11)) == 5
    # per row the index fits int32; row 1's elements lie past byte 2**31
    rows = x.reshape(2, HUGE // 2)
    np.testing.assert_array_equal(jx.jit(lambda v: jnp.argmax(v, axis=1))(rows),
                                  np.argmax(rows, axis=1).astype(np.int32))


# ---------------------------------------------------------------- trace-time extents

def test_shape_size_is_exact_past_int64():
    assert ShapedArray((1 << 32, 1 << 32), np.float32).size == 1 << 64   # was 0 (wrapped)


def test_broadcast_too_large_to_index_is_a_trace_error_naming_shape_and_line():
    a = np.ones(1, np.float32)
    f = jx.jit(lambda x: jnp.broadcast_to(x, (1 << 32, 1 << 32)).sum())   # BIG-BCAST
    t = time.monotonic()
    with pytest.raises(jx.ShapeError) as e:
        f(a)
    assert time.monotonic() - t < 30
    msg = str(e.value)
    assert "f32[4294967296,4294967296]" in msg and "2**62 bytes" in msg
    assert f"{THIS}:{_line_of('# BIG-BCAST')}" in msg


def test_product_overflowing_int64_is_refused_in_every_trace():
    with pytest.raises(jx.ShapeError, match=r"u8\[.*\] has"):
        jx.make_graph(lambda x: jnp.full((1 << 40, 1 << 40), x) + x)(np.uint8(1))


def test_astronomical_shapes_are_reported_not_crashed_on():
    for shape in [(10 ** 400,), (1 << 62,) * 18]:     # a float() of the count overflows
        with pytest.raises(jx.ShapeError, match=r"about 2\*\*\d+ elements"):
            jx.make_graph(lambda x: jnp.broadcast_to(x, shape))(np.float32(1))


def test_reshape_and_eye_with_huge_sizes_are_shape_errors():
    x4 = np.ones(4, np.float32)
    with pytest.raises(jx.ShapeError, match="cannot reshape"):     # was an OverflowError
        jx.make_graph(lambda x: jnp.reshape(x, (10 ** 400, 0)))(x4)
    with pytest.raises(jx.ShapeError, match="cannot reshape"):
        jx.make_graph(lambda x: jnp.reshape(x, (10 ** 400, -1)))(x4)
    with pytest.raises(jx.ShapeError, match=r"eye: shape f32\[1099511627776,1099511627776\]"):
        jnp.eye(1 << 40)                                     # was NumPy's "array is too big"
    np.testing.assert_array_equal(jnp.eye(3, 4, 1), np.eye(3, 4, 1, dtype=np.float32))
    np.testing.assert_array_equal(jnp.tri(3, k=-1), np.tri(3, k=-1, dtype=np.float32))


def test_largest_indexable_shape_still_traces():
    limit = (MAX_ARRAY_BYTES // 4,)                 # exactly 2**62 bytes of f32
    g = jx.make_graph(lambda x: jnp.broadcast_to(x, limit).sum())(np.float32(1))
    assert any(str(v.aval) == f"f32[{limit[0]}]" for e in g.eqns for v in e.outputs)
    with pytest.raises(jx.ShapeError):
        jx.make_graph(lambda x: jnp.broadcast_to(x, (limit[0] + 1,)).sum())(np.float32(1))


def test_spec_maker_refuses_unindexable_shape_at_the_users_line():
    with pytest.raises(jx.ShapeError) as e:
        jx.f32[1 << 32, 1 << 32]                                           # BIG-SPEC
    assert f"{THIS}:{_line_of('# BIG-SPEC')}" in str(e.value)
    assert jx.i8[1 << 31, 1 << 31].shape == (1 << 31, 1 << 31)     # 2**62 bytes: allowed


# ---------------------------------------------------------------- call-time memory

def test_unallocatable_result_is_a_prompt_out_of_memory_error():
    def grow(x):
        return jnp.broadcast_to(x, (1 << 20, 1 << 20, 1 << 10)) + 1     # 4 PiB
    t = time.monotonic()
    with pytest.raises(jx.OutOfMemoryError) as e:
        jx.jit(grow)(np.ones(1, np.float32))
    assert time.monotonic() - t < 60
    assert isinstance(e.value, MemoryError)
    assert "'grow'" in str(e.value) and "f32[1048576,1048576,1024]" in str(e.value)


@pytest.mark.skipif(Path("/proc/sys/vm/overcommit_memory").exists() and
                    Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1",
                    reason="with unconditional overcommit a huge malloc may succeed")
def test_unallocatable_workspace_is_a_prompt_out_of_memory_error():
    def sort_all(x):                        # the sort needs 256 TiB of scratch memory
        return jnp.sort(jnp.broadcast_to(x, (1 << 46,))).sum()
    t = time.monotonic()
    with pytest.raises(jx.OutOfMemoryError) as e:
        jx.jit(sort_all)(np.ones(1, np.float32))
    assert time.monotonic() - t < 60
    assert "'sort_all'" in str(e.value) and "JX_ERR_OUT_OF_MEMORY" in str(e.value)


# ---------------------------------------------------------------- entry names

@pytest.mark.parametrize("name", ["a\nb", 'q"x', "é٣", "", "a b\\c", "x" * 300])
def test_jit_of_function_with_any_name_compiles(name):
    def f(x):
        return x * 2 + 1
    f.__name__ = name
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(jx.jit(f)(x), x * 2 + 1)


@pytest.mark.parametrize("name", ["a\nb", 'q"x', "a b", "1x", "f.g"])
def test_export_refuses_names_that_are_not_identifiers(name):
    def f(x):
        return x
    with pytest.raises(jx.EntryError) as e:
        jx.export(x=jx.f32[3], name=name)(f)
    assert repr(name) in str(e.value) and THIS in str(e.value)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- CLI --shape

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "jx.cli.main", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


BAD_SPECS = [
    ("f32[2^32,2^32]", "dimension '2^32'"),
    ("f32[4294967296,4294967296]", "2**62 bytes"),
    ("f32[-1]", "dimension '-1'"),
    ("f32[1.5]", "dimension '1.5'"),
    ("f32[a$c]", "dimension 'a$c'"),       # ('abc' is a symbol's name: issue 22)
    ("f32[3,,4]", "dimension ''"),
    ("q7[3]", "unknown dtype 'q7'"),
    ("f32[99999999999999999999999]", "each dimension must be below 2**48"),
    ("f32[281474976710656]", "each dimension must be below 2**48"),
    ("i8[4294967296,4294967296]", "2**62 bytes"),
]


@pytest.mark.parametrize("command,spec,why", [("dump-ir", s, w) for s, w in BAD_SPECS] +
                         [(c, s, w) for c in ("compile", "bench") for s, w in BAD_SPECS[:2]])
def test_bad_shape_specs_are_one_paragraph_cli_errors(command, spec, why, tmp_path):
    extra = ("-o", tmp_path) if command == "compile" else ()
    r = _cli(command, "samples/elementwise.py", "-e", "sum_of_squares",
             "--shape", f"x={spec}", *extra)
    assert r.returncode == 1, r.stderr
    assert why in r.stderr and f"bad --shape 'x={spec}'" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "click" not in r.stderr                   # no location inside the CLI's machinery


def test_model_entry_name_with_newline_is_a_cli_error(tmp_path):
    model = tmp_path / "names.py"
    model.write_text('import jx\n\n@jx.export(x=jx.f32[3], name="a\\nb")\n'
                     "def f(x):\n    return x + 1.0\n")
    r = _cli("compile", model, "-o", tmp_path / "o")
    assert r.returncode == 1 and "not an identifier" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


# ---------------------------------------------------------------- creation constants

@pytest.mark.parametrize("make", [jnp.zeros, jnp.ones,
                                  functools.partial(jnp.full, fill_value=2.0)])
def test_creation_shapes_are_jx_errors_at_the_users_line(make):
    with pytest.raises(jx.ShapeError) as e:
        make((1 << 40, 1 << 40))                                         # CREATE-BIG
    assert "2**62 bytes" in str(e.value)
    assert f"{THIS}:{_line_of('# CREATE-BIG')}" in str(e.value)
    with pytest.raises(jx.ShapeError, match="negative dimension"):
        make((3, -1))
    with pytest.raises(jx.OutOfMemoryError) as e:                # 4 PiB: NumPy refuses at once
        make((1 << 25, 1 << 25))
    assert "(33554432, 33554432), float32" in str(e.value) and THIS in str(e.value)
    np.testing.assert_array_equal(make((2, 3)), np.full((2, 3), make((1,))[0]))


@pytest.mark.parametrize("body,line", [
    ("@jx.export(x=jx.f32[1 << 32, 1 << 32])\ndef f(x):\n    return x + 1\n", 4),
    ("@jx.export(x=jx.f32[3])\ndef f(x):\n"
     "    return jnp.broadcast_to(x, (1 << 40, 1 << 40, 3)).sum()\n", 6),
])
def test_model_shapes_too_large_to_index_are_cli_errors_at_their_line(tmp_path, body, line):
    model = tmp_path / "big.py"
    model.write_text("import jx\nimport jx.numpy as jnp\n\n" + body)
    r = _cli("compile", model, "-o", tmp_path / "o")
    assert r.returncode == 1 and "2**62 bytes" in r.stderr and f"big.py:{line}" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_arange_counts_exactly_and_refuses_what_it_cannot_build():
    for args in [(5,), (2, 11, 3), (10, 0, -3), (5, 2), (0.0, 1.0, 0.25), (0, 1, 0.1)]:
        got = jnp.arange(*args)
        want = np.arange(*args)
        if want.dtype.kind == "f":     # JAX's values: f32(start) + f32(step) * iota
            want = np.float32(args[0]) + np.float32(args[2]) * np.arange(want.size,
                                                                          dtype=np.float32)
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    with pytest.raises(jx.ShapeError, match=r"i32\[9223372036854775808\]"):
        jnp.arange(1 << 63)                  # NumPy's int64 count wraps: it gave []
    with pytest.raises(jx.OutOfMemoryError, match=r"arange\(\(1099511627776,\), int32\)"):
        jnp.arange(1 << 40)


def test_constant_operation_too_large_to_store_is_out_of_memory_error():
    with pytest.raises(jx.OutOfMemoryError) as e:
        jx.make_graph(lambda x: jx.lax.iota(np.int32, 1 << 40).sum() + x)(np.int32(1))
    assert "iota" in str(e.value) and "i32[1099511627776]" in str(e.value)
    assert THIS in str(e.value)


def test_module_names_with_newlines_give_parseable_llvm_ir():
    import llvmlite.binding as llvm
    from jx.codegen.cpu.module import ModuleBuilder
    mb = ModuleBuilder('lib\n"name"\tü')
    mb.entry("f", jx.jit(lambda x: x + 1).lower(jx.f32[4]))
    llvm.parse_assembly(mb.text()).verify()


def test_artifact_name_with_newline_is_a_cli_error(tmp_path):
    r = _cli("compile", "samples/elementwise.py", "-e", "sum_of_squares", "--name", "a\nb",
             "-o", tmp_path)
    assert r.returncode == 1 and "--name 'a\\nb' is not a file name" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_artifact_entry_name_check_is_one_line():
    from jx.codegen.cpu.artifact import BuildError, check_entry_names
    with pytest.raises(BuildError) as e:        # an Entry made without jx.export's check
        check_entry_names([jx.Entry("a\nb", None, [], [], {}, "")])
    assert "'jx_a\\nb'" in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- narrow index dtypes

@pytest.mark.x64
def test_int32_index_on_an_axis_past_2_31_wraps_in_int64():
    g = jx.make_graph(lambda x, i: x[i])(jx.i8[HUGE], jx.i32[()])
    adds = [e for e in g.eqns if e.prim.name == "add"]
    assert adds and all(str(e.outputs[0].aval) == "i64[]" for e in adds)
    assert any(e.prim.name == "dynamic_slice" and str(e.inputs[1].aval) == "i64[]"
               for e in g.eqns)


def test_narrow_index_dtypes_count_from_the_end_of_longer_axes():
    x = np.arange(200, dtype=np.float32)
    idx = np.array([-3, 4, 120, -128], np.int8)
    np.testing.assert_array_equal(jx.jit(lambda v, i: v[i])(x, idx), x[idx])
    np.testing.assert_array_equal(jx.jit(jnp.take)(x, idx), np.take(x, idx))
    for i in (np.int8(-3), np.int16(-150), np.int8(100)):
        assert jx.jit(lambda v, j: v[j])(x, i) == x[i]
        got = jx.jit(lambda v, j: v.at[j].set(-1.0))(x, i)
        want = x.copy()
        want[i] = -1.0
        np.testing.assert_array_equal(got, want)
    jax = pytest.importorskip("jax")
    assert jx.jit(lambda v, j: v[j])(x, np.int8(-3)) == jax.numpy.asarray(x)[np.int8(-3)]


@pytest.mark.parametrize("pw,err,match", [
    ((10**400, 0), ValueError, "integer widths an array can have"),
    ((1.5, 0), TypeError, "must be integers"),
    (((1, 2), (3, 4)), ValueError, "1 dims"),
    ((-1, 0), ValueError, ">= 0"),
])
def test_bad_pad_widths_are_clear_errors(pw, err, match):
    """A width past int64 was a raw OverflowError, and 1.5 was truncated to 1
    (JAX refuses non-integer widths)."""
    with pytest.raises(err, match=match):
        jnp.pad(np.ones(3, np.float32), pw)
    with pytest.raises(err, match=match):
        jx.jit(lambda v: jnp.pad(v, pw))(np.ones(3, np.float32))
