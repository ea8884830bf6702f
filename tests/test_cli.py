"""`jx dump-ir` run as a user runs it: a subprocess, on the samples and on broken models."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jx
from jx.api import trace_pytree
from jx.cli import loading

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def jx_cli(*args, cwd=ROOT):
    """Run `python -m jx.cli.main ARGS` (what the `jx` script runs); return the result."""
    return subprocess.run([sys.executable, "-m", "jx.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def blocks(stdout: str) -> dict:
    """Split dump-ir output into {entry name: (header line 1, signature line, IR text)}."""
    out = {}
    for block in stdout.rstrip("\n").split("\n\n"):
        first, sig, ops, *ir = block.split("\n")
        m = re.fullmatch(r"# (\w+)  (\S+):(\d+)  \(after ([\w,]+)\)", first)
        assert m, f"bad header line {first!r}"
        assert sig.startswith(f"# {m.group(1)}(")
        assert re.fullmatch(r"# ops: trace \d+( -> \w+ \d+)*", ops), ops
        assert ir[0].startswith("graph(") and ir[-1] == "}", ir
        out[m.group(1)] = (m.groups(), sig[2:], "\n".join(ir))
    return out


def expected_ir(sample: str) -> dict:
    """The IR of each entry traced in-process and run through the whole pipeline, to
    compare with the subprocess's text."""
    from jx.passes import pipeline
    module = loading.load_model(str(SAMPLES / sample))
    result = {}
    for entry in jx.entries_of(module):
        args, static = entry.call_args()
        graph, _ = trace_pytree(entry.fn, args, {}, static)
        result[entry.name] = str(pipeline.run(jx.verify(graph)))
    return result


SAMPLE_ENTRIES = {
    "mlp.py": ["predict", "loss"],
    "attention.py": ["softmax", "layernorm", "attention_block"],
    "elementwise.py": ["chain", "sum_of_squares"],
    "ode.py": ["integrate"],
    "train.py": ["sgd_step", "per_example_grads"],
}


@pytest.mark.parametrize("sample", sorted(SAMPLE_ENTRIES))
def test_dump_ir_sample(sample):
    if sample == "ode.py" and not hasattr(jx.lax, "fori_loop"):
        pytest.skip("jx.lax.fori_loop is not implemented yet")
    r = jx_cli("dump-ir", f"samples/{sample}")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    got = blocks(r.stdout)
    assert list(got) == SAMPLE_ENTRIES[sample]          # every entry, in source order
    want = expected_ir(sample)
    for name, ((_, path, line, stage), sig, ir) in got.items():
        assert path == f"samples/{sample}" and stage == "simplify"
        src = (SAMPLES / sample).read_text().splitlines()
        # The header names the function's first line (its decorator, in Python >= 3.8).
        first_def = next(ln for ln in src[int(line) - 1:] if ln.startswith("def "))
        assert first_def.startswith(f"def {name}(")
        assert ir == want[name]


def test_mlp_signatures_and_ops():
    r = jx_cli("dump-ir", "samples/mlp.py")
    got = blocks(r.stdout)
    sig = got["predict"][1]
    assert sig == ("predict(params: {b1: f32[1024], b2: f32[1024], b3: f32[10], "
                   "w1: f32[784,1024], w2: f32[1024,1024], w3: f32[1024,10]}, "
                   "x: f32[128,784]) -> f32[128,10]")
    assert got["loss"][1].endswith("x: f32[128,784], y: i32[128]) -> f32[]")
    assert got["predict"][2].count("= dot_general") == 3
    for prim in ("reduce_max", "exp", "log", "reduce_sum"):
        assert f" = {prim}" in got["loss"][2]


def test_entry_and_shape_overrides():
    r = jx_cli("dump-ir", "samples/mlp.py", "--entry", "loss", "--shape", "x=f32[32,784]",
               "-s", "y=i32[32]", "-s", "params.w3=f32[1024,5]", "-s", "params.b3=f32[5]",
               "--after", "trace")
    assert r.returncode == 0, r.stderr
    got = blocks(r.stdout)
    assert list(got) == ["loss"]
    sig = got["loss"][1]
    assert "b3: f32[5]," in sig and "w3: f32[1024,5]}" in sig
    assert sig.endswith("x: f32[32,784], y: i32[32]) -> f32[]")
    assert "f32[32,5] = dot_general" in got["loss"][2]


def test_multiple_entries_keep_requested_order():
    r = jx_cli("dump-ir", "samples/attention.py", "-e", "layernorm", "-e", "softmax")
    assert r.returncode == 0, r.stderr
    assert list(blocks(r.stdout)) == ["layernorm", "softmax"]


def test_version_and_help():
    r = jx_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"jx {jx.__version__}"
    r = jx_cli("dump-ir", "--help")
    assert r.returncode == 0
    for opt in ("--entry", "--shape", "--after", "--debug"):
        assert opt in r.stdout


def test_console_script_installed():
    exe = shutil.which("jx", path=os.path.dirname(sys.executable) + os.pathsep +
                       os.environ.get("PATH", ""))
    if exe is None:
        pytest.skip("the `jx` console script is not on PATH (package not installed)")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"jx {jx.__version__}"


# ---------------------------------------------------------------- broken models

