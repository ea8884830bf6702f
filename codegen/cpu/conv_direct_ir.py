"""Vector IR pieces of the direct convolution kernels (conv_direct.py): loads and
stores (masked at tails, so nothing outside a buffer is touched), splats, FMAs,
lane shuffles, and index arithmetic that folds static parts."""
from __future__ import annotations

import llvmlite.ir as ir

from . import irutil as U


def _vt(et, n):
    return ir.VectorType(et, n)


def _i32s(vals):
    return ir.Constant(_vt(U.I32, len(vals)), [ir.Constant(U.I32, v) for v in vals])


def _gep(b, ptr, off, et):
    return b.gep(ptr, [_c(off)], source_etype=et, inbounds=True)


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


def _mask(b, n, valid):
    """<n x i1>: lane e < valid (an int: constant, an i64 value: at run time)."""
    if isinstance(valid, int):
        return ir.Constant(_vt(U.I1, n), [ir.Constant(U.I1, int(e < valid)) for e in range(n)])
    iota = ir.Constant(_vt(U.I64, n), [ir.Constant(U.I64, e) for e in range(n)])
    return b.icmp_signed("<", iota, _splat(b, valid, n))


def _splat(b, v, n):
    vt = _vt(v.type, n)
    one = b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(U.I32, 0))
    return b.shuffle_vector(one, one, _i32s([0] * n))


def _vload(b, ptr, off, et, n, valid=None):
    """n elements at ptr[off:]; with `valid`, only the first `valid` (zeros after)."""
    p = _gep(b, ptr, off, et)
    vt = _vt(et, n)
    if valid is None:
        return b.load(p, typ=vt, align=_size(et))
    fn = _declare(b.module, f"llvm.masked.load.v{n}{et.intrinsic_name}.p0", vt,
                  [U.PTR, U.I32, _vt(U.I1, n), vt])
    return b.call(fn, [p, ir.Constant(U.I32, _size(et)), _mask(b, n, valid),
                       ir.Constant(vt, None)])


def _vload_if(b, ptr, off, et, n, valid, ok):
    """_vload where the i1 `ok` holds, else zeros (nothing read: off may then lie
    outside the buffer)."""
    vt = _vt(et, n)
    mask = _splat(b, ok, n)
    if valid is not None:
        mask = b.and_(mask, _mask(b, n, valid))
    p = _gep(b, ptr, b.select(ok, _c(off), ir.Constant(U.I64, 0)), et)
    fn = _declare(b.module, f"llvm.masked.load.v{n}{et.intrinsic_name}.p0", vt,
                  [U.PTR, U.I32, _vt(U.I1, n), vt])
    return b.call(fn, [p, ir.Constant(U.I32, _size(et)), mask, ir.Constant(vt, None)])


def _vload_mask(b, ptr, off, et, n, mask):
    """The lanes `mask` (<n x i1>) of ptr[off:off + n], zeros elsewhere; the others
    are not read, and may lie outside the buffer (the address is not inbounds)."""
    vt = _vt(et, n)
    p = b.gep(ptr, [_c(off)], source_etype=et)
    fn = _declare(b.module, f"llvm.masked.load.v{n}{et.intrinsic_name}.p0", vt,
                  [U.PTR, U.I32, _vt(U.I1, n), vt])
    return b.call(fn, [p, ir.Constant(U.I32, _size(et)), mask, ir.Constant(vt, None)])


def _vstore(b, v, ptr, off, et, valid=None):
    p = _gep(b, ptr, off, et)
    n = v.type.count
    if valid is None:
        st = b.store(v, p)
        st.align = _size(et)
        return
    fn = _declare(b.module, f"llvm.masked.store.v{n}{et.intrinsic_name}.p0", U.VOID,
                  [v.type, U.PTR, U.I32, _vt(U.I1, n)])
    b.call(fn, [v, p, ir.Constant(U.I32, _size(et)), _mask(b, n, valid)])


def _size(et) -> int:
    return 8 if isinstance(et, ir.DoubleType) else 4


def _fma(b, x, y, acc):
    return U.call_intrinsic(b, "llvm.fma", [x, y, acc])


def _pick(b, v, mask):
    """v's lanes `mask` (None: v itself)."""
    if mask is None:
        return v
    return b.shuffle_vector(v, v, _i32s(mask))


def _c(v):
    return U.i64(v) if isinstance(v, int) else v


def _add(b, x, y):
    if isinstance(x, int) and isinstance(y, int):
        return x + y
    if isinstance(y, int) and y == 0:
        return x
    if isinstance(x, int) and x == 0:
        return y
    return b.add(_c(x), _c(y))


def _mul(b, x, k: int):
    if isinstance(x, int):
        return x * k
    return x if k == 1 else b.mul(x, U.i64(k))


def _interleave(b, vs, W):
    """One vector of O * W lanes, lane l O + o = vs[o][l] (O <= 4)."""
    O = len(vs)
    if O == 1:
        return vs[0]
    lo = b.shuffle_vector(vs[0], vs[1], _i32s(list(range(2 * W))))
    if O == 2:
        cat = (lo, lo)
    else:
        hi = b.shuffle_vector(vs[2], vs[3] if O == 4 else vs[2], _i32s(list(range(2 * W))))
        cat = (lo, hi)
    return b.shuffle_vector(cat[0], cat[1], _i32s([(e % O) * W + e // O for e in range(O * W)]))
