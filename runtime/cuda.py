"""CUDA artifacts: load `<name>.cuda.json` (manifest + launch plans) with its PTX or
cubin through CuPy, and run entries on the current stream.

    art = jx.runtime.load("build/mlp.cuda.json")
    logits = art.predict(params, x)      # CuPy or NumPy arrays in, CuPy arrays out

A call checks its arguments as a CPU artifact does (NumPy arrays are copied to
the device), allocates the outputs and one workspace for the intermediates from
CuPy's memory pool, and runs the plan's steps: kernel launches, cuBLAS matmuls
(cupy.matmul on views of the buffers) and device copies. Only a plan with
serial kernels (which can fail) synchronises, to read their status word.
"""
from __future__ import annotations

import base64
import json
import os

import numpy as np

from . import abi, manifest as manifest_mod
from .entry import CompiledEntry
from .errors import (ArtifactLoadError, DtypeMismatchError, HashMismatchError, ManifestError,
                     ShapeMismatchError)
from .artifact import Artifact

SUFFIX = ".cuda.json"
_HEAP_BYTES = 256 << 20      # device malloc heap for serial kernels (sort, control flow)


def import_cupy(what: str = "running a CUDA artifact"):
    try:
        import cupy
    except ImportError:
        raise ArtifactLoadError(f"{what} needs CuPy, which is not installed: pip install "
                                "'jx[cuda]' (or a cupy-cudaXXx wheel matching your CUDA); "
                                "or compile for the CPU (jx compile --target cpu)") from None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
    except Exception as e:  # noqa: BLE001 - CUDARuntimeError or the above
        raise ArtifactLoadError(f"{what} needs an NVIDIA GPU, but CUDA reports none ({e}); "
                                "run it on a machine with a GPU or compile for the CPU "
                                "(jx compile --target cpu)") from None
    return cupy


def device_arch(cupy) -> str:
    return "sm_" + cupy.cuda.Device().compute_capability


def _cubin_fits(cubin_arch: str, device: str) -> bool:
    """A cubin runs on devices of its major version with at least its minor
    (an arch-specific sm_NNa cubin only on sm_NN)."""
    if cubin_arch.endswith("a"):
        return cubin_arch[:-1] == device
    want, have = int(cubin_arch[3:]), int(device[3:])
    return want // 10 == have // 10 and want <= have


def load_module(cupy, ptx: str | None = None, cubin: bytes | None = None):
    mod = cupy.cuda.function.Module()
    mod.load(cubin if cubin is not None else ptx.encode() + b"\0")
    return mod


