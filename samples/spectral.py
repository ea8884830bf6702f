"""Complex numbers and the FFT: three small spectral programs.

- `heat`: the periodic heat equation u_t = NU * u_xx on a ring of N points,
  solved exactly in Fourier space: each mode decays as exp(-NU k^2 t), so
  u(t) = irfft(rfft(u0) * exp(-NU k^2 t)) (a real transform: half the work).
- `spectrum`: the power spectral density of a signal by Welch's method: Hann
  windowed, half-overlapping segments, |rfft|^2 averaged.
- `mandelbrot`: escape counts of c = x + iy over a grid; the iteration
  z = z * z + c is a complex fori_loop carry (jx runs it tile by tile, each
  tile's steps in cache).

Entries:
  heat(u0: f32[4096], t: f32[]) -> f32[4096]
  spectrum(x: f32[65536]) -> f32[513]
  mandelbrot(c: c64[512, 512], steps=64) -> i32[512, 512]

    jx dump-ir samples/spectral.py --after decomplex
"""
import jx
import jx.numpy as jnp

N = 4096
NU = 0.5
SEGMENT = 1024


@jx.export(u0=jx.f32[N], t=jx.f32[()])
def heat(u0, t):
    k = 2 * jnp.pi * jnp.fft.rfftfreq(N, d=1.0 / N)
    return jnp.fft.irfft(jnp.fft.rfft(u0) * jnp.exp(-NU * k * k * t / N ** 2), n=N)


@jx.export(x=jx.f32[64 * SEGMENT])
def spectrum(x):
    hop = SEGMENT // 2
    starts = jnp.arange(0, x.shape[0] - SEGMENT + 1, hop)
    segments = x[starts[:, None] + jnp.arange(SEGMENT)[None, :]]
    window = 0.5 - 0.5 * jnp.cos(2 * jnp.pi * jnp.arange(SEGMENT) / SEGMENT)
    power = jnp.abs(jnp.fft.rfft(segments * window, axis=-1)) ** 2
    return power.mean(axis=0) / jnp.sum(window ** 2)


@jx.export(c=jx.c64[512, 512], static={"steps": 64})
def mandelbrot(c, steps):
    def step(i, state):
        z, count = state
        z = z * z + c
        return z, count + (jnp.abs(z) <= 2.0).astype(jnp.int32)
    return jx.lax.fori_loop(0, steps, step, (jnp.zeros_like(c),
                                              jnp.zeros(c.shape, jnp.int32)))[1]
