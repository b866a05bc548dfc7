"""Many seeded permutations at once, bit for bit as numpy draws them one by one.

A schedule that seats episode ``r`` with ``default_rng(SeedSequence([*head, r, tail]))
.permutation(n)[:k]`` (double_auction's pool games) costs about 50 microseconds per episode in
numpy, almost all of it building the SeedSequence, the PCG64 and the Generator: 90,000 games take
seconds before anything is played or checked. :func:`first_of_permutations` computes the same
draws in one compiled loop (about 1 microsecond each), following numpy's own algorithms:

- ``SeedSequence``: the entropy's 32-bit words (an int split little-endian, 0 as one word) hashed
  into a pool of 4 words (``mix_entropy``), then ``generate_state(4, uint64)``;
- ``PCG64``: ``pcg_setseq_128_srandom_r`` on those words (state and increment of 128 bits), the
  XSL-RR output, 32-bit draws taken from the low then the high half of each 64-bit output;
- ``Generator.permutation(n)``: ``arange(n)`` shuffled from the last index down, each swap index
  drawn by ``random_interval`` (a mask of the smallest covering power of two, rejection).

``tests/core/test_draws.py`` compares it with numpy over thousands of seeds, pool sizes and runs;
a numpy release that changed any of these would break reproducibility everywhere, not only here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M32 = np.uint64(0xFFFFFFFF)
_S16, _S32, _ONE, _ZERO = np.uint64(16), np.uint64(32), np.uint64(1), np.uint64(0)
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_PCG_HI, _PCG_LO = np.uint64(2549297995355413924), np.uint64(4865540595714422341)


def words(n: int) -> list[int]:
    """An int as SeedSequence reads it: 32-bit words, least significant first (0: one word)."""
    if n < 0:
        raise ValueError("entropy must be non-negative")
    out = [n & 0xFFFFFFFF] if n == 0 else []
    while n > 0:
        out.append(n & 0xFFFFFFFF)
        n >>= 32
    return out


def first_of_permutations(
    head: list[int], runs: np.ndarray, tail: int, n: int, k: int
) -> np.ndarray:
    """``out[i] = default_rng(SeedSequence([*head, runs[i], tail])).permutation(n)[:k]`` for
    every i (``runs`` below 2**32, ``tail`` below 2**32), as an (len(runs), k) int64 array."""
    runs = np.asarray(runs, dtype=np.int64)
    if runs.size and (runs.min() < 0 or runs.max() >= 2**32) or not 0 <= tail < 2**32:
        raise ValueError("runs and tail must be below 2**32 (one entropy word each)")
    entropy = np.array([w for h in head for w in words(int(h))], dtype=np.uint64)
    out = np.empty((runs.size, k), dtype=np.int64)
    _permutations(entropy, runs.astype(np.uint64), np.uint64(tail), n, k, out)
    return out


@njit(cache=True)
def _hashmix(value, h):
    value = (value ^ h) & _M32
    h = (h * _MULT_A) & _M32
    value = (value * h) & _M32
    return value ^ (value >> _S16), h


@njit(cache=True)
def _mix(x, y):
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> _S16)


@njit(cache=True)
def _step(s_hi, s_lo, i_hi, i_lo):
    """PCG64's LCG step: state * multiplier + increment, modulo 2**128, in two 64-bit halves."""
    a_lo, a_hi = s_lo & _M32, s_lo >> _S32
    b_lo, b_hi = _PCG_LO & _M32, _PCG_LO >> _S32
    p0, p1, p2 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo
    mid = (p0 >> _S32) + (p1 & _M32) + (p2 & _M32)
    lo = (p0 & _M32) | ((mid & _M32) << _S32)
    hi = a_hi * b_hi + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)
    hi = hi + s_lo * _PCG_HI + s_hi * _PCG_LO
    new_lo = lo + i_lo
    return hi + i_hi + (_ONE if new_lo < lo else _ZERO), new_lo


@njit(cache=True)
def _permutations(entropy, runs, tail, n, k, out):
    n_head = entropy.shape[0]
    ent = np.empty(n_head + 2, np.uint64)
    ent[:n_head] = entropy
    pool = np.empty(4, np.uint64)
    state = np.empty(8, np.uint64)
    arr = np.empty(n, np.int64)
    for row in range(runs.shape[0]):
        ent[n_head], ent[n_head + 1] = runs[row], tail
        n_ent = n_head + 2
        h = _INIT_A  # SeedSequence.mix_entropy
        for i in range(4):
            pool[i], h = _hashmix(ent[i] if i < n_ent else _ZERO, h)
        for i_src in range(4):
            for i_dst in range(4):
                if i_src != i_dst:
                    v, h = _hashmix(pool[i_src], h)
                    pool[i_dst] = _mix(pool[i_dst], v)
        for i_src in range(4, n_ent):
            for i_dst in range(4):
                v, h = _hashmix(ent[i_src], h)
                pool[i_dst] = _mix(pool[i_dst], v)
        h = _INIT_B  # SeedSequence.generate_state(4, uint64)
        for i in range(8):
            d = (pool[i % 4] ^ h) & _M32
            h = (h * _MULT_B) & _M32
            d = (d * h) & _M32
            state[i] = d ^ (d >> _S16)
        seed_hi, seed_lo = state[0] | (state[1] << _S32), state[2] | (state[3] << _S32)
        inc_hi, inc_lo = state[4] | (state[5] << _S32), state[6] | (state[7] << _S32)
        i_hi = (inc_hi << _ONE) | (inc_lo >> np.uint64(63))  # pcg_setseq_128_srandom_r
        i_lo = (inc_lo << _ONE) | _ONE
        s_hi, s_lo = _step(_ZERO, _ZERO, i_hi, i_lo)
        lo = s_lo + seed_lo
        s_hi, s_lo = s_hi + seed_hi + (_ONE if lo < s_lo else _ZERO), lo
        s_hi, s_lo = _step(s_hi, s_lo, i_hi, i_lo)
        has32, stored = False, _ZERO
        for i in range(n):  # Generator.permutation(n): arange(n), shuffled
            arr[i] = i
        for i in range(n - 1, 0, -1):
            mask = np.uint64(i)
            for shift in (1, 2, 4, 8, 16):
                mask |= mask >> np.uint64(shift)
            while True:  # random_interval(i) on 32-bit draws
                if has32:
                    has32, r = False, stored
                else:
                    s_hi, s_lo = _step(s_hi, s_lo, i_hi, i_lo)
                    x, rot = s_hi ^ s_lo, s_hi >> np.uint64(58)  # XSL-RR output
                    full = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
                    has32, stored, r = True, full >> _S32, full & _M32
                value = r & mask
                if value <= np.uint64(i):
                    break
            j = np.int64(value)
            arr[i], arr[j] = arr[j], arr[i]
        for c in range(k):
            out[row, c] = arr[c]