class Executor:
    """Runs one plan. `run(inputs)` takes device arrays already checked for dtype,
    shape, C order and 16-byte alignment, and returns the output arrays."""

    def __init__(self, cupy, module, plan: dict, consts: list, where: str):
        self.cp = cupy
        self.where = where
        bufs = plan["buffers"]
        self.outputs = [(tuple(bufs[i]["shape"]), np.dtype(bufs[i]["dtype"]))
                        for i in plan["outputs"]]
        self.workspace = plan["workspace"]
        self.status = plan["status"]
        self.kinds = [(b["kind"], b.get("index", b.get("offset", b.get("const"))))
                      for b in bufs]
        self.bufs = bufs
        self.consts = consts
        if self.status:
            _raise_heap(cupy)
        fns = {}
        self.steps = []
        for s in plan["steps"]:
            if s["op"] == "launch":
                if s["kernel"] not in fns:
                    fns[s["kernel"]] = module.get_function(s["kernel"])
                self.steps.append(("launch", fns[s["kernel"]], (s["grid"],), (s["block"],),
                                   tuple(s["args"])))
            elif s["op"] == "matmul":
                self.steps.append(("matmul", s["lhs"], s["rhs"], s["out"],
                                   s["dimension_numbers"]))
            elif s["op"] == "copy":
                n = int(np.prod(bufs[s["dst"]]["shape"], dtype=np.int64)) * \
                    np.dtype(bufs[s["dst"]]["dtype"]).itemsize
                self.steps.append(("copy", s["dst"], s["src"], n))
            elif s["op"] == "copy_atoms":
                n = int(np.prod(bufs[s["out"]]["shape"], dtype=np.int64)) * \
                    np.dtype(bufs[s["out"]]["dtype"]).itemsize
                self.steps.append(("copy", s["out"], s["in"], n))
            elif s["op"] == "collective":
                spec = [(tuple(bufs[s[k]]["shape"]), np.dtype(bufs[s[k]]["dtype"]))
                        for k in ("in", "out")]
                self.steps.append(("collective", s, s["in"], s["out"], *spec))
            else:
                raise ManifestError(f"{where}: unknown plan step {s['op']!r}; the artifact "
                                    "comes from a newer jx: rebuild it with this version")
    def run(self, inputs: list) -> list:
        cp = self.cp
        empty = cp.empty
        outs = [empty(shape, dtype) for shape, dtype in self.outputs]
        ws = cp.cuda.alloc(self.workspace) if self.workspace else None
        base = ws.ptr if ws is not None else 0
        ptrs = []
        for kind, k in self.kinds:
            if kind == "in":
                ptrs.append(inputs[k].data.ptr)
            elif kind == "out":
                ptrs.append(outs[k].data.ptr)
            elif kind == "tmp":
                ptrs.append(base + k)
            else:
                ptrs.append(self.consts[k].data.ptr)
        stream = cp.cuda.get_current_stream()
        if self.status:
            cp.cuda.runtime.memsetAsync(base, 0, 4, stream.ptr)
        for step in self.steps:
            op = step[0]
            if op == "launch":
                _, fn, grid, block, args = step
                fn(grid, block, [ptrs[i] for i in args])
            elif op == "matmul":
                self._matmul(ptrs, inputs, outs, ws, *step[1:])
            elif op == "collective":
                from .nccl import run_collective
                _, s, i, o, in_spec, out_spec = step
                run_collective(cp, s, ptrs[i], ptrs[o], in_spec, out_spec)
            else:
                _, dst, src, n = step
                cp.cuda.runtime.memcpyAsync(ptrs[dst], ptrs[src], n, 3, stream.ptr)
        if self.status:
            code = int(cp.ndarray((1,), np.int32, memptr=ws).get()[0])
            if code:
                raise _status_error(code, self.where)
        return outs

    def _view(self, i, inputs, outs, ws):
        kind, k = self.kinds[i]
        if kind == "in":
            return inputs[k]
        if kind == "out":
            return outs[k]
        if kind == "const":
            return self.consts[k]
        b = self.bufs[i]
        return self.cp.ndarray(tuple(b["shape"]), np.dtype(b["dtype"]), memptr=ws + k)

    def _matmul(self, ptrs, inputs, outs, ws, li, ri, oi, dn):
        """dot_general as a (batched) cuBLAS matmul on views of the buffers."""
        cp = self.cp
        lhs, rhs = self._view(li, inputs, outs, ws), self._view(ri, inputs, outs, ws)
        out = self._view(oi, inputs, outs, ws)
        (lc, rc), (lb, rb) = dn
        lf = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
        rf = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
        size = lambda a, dims: int(np.prod([a.shape[d] for d in dims], dtype=np.int64))  # noqa
        nb, m, k, n = size(lhs, lb), size(lhs, lf), size(lhs, lc), size(rhs, rf)
        a = lhs.transpose(list(lb) + lf + list(lc)).reshape(nb, m, k)
        c = rhs.transpose(list(rb) + list(rc) + rf).reshape(nb, k, n)
        if a.dtype != out.dtype:
            a = a.astype(out.dtype)
        if c.dtype != out.dtype:
            c = c.astype(out.dtype)
        o = out.reshape(nb, m, n)
        if nb == 1:
            cp.matmul(a[0], c[0], out=o[0])
        else:
            cp.matmul(a, c, out=o)


def _raise_heap(cupy) -> None:
    """Serial kernels malloc scratch on the device; the default heap is 8 MiB."""
    rt = cupy.cuda.runtime
    try:
        if rt.deviceGetLimit(rt.cudaLimitMallocHeapSize) < _HEAP_BYTES:
            rt.deviceSetLimit(rt.cudaLimitMallocHeapSize, _HEAP_BYTES)
    except Exception:  # noqa: BLE001 - too late once a malloc kernel ran: keep the limit
        pass


def _status_error(code: int, where: str):
    from .errors import ArtifactMemoryError, EntryStatusError
    name, meaning = abi.STATUS.get(code, ("?", "unknown status"))
    text = f"{where} failed with status {code} ({name}: {meaning})"
    if code == abi.STATUS_OUT_OF_MEMORY:
        return ArtifactMemoryError(text + "; the device malloc heap is too small for a "
                                   "serial kernel's scratch", where, code)
    return EntryStatusError(text, where, code)


def upload_consts(cupy, items: list, where: str) -> list:
    out = []
    for i, c in enumerate(items):
        dt = manifest_mod.parse_dtype(c.get("dtype"), f"{where} consts[{i}]")
        raw = base64.b64decode(c["data"])
        host = np.frombuffer(raw, np.uint8 if dt == np.bool_ else dt)
        host = host.view(np.bool_) if dt == np.bool_ else host
        out.append(cupy.asarray(host.reshape(c["shape"])))
    return out