BROKEN = {
    "syntax.py": """\
        import jx

        @jx.export(x=jx.f32[3])
        def f(x)
            return x
        """,
    "raises.py": """\
        import jx

        SIZES = {}
        N = SIZES["hidden"]
        """,
    "empty.py": """\
        import jx
        import jx.numpy as jnp

        def not_exported(x):
            return jnp.sin(x)
        """,
    "branch.py": """\
        import jx
        import jx.numpy as jnp


        @jx.export(x=jx.f32[16])
        def relu(x):
            if jnp.sum(x) > 0:
                return x
            return jnp.zeros_like(x)
        """,
    "mismatch.py": """\
        import jx
        import jx.numpy as jnp


        @jx.export(x=jx.f32[3, 4], w=jx.f32[5, 2])
        def layer(x, w):
            return jnp.tanh(x @ w)
        """,
    "typo.py": """\
        import jx
        import jx.numpy as jnp


        @jx.export(x=jx.f32[3])
        def f(x):
            return jnp.sinn(x)
        """,
}


@pytest.fixture
def broken(tmp_path):
    for name, text in BROKEN.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def check_failure(r, *fragments):
    """Exit 1, empty stdout, one paragraph on stderr with every fragment, no traceback."""
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout == ""
    err = r.stderr.strip()
    assert "Traceback" not in err and "\n" not in err, err
    for frag in fragments:
        assert frag in err, (frag, err)
    return err


@pytest.mark.parametrize("model, fragments", [
    ("syntax.py", ["syntax.py:4: error:", "not valid Python", "Fix the syntax error"]),
    ("raises.py", ["raises.py:4: error:", "KeyError: 'hidden'", "python raises.py"]),
    ("empty.py", ["empty.py", "declares no entry functions", "@jx.export"]),
    ("branch.py", ["branch.py:7: error:", "TracerConversionError", "at branch.py:7",
                   "jx.lax.cond", "jx.numpy.where"]),
    ("mismatch.py", ["mismatch.py:7: error:", "tracing entry 'layer' failed", "ShapeError",
                     "declared for 'layer' at mismatch.py:5", "--shape"]),
    ("typo.py", ["typo.py:7: error:", "AttributeError", "sinn", "Fix the model code"]),
])
def test_broken_model(broken, model, fragments):
    err = check_failure(jx_cli("dump-ir", model, cwd=broken), *fragments)
    assert err.endswith("--debug to see the full traceback.") or model in ("syntax.py",
                                                                          "empty.py")


def test_debug_shows_traceback(broken):
    r = jx_cli("dump-ir", "branch.py", "--debug", cwd=broken)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "TracerConversionError" in r.stderr


def test_model_path_outside_cwd(broken, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere")
    r = jx_cli("dump-ir", broken / "branch.py", cwd=other)
    check_failure(r, f"{broken / 'branch.py'}:7: error:")


@pytest.mark.parametrize("args, fragments", [
    (["--entry", "nope"], ["no entry 'nope'", "predict, loss", "--entry"]),
    (["--shape", "x=f32[32,,784]"], ["bad --shape 'x=f32[32,,784]'", "e.g. x=f32[256,784]"]),
    (["--shape", "x=q8[32]"], ["unknown dtype 'q8'", "f32"]),
    (["--shape", "x:f32[32]"], ["bad --shape 'x:f32[32]'", "ARG=DTYPE[D0,D1,...]"]),
    (["--shape", "z=f32[3]"], ["no selected entry has an argument 'z'", "params, x, y"]),
    (["--shape", "params.w9=f32[3]"], ["no leaf 'params.w9'"]),
    (["--shape", "x=f32[64,784]"], ["tracing entry 'loss' failed", "ShapeError"]),
    (["--after", "fusion"], ["unknown pipeline stage 'fusion'", "trace"]),
])
def test_bad_options(args, fragments):
    check_failure(jx_cli("dump-ir", "samples/mlp.py", *args), *fragments)


def test_missing_model_file(tmp_path):
    check_failure(jx_cli("dump-ir", "absent.py", cwd=tmp_path), "absent.py does not exist")


def test_dump_ir_after_transformations():
    r = jx_cli("dump-ir", "samples/mlp.py", "--entry", "loss", "--after", "grad,simplify")
    assert r.returncode == 0, r.stderr
    ((_, _, _, stage), _, ir), = blocks(r.stdout).values()
    assert stage == "grad,simplify"
    counts = dict(re.findall(r"(\w+) (\d+)", r.stdout.split("\n")[2][len("# ops:"):]))
    counts = {k: int(v) for k, v in counts.items()}
    assert counts["simplify"] < counts["grad"]          # simplify shrank the gradient graph
    assert counts["simplify"] <= 3 * counts["trace"]    # and it stays within 3x the forward
    assert ir.count("dot_general") == 9          # 3 forward + 2 per layer backward
    r = jx_cli("dump-ir", "samples/mlp.py", "--entry", "predict", "--after", "vmap",
               "--batch", "4")
    assert r.returncode == 0, r.stderr
    assert "graph(a:f32[4,1024]" in r.stdout
    r = jx_cli("dump-ir", "samples/mlp.py", "--entry", "predict", "--after", "grad")
    assert r.returncode == 1 and "one scalar float" in r.stderr
