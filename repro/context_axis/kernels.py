"""The context axis (004, Choi: "Rethinking causal mask: proposing context axis to decoder
attention"): Algorithm 1 and the single-layer attention kernels. Whole models: `whole_model`.

Semantics (004 §2.1–2.3). Every token has one state per context slice c = 0 … S−1. In slice c a
query at position i may attend key j iff j ≤ max(i, c) (Algorithm 1: masked iff j > i and
j > c). Restricted to positions ≤ c, slice c is therefore a *bidirectional* pass over x[0..c]
through every layer, and positions > c of slice c never influence positions ≤ c. The diagonal
read-out h_{t,t} (Fig 2) thus equals the last position of a bidirectional pass over x[0..t]
(`whole_model.prefix_oracle`). Positions > c of slice c (the strictly upper triangle of
Fig 3, i < j in the figure's (context i, time j) indexing) never reach the diagonal.

Kernels (one signature `fn(q, k, v, pad=None, out="full")`): q, k, v of shape (B, H, C, S, d) —
per-slice states, C = S slices — return (B, H, C, S, d), or with out="diagonal" h_{t,t} as
(B, H, S, d). `naive` is the literal 5-D mask and softmax (reference, S ≤ 256); `masked_sdpa`
passes the (S, S, S) mask to scaled_dot_product_attention (the source's formulation);
`trimmed` computes each slice over its prefix only (positions ≤ c, no mask) and leaves the
upper triangle zero. `segment` (Fig 4) takes and returns the band layout (B, H, K, S, d) of
segment size K (`to_band` / `from_band`), never storing the S² layout. `pad` (B, S) marks
padding keys (Algorithm 1's P). The one-launch kernels for a GPU (`flex`, `dense`, `jagged`, and
`attend`'s "auto" choice between them) are in `gpu_kernels`.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from repro.context_axis import gpu_kernels
from repro.context_axis.kernel_args import check_out, check_qkv
from repro.ground import native, threads
from repro.ground.runtime import ReproError

KERNELS = ("naive", "masked_sdpa", "trimmed", "segment")
FULL_LAYOUT = ("naive", "masked_sdpa", "trimmed")  # take (B, H, C, S, d); "segment" takes the band
NAIVE_MAX_S = 256  # the literal (B, H, S, S, S) score tensor: 4·H·S³ bytes per sample


def algorithm1_mask(x: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    """004 Algorithm 1, line by line: M ∈ {0,1}^{B×1×S×S×S}, 1 = masked, M[b,0,c,i,j] = 1 iff
    j > max(i, c) or x[b, j] is padding."""
    if x.dim() != 2:
        raise ReproError(f"Algorithm 1 takes token ids (B, S), got shape {tuple(x.shape)}")
    B, S = x.shape
    # 2: padding mask P (B, 1, 1, S)
    P = (x == pad_id) if pad_id is not None else torch.zeros_like(x, dtype=torch.bool)
    P = P[:, None, None, :].to(torch.uint8)
    # 3: causal mask C[i, j] = 1 iff j > i; 4: context mask T, the same
    C = torch.triu(torch.ones(S, S, dtype=torch.uint8, device=x.device), diagonal=1)
    T = C.clone()
    # 5: align shapes C[None, :, :], T[:, None, :]
    C, T = C[None, :, :], T[:, None, :]
    # 6: elementwise product (S, S, S); 7: batch axis
    M1 = C * T
    M2 = M1[None, :, :, :]
    # 8: combine with the padding mask; 9: the head axis
    M = torch.maximum(M2, P)
    return M[:, None].bool()


def allowed(S: int, device: torch.device | str | None = None, future: int = 0) -> torch.Tensor:
    """(S, S, S) bool: slice c, query i may attend key j (j ≤ max(i, c)). `future` > 0 lets
    each slice's queries also see the next `future` keys beyond c (j ≤ max(i, c + future)): a
    broken mask, the negative control of CA-3 / CA-5 (the diagonal then reads the future)."""
    if int(future) < 0:
        raise ReproError(f"future must be ≥ 0, got {future}")
    c = torch.arange(S, device=device)
    return c[None, None, :] <= torch.maximum(c[:, None, None] + int(future), c[None, :, None])


def naive(q, k, v, pad: torch.Tensor | None = None, out: str = "full") -> torch.Tensor:
    """The literal formulation: (B, H, S, S, S) scores, Algorithm 1's mask, softmax, @ v.
    `pad` (B, S) bool marks padding keys. out="diagonal": the same work, then h_{t,t}."""
    check_qkv(q, k, v)
    check_out(out)
    S = q.shape[3]
    if S > NAIVE_MAX_S:
        raise ReproError(
            f"naive context-axis attention is a reference for S ≤ {NAIVE_MAX_S} (got {S}): "
            f"its score tensor alone is {4 * q.shape[0] * q.shape[1] * S**3 / 2**30:.1f} GiB"
        )
    masked = ~allowed(S, q.device)[None, None]  # (1, 1, S, S, S)
    if pad is not None:
        masked = masked | pad[:, None, None, None, :]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(masked, float("-inf"))
    h = torch.softmax(scores, dim=-1) @ v
    return diagonal(h) if out == "diagonal" else h


def masked_sdpa(q, k, v, pad: torch.Tensor | None = None, out: str = "full") -> torch.Tensor:
    """The source's formulation through scaled_dot_product_attention: the (S, S, S) boolean mask
    broadcast over batch and heads (SDPA converts it to a float copy on every call; NOTES)."""
    check_qkv(q, k, v)
    check_out(out)
    mask = allowed(q.shape[3], q.device)[None, None]
    if pad is not None:
        mask = mask & ~pad[:, None, None, None, :]
    h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return diagonal(h) if out == "diagonal" else h


def trimmed(q, k, v, pad: torch.Tensor | None = None, out: str = "full") -> torch.Tensor:
    """Each slice c over its prefix 0 … c only, bidirectionally (no mask needed): exactly the
    entries that can reach the diagonal; positions > c are left zero (004 Fig 3). One
    (c+1)×(c+1) attention per slice, all heads at once, written straight into the output
    (one SDPA per slice, or buckets of slices padded to a common length, were slower on CPU:
    NOTES). On a CPU with 2 intra-op threads (SPLIT_MAX_WORKERS, the count measured) and
    S ≥ SPLIT_MIN_S the slices are shared out between two single-threaded worker threads
    (`harness.threads`; results bit for bit the one loop's).
    `out="diagonal"` computes only query c of slice c: O(S²) work, (B, H, S, d)."""
    check_qkv(q, k, v)
    B, H, S, _, d = q.shape
    scale = 1.0 / math.sqrt(d)
    if out == "diagonal":
        res = q.new_empty(B, H, S, v.shape[-1])
        for c in range(S):
            s = (q[:, :, c, c : c + 1] * scale) @ k[:, :, c, : c + 1].transpose(-1, -2)  # (B, H, 1, c+1)
            if pad is not None:
                s = s.masked_fill(pad[:, None, None, : c + 1], float("-inf"))
            res[:, :, c] = (torch.softmax(s, -1) @ v[:, :, c, : c + 1])[:, :, 0]
        return res
    check_out(out)
    return _by_slices(q, k, v, pad, lambda res, cs: _prefix_attention(q, k, v, pad, res, scale, cs))


# S from which `trimmed` splits its slices over threads. On a 2-core CPU, float32, medians of
# 20 alternating calls: split / one loop at S = 128 17.9 / 14.7 ms (thread start, per-op overhead),
# 160 27.5 / 26.9, 192 41.5 / 46.0, 256 73.3 / 82.6; at S = 512 421–462 ms in eight whole benchmark
# runs, the one loop 437–438 in two alternating with them (README, "Context axis")
SPLIT_MIN_S = 192
# the split was measured with 2 intra-op threads only (2 workers beat 3 or 4 there); with more, one
# Python thread per core would contend for the GIL, so `trimmed` keeps its one loop until measured
SPLIT_MAX_WORKERS = 2


def _by_slices(q, k, v, pad, body, min_s: int | None = None) -> torch.Tensor:
    """The full-layout output of `trimmed` / `fused`: zeros that are never written (the upper
    triangle), and `body(res, slices)` filling each listed slice's prefix rows — on worker threads,
    slices shared out by their (c+1)² cost, where `_split_workers` allows, else in this thread."""
    S = q.shape[3]
    res = _zeros_left_untouched((*q.shape[:-1], v.shape[-1]), q)
    n = _split_workers(q, k, v, pad, min_s)
    if n > 1:
        threads.run_split(lambda cs: body(res, cs), threads.balanced([(c + 1) ** 2 for c in range(S)], n))
    else:
        body(res, list(range(S)))
    return res


def _split_workers(q, k, v, pad, min_s: int | None = None) -> int:
    """Workers for `trimmed`'s slices: 1 (the calling thread) on a GPU, below SPLIT_MIN_S, with
    more than SPLIT_MAX_WORKERS intra-op threads, or where the workers would not do what the
    calling thread does (`threads.splittable`: autocast, autograd recording, FlopCounterMode —
    CA-6/7 count the kernels' FLOPs at S = 256 —, vmap, the profiler, …). `min_s`: another
    threshold than SPLIT_MIN_S (`fused`'s)."""
    if (
        q.device.type != "cpu"
        or q.shape[3] < (SPLIT_MIN_S if min_s is None else min_s)
        or not threads.splittable(q, k, v, pad)
    ):
        return 1
    n = threads.workers()
    return n if n <= SPLIT_MAX_WORKERS else 1


def _prefix_attention(q, k, v, pad, res, scale: float, slices) -> None:
    """`trimmed`'s loop: slice c attends over its prefix 0 … c, written into res[:, :, c, :c+1]."""
    for c in slices:
        s = (q[:, :, c, : c + 1] * scale) @ k[:, :, c, : c + 1].transpose(-1, -2)  # (B, H, c+1, c+1)
        if pad is not None:
            s = s.masked_fill(pad[:, None, None, : c + 1], float("-inf"))
        # assigned, not matmul(out=res[...]): an `out` that is a strided view of the result made
        # the kernel 23% slower at S = 512 on a 2-core CPU (0.61 s → 0.47 s)
        res[:, :, c, : c + 1] = torch.softmax(s, -1) @ v[:, :, c, : c + 1]


FUSED_SOURCE = Path(__file__).with_name("fused.cpp")
# `fused` splits from a smaller S than `trimmed`: it has no Python per op to share the GIL. On a
# 2-core CPU, float32, H = 4, d = 64, medians of 10 alternating calls, split / on the calling
# thread: S = 32 3.7 / 2.3 ms, 64 4.0 / 5.9, 128 11.0 / 22.1, 512 362 / 364 (`trimmed` 405)
FUSED_SPLIT_MIN_S = 64


def fused(q, k, v, pad: torch.Tensor | None = None, out: str = "full") -> torch.Tensor:
    """`trimmed` as one C++ op per worker thread (fused.cpp, built at first use: `harness.native`;
    needs a C++ compiler and ninja): per slice and head the scores stay in one reused buffer, the
    softmax is one pass with its normalisation applied to the output rows, both matmuls go to the
    BLAS on raw pointers, and A·V is written straight into the output. Same results as `trimmed`
    up to float rounding (tests), the same output (upper triangle zero), the same split over
    worker threads (from FUSED_SPLIT_MIN_S). CPU, float32, no autograd: elsewhere a ReproError
    says to use `trimmed`. `out="diagonal"` is `trimmed`'s (O(S²), no softmax worth fusing).
    Opt-in (`attend(kernel="fused")`, the benchmark): no claim uses it, so no claim needs a
    compiler."""
    check_qkv(q, k, v)
    check_out(out)
    if out == "diagonal":
        return trimmed(q, k, v, pad, out)
    ts = (q, k, v) if pad is None else (q, k, v, pad)
    if any(t.device.type != "cpu" for t in ts) or {q.dtype, k.dtype, v.dtype} != {torch.float32}:
        got = ", ".join(f"{n} {t.dtype} on {t.device}" for n, t in zip("qkv", (q, k, v)))
        raise ReproError(f"the fused context-axis kernel is CPU float32 only (got {got}); use kernel='trimmed'")
    if pad is not None:  # as `trimmed` takes it: bool, (B, S) or broadcast to it
        if pad.dtype != torch.bool:
            raise ReproError(f"pad marks padding keys with a bool tensor (B, S), got {pad.dtype}")
        pad = pad.expand(q.shape[0], q.shape[3])
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        raise ReproError(
            "the fused context-axis kernel has no backward: call it under torch.no_grad(), or use kernel='trimmed'"
        )
    native.load(FUSED_SOURCE)
    op = torch.ops.repro_context_axis.trimmed_slices
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    scale = 1.0 / math.sqrt(q.shape[-1])
    return _by_slices(q, k, v, pad, lambda res, cs: op(q, k, v, res, pad, cs, scale), FUSED_SPLIT_MIN_S)


_NUMPY_DTYPES = {torch.float32: "float32", torch.float64: "float64"}


def _zeros_left_untouched(shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """Zeros of `like`'s dtype and device for an output whose upper triangle is never written
    (`trimmed`: half of the (…, S, S, d) layout). On the CPU they come from calloc (numpy's
    zeros): the OS hands out pages already zero on first touch, so no pass writes zeros over all
    S²·d floats first — at S = 512 (268 MB) `new_zeros`'s fill was 11% of the kernel's time, and
    with it the kernel ran 0.44 s against 0.38 s here (a 2-core CPU, float32), with
    identical results. numpy asks the OS for transparent huge pages on such an array (madvise,
    honoured here: THP "madvise"), and on this VM first touches of those pages stalled: 3 of 8
    calls at S = 512 took 0.59–0.79 s against 0.39 s, with 0.3–0.6 s of system time (the kernel's
    counters showed no compaction stall; the cause was not found), and the benchmark's mean with
    them. So this one allocation goes without the hint (numpy's process-wide switch, restored
    after): 0.40–0.45 s a call, no stall in 16. Elsewhere (a GPU, bfloat16)
    `new_zeros`."""
    if like.device.type == "cpu" and like.dtype in _NUMPY_DTYPES:
        import numpy as np

        hint = getattr(getattr(np, "_core", np).multiarray, "_set_madvise_hugepage", None)
        before = hint(False) if hint else None
        try:
            return torch.from_numpy(np.zeros(shape, dtype=_NUMPY_DTYPES[like.dtype]))
        finally:
            if hint:
                hint(before)
    return like.new_zeros(shape)


# --------------------------------------------------------------------------- segment level (Fig 4)


def to_band(h: torch.Tensor, size: int) -> torch.Tensor:
    """Full per-slice states (…, C, S, d) → the segment band (…, K, S, d), K = min(size, S):
    band[…, r, t] = h[…, t + r, t] (token t in slice t + r; zero where t + r ≥ S)."""
    S = h.shape[-2]
    K = _band_size(size, S)
    t = torch.arange(S, device=h.device)
    c = t[None, :] + torch.arange(K, device=h.device)[:, None]  # (K, S)
    valid = c < S
    out = torch.gather(h, -3, c.clamp(max=S - 1)[..., None].expand(*h.shape[:-3], K, S, h.shape[-1]))
    return out * valid[..., None]


def from_band(band: torch.Tensor) -> torch.Tensor:
    """The segment band (…, K, S, d) → the full (…, S, S, d) layout of 004 Fig 4: slot (c, t)
    holds band[min(c − t, K − 1), t] for c ≥ t (deeper slices reuse the last computed state),
    zero for c < t."""
    K, S = band.shape[-3], band.shape[-2]
    c = torch.arange(S, device=band.device)[:, None]
    t = torch.arange(S, device=band.device)[None, :]
    r = (c - t).clamp(0, K - 1)  # (C, S)
    full = torch.gather(band, -3, r[..., None].expand(*band.shape[:-3], S, S, band.shape[-1]))
    return full * (c >= t)[..., None]


def _band_size(size: int, S: int) -> int:
    if int(size) < 1:
        raise ReproError(f"segment size must be ≥ 1, got {size}")
    return min(int(size), S)


def segment(q, k, v, pad: torch.Tensor | None = None, out: str = "full", *, chunk: int = 16) -> torch.Tensor:
    """004 §2.3 / Fig 4 at the kernel level: q, k, v in the segment band layout (B, H, K, S, d)
    (`to_band`), K the segment size. In slice c the live tokens are t = c−K+1 … c (band rows
    r = c − t); every earlier token t′ ≤ c − K is frozen at its last computed state, band row
    K−1, shared by all later slices. Each live query attends to the frozen keys t′ ≤ c − K and
    to the live keys of its slice — all of them, since every key ≤ c is visible in slice c.
    Returns the band of outputs (B, H, K, S, d), or with out="diagonal" row 0 (B, H, S, d).

    Nothing outside the band is stored or computed: memory K·S·d per head, time S²·K·d — both
    linear in K at fixed S. K = 1 is causal attention; K = S the full (trimmed) context axis.
    `chunk` slices are processed together (their scores: chunk·K·(S+K) per head)."""
    if q.dim() != 5 or q.shape != k.shape or q.shape[:-1] != v.shape[:-1] or q.shape[2] > q.shape[3]:
        raise ReproError(
            "the segment kernel takes q, k, v in the band layout (B, H, K, S, d), K ≤ S; got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    check_out(out)
    B, H, K, S, d = q.shape
    dev = q.device
    scale = 1.0 / math.sqrt(d)
    kf, vf = k[:, :, K - 1], v[:, :, K - 1]  # frozen states (B, H, S, d)
    res = q.new_zeros(B, H, K, S, v.shape[-1])
    r = torch.arange(K, device=dev)
    for c0 in range(0, S, chunk):
        c = torch.arange(c0, min(S, c0 + chunk), device=dev)  # slices in this chunk (n,)
        t = c[:, None] - r[None, :]  # live token of band row r in slice c (n, K)
        live = t >= 0
        tc = t.clamp(min=0)
        ql = q[:, :, r[None, :].expand_as(t), tc] * scale  # (B, H, n, K, d)
        kl = k[:, :, r[None, :].expand_as(t), tc]
        vl = v[:, :, r[None, :].expand_as(t), tc]
        n_frozen = max(0, int(c[-1]) - K + 1)  # frozen keys t′ ≤ c − K for the chunk's last slice
        s_live = ql @ kl.transpose(-1, -2)  # (B, H, n, K, K)
        mask_live = ~live[:, None, :]  # (n, 1, K): key r′ of slice c does not exist
        if pad is not None:
            mask_live = mask_live[None, None] | pad[:, tc][:, None, :, None, :]  # (B, 1, n, 1, K)
        s_live = s_live.masked_fill(mask_live, float("-inf"))
        if n_frozen:
            s_frozen = ql.flatten(2, 3) @ kf[:, :, :n_frozen].transpose(-1, -2)  # (B, H, n·K, F)
            s_frozen = s_frozen.unflatten(2, (len(c), K))
            tf = torch.arange(n_frozen, device=dev)
            mask_frozen = (tf[None, :] > (c[:, None] - K))[:, None, :]  # (n, 1, F)
            if pad is not None:
                mask_frozen = mask_frozen | pad[:, None, None, None, :n_frozen]
            s_frozen = s_frozen.masked_fill(mask_frozen, float("-inf"))
            p = torch.softmax(torch.cat([s_frozen, s_live], -1), -1)
            o = (p[..., :n_frozen].flatten(2, 3) @ vf[:, :, :n_frozen]).unflatten(2, (len(c), K))
            o = o + p[..., n_frozen:] @ vl
        else:
            o = torch.softmax(s_live, -1) @ vl
        res[:, :, r[None, :].expand_as(t)[live], t[live]] = o[:, :, live]
    return res[:, :, 0] if out == "diagonal" else res


def attend(q, k, v, kernel: str = "auto", pad: torch.Tensor | None = None, out: str = "full") -> torch.Tensor:
    """Dispatch by name: KERNELS (pure PyTorch), "fused" (`trimmed` as a C++ op, CPU float32,
    built at first use), or `gpu_kernels`' one-launch kernels "flex", "dense", "jagged".
    "auto" (the default) runs `gpu_kernels.pick(q, pad)`'s choice: `trimmed` on the CPU and in
    float64, on CUDA `dense` for small S and `flex` beyond. "segment" takes the band layout
    (`to_band`)."""
    fns = {
        "naive": naive,
        "masked_sdpa": masked_sdpa,
        "trimmed": trimmed,
        "segment": segment,
        "fused": fused,
        "flex": gpu_kernels.flex,
        "dense": gpu_kernels.dense,
        "jagged": gpu_kernels.jagged,
    }
    if kernel == "auto":
        kernel = gpu_kernels.pick(q, pad)
    if kernel not in fns:
        raise ReproError(f"unknown context-axis kernel {kernel!r}: auto, {', '.join(fns)}")
    return fns[kernel](q, k, v, pad, out)


def diagonal(h: torch.Tensor) -> torch.Tensor:
    """h_{t,t} (004 Fig 2): (…, C, S, d) → (…, S, d)."""
    return torch.diagonal(h, dim1=-3, dim2=-2).movedim(-1, -2)


def upper_zeroed(h: torch.Tensor) -> torch.Tensor:
    """004 Fig 3: the strictly-upper part (positions t > c of slice c) set to zero."""
    S = h.shape[-2]
    keep = torch.tril(torch.ones(S, S, dtype=torch.bool, device=h.device))  # [c, t]: t ≤ c
    return h * keep[..., None]


def segment_reuse(h: torch.Tensor, k: int) -> torch.Tensor:
    """004 §2.3, Fig 4: with segment size k, token t is computed only in slices t … t+k−1;
    deeper slices c ≥ t+k reuse h_{t+k−1, t}. Applied to per-slice states (…, C, S, d) between
    layers. k = 1 leaves only diagonal states (exactly causal attention); k ≥ S changes nothing
    (the full axis). A reference formulation: it still stores all S² states (`segment` is the
    kernel that does not)."""
    if k < 1:
        raise ReproError(f"segment size must be ≥ 1, got {k}")
    S = h.shape[-2]
    if k >= S:
        return h
    c = torch.arange(S, device=h.device)[:, None]
    t = torch.arange(S, device=h.device)[None, :]
    src = torch.where(c >= t + k, t + k - 1, c)  # (C, S): which slice's state slot (c, t) holds
    return torch.gather(h, -3, src[..., None].expand(h.shape))
