"""Planning of the CPU FFT kernels (no code here): factorisation into Stockham
stages, twiddle-table layout, Bluestein sizes and scratch sizes.

A complex plan of length n is either a list of Stockham stages (mixed radix 8, 4,
2, 3, 5, 7 and the small primes up to MAX_RADIX) or, when n has a larger prime
factor, Bluestein's algorithm over a smooth length M >= 2n - 1. Stage i (radix r,
stride s = product of the earlier radices, m = n / (s r)) reads
src[q + s (p + k m)] and writes dst[q + s (r p + j)] = DFT_r(...)_j * w^(p j),
w = exp(-2 pi i / (r m)): the autosort form, so no bit reversal and every access
runs along q (contiguous) or, for the first stages with s < the vector width,
along t = q + s p.

Tables hold, per plan, complex entries split into a real and an imaginary run:
the stage twiddles (r - 1) m per stage in [j - 1][p] order; a Bluestein plan adds
its chirp (n), the scaled transform of the conjugate chirp (M) and the length-M
plan's own table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# odd radices with their own butterfly; a larger prime factor goes to Bluestein
MAX_RADIX = 13


@dataclass(frozen=True)
class Stage:
    r: int          # radix
    s: int          # stride: product of the earlier radices
    m: int          # n / (s r): twiddled groups
    tw: int         # offset of its twiddles in the plan's table (complex entries)


@dataclass(frozen=True)
class Plan:
    """A forward, unscaled complex FFT of length n."""
    n: int
    stages: tuple = ()          # Stockham stages (direct plans)
    blue: "Plan | None" = None  # the length-M plan of a Bluestein plan
    cols: int = 1               # transforms side by side: element (i, c) at i cols + c

    @property
    def table(self) -> int:
        """Complex entries of its twiddle table (the sub-plan's included)."""
        if self.blue is not None:
            return self.n + self.blue.n + self.blue.table
        return sum((st.r - 1) * st.m for st in self.stages if st.m > 1)

    @property
    def work(self) -> int:
        """Complex entries of scratch one transform needs (besides in and out)."""
        if self.blue is not None:
            return 2 * self.blue.n + self.blue.work
        return self.n * self.cols if len(self.stages) > 1 else 0

    @property
    def key(self) -> str:
        if self.blue is not None:
            return f"b{self.n}"
        return f"d{self.n}" + (f"x{self.cols}" if self.cols > 1 else "")

    def side_by_side(self, cols: int) -> "Plan":
        """cols transforms interleaved element by element: the stages' strides times
        cols, so each pass runs along whole rows of cols (no shuffles); same table."""
        assert self.blue is None, "Bluestein plans transform one row at a time"
        stages = tuple(Stage(st.r, st.s * cols, st.m, st.tw) for st in self.stages)
        return Plan(self.n, stages, None, self.cols * cols)


def factors(n: int) -> list | None:
    """Radices whose product is n, powers of two first (largest first), then the
    odd primes ascending; None when a prime factor exceeds MAX_RADIX."""
    twos = 0
    while n % 2 == 0:
        n //= 2
        twos += 1
    # radix 8 where it can (fewest passes over memory); 2^(3k+1) as 8^(k-1) 4 4
    if twos % 3 == 1 and twos >= 4:
        out = [8] * (twos // 3 - 1) + [4, 4]
    else:
        out = [8] * (twos // 3) + {0: [], 1: [2], 2: [4]}[twos % 3]
    p = 3
    while n > 1:
        if p > MAX_RADIX:
            return None
        while n % p == 0:
            out.append(p)
            n //= p
        p += 2
    return out


def smooth_at_least(n: int) -> int:
    """The smallest 2^a 3^b 5^c >= n with a >= 3 (whole vectors in every stage)."""
    best = 1 << max(3, (n - 1).bit_length())
    f5 = 1
    while f5 < best:
        f35 = f5
        while f35 < best:
            m = f35 * 8
            while m < n:
                m *= 2
            best = min(best, m)
            f35 *= 3
        f5 *= 5
    return best


def plan(n: int) -> Plan:
    if n < 1:
        raise ValueError(f"an FFT plan needs n >= 1, got {n}")
    radices = factors(n)
    if radices is None:
        return Plan(n, blue=plan(smooth_at_least(2 * n - 1)))
    stages, s, tw = [], 1, 0
    for r in radices:
        m = n // (s * r)
        stages.append(Stage(r, s, m, tw))
        if m > 1:
            tw += (r - 1) * m
        s *= r
    return Plan(n, tuple(stages))


def flops(n: int) -> int:
    """The conventional 5 n log2 n of one complex transform of length n."""
    return int(5 * n * math.log2(n)) if n > 1 else 0