class CudaEntry(CompiledEntry):
    """An entry of a CUDA artifact: CuPy/NumPy arrays in, CuPy arrays out."""

    def _make_call(self):
        from . import treespec
        cp = self._fn.cp
        run = self._fn.run
        checks = tuple((leaf.shape, leaf.dtype) for leaf in self.spec.inputs)
        flatten = self._make_flatten()
        unflatten = treespec.compile_unflatten(self.spec.out_tree)
        device_array, convert = cp.ndarray, self._convert_device

        def call(args):
            leaves = list(flatten(args))
            for i, (x, (shape, dtype)) in enumerate(zip(leaves, checks)):
                if (type(x) is not device_array or x.dtype != dtype or x.shape != shape
                        or not x.flags.c_contiguous or x.data.ptr & 15):
                    leaves[i] = convert(i, x)
            return unflatten(run(leaves))

        return call

    def _convert_device(self, i: int, x):
        cp = self._fn.cp
        leaf = self.inputs[i]
        if isinstance(x, cp.ndarray):
            what = f"{self._where()}: argument {self._leaf_name(i)}"
            if x.dtype != leaf.dtype:
                raise DtypeMismatchError(
                    f"{what} has dtype {x.dtype.name}, expected {leaf}; pass "
                    f"x.astype(cupy.{leaf.dtype.name}) if that conversion is what you want "
                    "(arrays are never cast implicitly)")
            if x.shape != leaf.shape:
                raise ShapeMismatchError(
                    f"{what} has shape {list(x.shape)}, expected {leaf}; the artifact was "
                    "compiled for fixed shapes: pass that shape or recompile the entry")
            return x.copy()          # C order, 16-byte aligned, on this device
        return cp.asarray(self._convert(i, x))

    def _where(self) -> str:
        return f"entry {self.name!r} of {self._path}"


class CudaArtifact(Artifact):
    """A loaded CUDA artifact (same interface as Artifact)."""

    def __init__(self, path: str, manifest: dict, specs: list, cupy, module, consts):
        self.path = path
        self.manifest = manifest
        self._module = module
        self._consts = consts
        plans = {e["name"]: e["plan"] for e in manifest["entries"]}
        self.entries = {}
        for spec in specs:
            where = f"entry {spec.name!r} of {path}"
            ex = Executor(cupy, module, plans[spec.name], consts, where)
            self.entries[spec.name] = CudaEntry(spec, ex, path, owner=self)

    @property
    def target(self) -> str:
        return f"{self.manifest['target']} {self.manifest['cpu']}"


def is_cuda_path(path: str) -> bool:
    return path.endswith(SUFFIX)


def load_cuda(path: str, expected_hash: str | None = None) -> CudaArtifact:
    if not os.path.isfile(path):
        raise ArtifactLoadError(f"{path}: no such file; build it with "
                                "`jx compile MODEL.py --target cuda`")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ArtifactLoadError(f"{path}: cannot read the manifest ({e})") from None
    manifest, specs = manifest_mod.parse(text, path)
    if manifest.get("target_kind") != "cuda":
        raise ManifestError(f"{path}: not a CUDA manifest (target_kind is "
                            f"{manifest.get('target_kind')!r}); load the .so of a CPU build")
    if manifest["abi_version"] != abi.ABI_VERSION:
        raise ManifestError(f"{path} uses artifact ABI version {manifest['abi_version']}, but "
                            f"this runtime reads version {abi.ABI_VERSION}: recompile it")
    if any(not isinstance(e.get("plan"), dict) for e in manifest["entries"]):
        raise ManifestError(f"{path}: an entry has no launch plan; rebuild it with "
                            "`jx compile --target cuda`")
    folder = os.path.dirname(os.path.abspath(path))
    ptx_path = os.path.join(folder, manifest.get("ptx", ""))
    try:
        with open(ptx_path, encoding="ascii") as f:
            ptx = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ArtifactLoadError(f"{path}: cannot read its PTX {ptx_path} ({e}); keep the "
                                "files `jx compile` wrote together") from None
    try:
        manifest_mod.verify_content_hash(manifest, ptx)
    except HashMismatchError as e:
        raise HashMismatchError(f"{path}: {e}") from None
    if expected_hash is not None and manifest["content_hash"] != expected_hash:
        raise HashMismatchError(f"{path} has content hash {manifest['content_hash']}, "
                                f"expected {expected_hash}: it is not the build you pinned")
    cupy = import_cupy(f"loading {path}")
    cubin = None
    if manifest.get("cubin") and _cubin_fits(manifest["cpu"], device_arch(cupy)):
        with open(os.path.join(folder, manifest["cubin"]), "rb") as f:
            cubin = f.read()
    try:
        module = load_module(cupy, ptx, cubin)
    except Exception as e:  # noqa: BLE001 - the driver's CUDADriverError
        raise ArtifactLoadError(f"{path}: the CUDA driver could not load its "
                                f"{'cubin' if cubin else 'PTX'} ({e}); rebuild it for this "
                                f"GPU (jx compile --target cuda --arch {device_arch(cupy)})"
                                ) from None
    consts = upload_consts(cupy, manifest.get("consts", []), path)
    return CudaArtifact(path, manifest, specs, cupy, module, consts)


def manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=True,
                      allow_nan=False) + "\n"
