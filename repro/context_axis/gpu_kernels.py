"""The full context axis in one launch: every slice's prefix attention at once (`kernels`'
signature, `fn(q, k, v, pad=None, out="full")`, q, k, v (B, H, C, S, d) with C = S), for a GPU.

`kernels.trimmed` runs one (c+1)×(c+1) attention per slice, ≈ 6 ops each: S·6 launches a call,
which on a GPU leaves the hardware idle (0.001 of an H100's bf16 matmul rate at S = 512, NOTES).
The kernels here cover all slices in one or a few launches, exactly (Algorithm 1's padding P and
`trimmed`'s upper-triangle convention: positions > c of slice c are zero):

- `flex`: FlexAttention (`torch.nn.attention.flex_attention`) with the slices as the batch —
  q, k, v viewed (B·H·C, 1, S, d), no copy for contiguous inputs — and a BlockMask
  (`slice_block_mask`) that lists for slice c only the (query block, key block) tiles with both
  indices ≤ c // block: the tiles wholly inside the prefix are *full* (no mask evaluated), those
  on its edge *partial* (mask_mod: query ≤ c, key ≤ c, key not padding). One fused launch
  forward and its backward, compiled by torch.compile on CUDA. Memory: the output and one
  float32 log-sum-exp per row (1/(2d) of a bf16 output). On the CPU FlexAttention runs eagerly —
  torch's dense reference (B·H·C·S² scores), forward only: torch refuses its CPU backward — and
  no default picks it there. Tiles are `block` = FLEX_BLOCK square, so slice c costs
  (⌈(c+1)/block⌉·block)² instead of (c+1)²: 1 + ≈ 1.5·block/S of the useful work in all.
- `dense`: one SDPA call over all slices, each over all S keys under a key mask (j ≤ c, and not
  padding), rows past c zeroed afterwards: twice the useful work, a vendor kernel (memory-efficient
  attention on CUDA, which takes a mask), nothing to compile. Where a whole slice fits in one of
  flex's tiles (S ≤ block) flex does this same work, so small S go here (`pick`).
- `jagged`: the prefixes gathered into a jagged nested tensor (B·C sequences of lengths 1 … S),
  one SDPA (flash-attention's variable-length kernel on CUDA for half precision), scattered back:
  the useful work only, but packed copies of the three inputs' prefix halves and of the output
  besides it (the benchmark measures the memory) and no key mask, so no padding. The benchmark's
  anchor is its SDPA alone, on inputs already packed.

`out="diagonal"` is `diagonal_only` for all three: query c of slice c over keys 0 … c, one
batched masked attention (O(S²·d), differentiable). `pick(q, pad)` names the kernel
`kernels.attend(kernel="auto")` runs — on CUDA `dense` for S ≤ DENSE_MAX_S, else `flex`;
`trimmed` on the CPU, in float64 (FlexAttention has no float64 on CUDA: NOTES) or where
torch.compile cannot build for the device — and logs the choice (logger
`repro.context_axis.gpu_kernels`, DEBUG).

The whole-model form (`whole_model.packed_axis_logits`): each sample's S slices packed into one
row of S(S+1)/2 tokens (`packed_slices`), positions restarting at 0 in every slice, and every
attention layer restricted to its own slice, bidirectionally (`PackedAttention`: FlexAttention
with a document mask, or the jagged SDPA): all slices in one forward, the MLPs over the useful
tokens only.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
import math
import warnings

import torch
import torch.nn.functional as F

from repro.context_axis.kernel_args import check_out, check_qkv
from repro.ground.runtime import ReproError

log = logging.getLogger(__name__)

GPU_KERNELS = ("flex", "dense", "jagged")
# FlexAttention's default sparse block (torch's _DEFAULT_SPARSE_BLOCK_SIZE): its CUDA kernels'
# tiles must divide it
FLEX_BLOCK = 128
# `pick`'s size rule, a prior from the tiles, not a measurement: up to one tile per slice flex
# computes the whole S×S square of every slice, the same work as `dense`'s one vendor call, plus
# its mask; beyond it flex skips the tiles past c that `dense` computes (the GPU benchmark's
# S = 64 … 2048 rows are what to set it from)
DENSE_MAX_S = FLEX_BLOCK
# torch.compile of flex_attention: torch's automatic dynamic shapes (None) — the first shape
# builds a kernel for itself, a second shape one for all later sizes (flex keeps the head count
# and head dim static) —, so a run of many shapes never reaches dynamo's recompile limit (past
# it flex would fall back to eager: every score materialised). True (symbolic from the start)
# failed to compile a padded mask in torch 2.13's CPU template; the CUDA template is untested
# with it. `mode` (e.g. "max-autotune-no-cudagraphs") is per call of `flex`
FLEX_DYNAMIC = None

_EAGER_FLEX_WARNING = "flex_attention called without torch.compile"


# --------------------------------------------------------------------------- choice


def compiler_ready(device: torch.device | str) -> bool:
    """Whether torch.compile can build FlexAttention's kernel on `device`: on CUDA it needs
    Triton (in torch's CUDA wheels; absent, `pick` falls back to `trimmed` and says so)."""
    kind = torch.device(device).type
    return kind == "cuda" and importlib.util.find_spec("triton") is not None


def pick_for(device_type: str, dtype: torch.dtype, S: int, compiles: bool) -> str:
    """`pick`'s rule on plain values: "trimmed" off CUDA, in float64 or without a compiler;
    on CUDA "dense" for S ≤ DENSE_MAX_S, else "flex"."""
    if device_type != "cuda" or dtype == torch.float64 or not compiles:
        return "trimmed"
    return "dense" if S <= DENSE_MAX_S else "flex"


def pick(q: torch.Tensor, pad: torch.Tensor | None = None) -> str:
    """The kernel `attend(kernel="auto")` runs on these inputs (see the module docstring); the
    CPU's choice, `trimmed`, is the claims' own. Logged at DEBUG."""
    name = pick_for(q.device.type, q.dtype, q.shape[-2], compiler_ready(q.device))
    log.debug("context-axis kernel %s for %s %s on %s", name, tuple(q.shape), q.dtype, q.device)
    return name


# --------------------------------------------------------------------------- FlexAttention


def _compiled(mode: str | None):
    from torch.nn.attention.flex_attention import flex_attention

    return _compile_flex(flex_attention, mode)


@functools.lru_cache(maxsize=4)
def _compile_flex(fn, mode: str | None):
    return torch.compile(fn, dynamic=FLEX_DYNAMIC, mode=mode)


def _flex_call(q, k, v, block_mask, scale: float, *, options=None, mode=None, gqa: bool = False):
    """FlexAttention compiled on CUDA, eager elsewhere (its dense reference: every score of the
    batch materialised, fine for tests; torch warns once that it is unfused)."""
    from torch.nn.attention.flex_attention import flex_attention

    kw = dict(block_mask=block_mask, scale=scale, enable_gqa=gqa, kernel_options=options)
    if q.device.type == "cuda":
        return _compiled(mode)(q, k, v, **kw)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_EAGER_FLEX_WARNING)
        return flex_attention(q, k, v, **kw)


def _ordered(dense: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A (…, rows, cols) bool block matrix → FlexAttention's (count per row, column indices of
    the set blocks first, ascending): BlockMask's kv_num_blocks / kv_indices layout."""
    num = dense.sum(-1, dtype=torch.int32)
    idx = torch.argsort(dense.to(torch.int32), dim=-1, descending=True, stable=True)
    return num.contiguous(), idx.to(torch.int32).contiguous()


def slice_blocks(S: int, block: int, pad: torch.Tensor | None = None, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Which (query block, key block) tiles slice c needs: (partial, full), bool (Gp, C, n, n)
    with n = ⌈S/block⌉ and Gp = 1 (no padding) or G, one row of `pad` (G, S) per group. A tile is
    *full* when every query and key in it is ≤ c (and no key is padding): FlexAttention then
    skips the mask there; *partial* when some are (the mask decides); absent otherwise. A last
    tile cut short by S is never full (as create_block_mask: the positions past S count as
    masked)."""
    device = pad.device if pad is not None else device
    n = -(-S // block)
    start = torch.arange(n, device=device) * block
    c = torch.arange(S, device=device)[:, None]
    any_q, all_q = start[None, :] <= c, (start + block - 1)[None, :] <= c  # (C, n)
    if pad is None:
        any_k, all_k = any_q[None], all_q[None]  # (1, C, n)
    else:
        held = F.pad(pad.bool(), (0, n * block - S), value=True).view(pad.shape[0], n, block)  # (G, n, block)
        pos = torch.arange(n * block, device=device).view(n, block)
        first = torch.where(held, n * block, pos).amin(-1)  # each tile's first real key (G, n)
        any_k = first[:, None, :] <= c[None]  # (G, C, n)
        all_k = all_q[None] & ~held.any(-1)[:, None, :]
    any_ = any_q[None, :, :, None] & any_k[:, :, None, :]
    full = all_q[None, :, :, None] & all_k[:, :, None, :]
    return any_ & ~full, full


def _block_mask(partial: torch.Tensor, full: torch.Tensor, mask_mod, block: int, n: int):
    """FlexAttention's BlockMask from tile maps (…, n_q, n_kv): `partial` tiles go through
    `mask_mod`, `full` tiles are taken whole, the rest skipped; sequences of length `n`."""
    from torch.nn.attention.flex_attention import BlockMask

    kv_num, kv_idx = _ordered(partial)
    full_num, full_idx = _ordered(full)
    return BlockMask.from_kv_blocks(
        kv_num_blocks=kv_num,
        kv_indices=kv_idx,
        full_kv_num_blocks=full_num,
        full_kv_indices=full_idx,
        BLOCK_SIZE=block,
        mask_mod=mask_mod,
        seq_lengths=(n, n),
    )


def slice_block_mask(G: int, S: int, pad: torch.Tensor | None = None, block: int = FLEX_BLOCK, device=None):
    """The BlockMask of G groups of folded slices, (G·C, 1, S, S), row g·C + c slice c of group g
    (a (sample, head) pair); `pad` (G, S) or None: `slice_blocks`' tiles, mask_mod "query ≤ c
    and key ≤ c (and key not padding)"."""
    device = pad.device if pad is not None else torch.device(device)
    partial, full = slice_blocks(S, block, pad, device)
    C, n = S, partial.shape[-1]

    def rows(t):  # (Gp, C, n, n) → (G·C, 1, n, n)
        return t.expand(G, C, n, n).reshape(G * C, 1, n, n)

    c_of = torch.arange(C, device=device, dtype=torch.int32).repeat(G)  # slice of each row
    if pad is None:

        def mask_mod(b, h, q_idx, kv_idx):
            c = c_of[b]
            return (q_idx <= c) & (kv_idx <= c)

    else:
        # real keys per row (G·C, S), one index deep (a gather through a second index tensor
        # failed to compile in torch 2.13's C++ flex template)
        keep = (~pad.bool()).repeat_interleave(C, dim=0)

        def mask_mod(b, h, q_idx, kv_idx):
            c = c_of[b]
            return (q_idx <= c) & (kv_idx <= c) & keep[b, kv_idx]

    return _block_mask(rows(partial), rows(full), mask_mod, block, S)


@functools.lru_cache(maxsize=4)
def _cached_slice_mask(G: int, S: int, block: int, device: str):
    """The unpadded BlockMask, kept for the next call of the same shape (its four index tensors
    are 4·G·S·(S/block)² int32: 34 MB at G = 4, S = 2048) and with the same mask_mod object, so a
    compiled flex_attention finds its guards met."""
    return slice_block_mask(G, S, None, block, device)


def _pad_of(pad: torch.Tensor | None, B: int, S: int) -> torch.Tensor | None:
    if pad is None:
        return None
    if pad.dtype != torch.bool:
        raise ReproError(f"pad marks padding keys with a bool tensor (B, S), got {pad.dtype}")
    return pad.expand(B, S)


# CUDA's grid y-limit: FlexAttention launches its batch entries along y, so one call takes at
# most this many folded slices (B·H·C = 8,192 at B = 1, H = 4, S = 2,048); more go in chunks
FLEX_MAX_ROWS = 65535


def flex(q, k, v, pad=None, out: str = "full", *, block: int = FLEX_BLOCK, options=None, mode=None) -> torch.Tensor:
    """All slices through one FlexAttention call (module docstring; ⌈B·H·C / FLEX_MAX_ROWS⌉
    calls, whole (sample, head) groups each). `block`: the BlockMask's tile; `options`:
    FlexAttention's kernel_options (tile sizes, warps, stages); `mode`: torch.compile's (CUDA)."""
    check_qkv(q, k, v)
    check_out(out)
    B, H, C, S, d = q.shape
    pad = _pad_of(pad, B, S)
    if out == "diagonal":
        return diagonal_only(q, k, v, pad)
    G = B * H
    pads = None if pad is None else pad[:, None].expand(B, H, S).reshape(G, S)
    groups = [t.reshape(G, C, S, t.shape[-1]) for t in (q, k, v)]  # views of contiguous inputs
    step = max(1, FLEX_MAX_ROWS // C)
    outs = []
    for g0 in range(0, G, step):
        n = min(G, g0 + step) - g0
        if pads is None:
            bm = _cached_slice_mask(n, S, int(block), str(q.device))
        else:
            bm = slice_block_mask(n, S, pads[g0 : g0 + n], int(block))
        fold = [t[g0 : g0 + n].reshape(n * C, 1, S, t.shape[-1]) for t in groups]
        outs.append(_flex_call(*fold, bm, 1.0 / math.sqrt(d), options=options, mode=mode))
    h = outs[0] if len(outs) == 1 else torch.cat(outs)
    return h.view(B, H, C, S, -1)


# --------------------------------------------------------------------------- dense and jagged SDPA


def _prefix_rows(S: int, device) -> torch.Tensor:
    """(C, S) bool: position i is in slice c's prefix (i ≤ c) — also key j visible in slice c."""
    c = torch.arange(S, device=device)
    return c[None, :] <= c[:, None]


def dense(q, k, v, pad=None, out: str = "full") -> torch.Tensor:
    """One SDPA over all slices (as (B·H, C, S, d): slices in the head axis), each over all S
    keys with the keys past c (and padding) masked, then rows past c set to zero: `trimmed`'s
    output with twice its work, through the vendor's masked kernel."""
    check_qkv(q, k, v)
    check_out(out)
    B, H, C, S, d = q.shape
    pad = _pad_of(pad, B, S)
    if out == "diagonal":
        return diagonal_only(q, k, v, pad)
    tri = _prefix_rows(S, q.device)
    if pad is None:
        mask = tri[None, :, None, :]  # (1, C, 1, S)
    else:
        mask = (
            (tri[None, None, :, None, :] & ~pad[:, None, None, None, :]).expand(B, H, C, 1, S).reshape(B * H, C, 1, S)
        )
    fold = [t.reshape(B * H, C, S, t.shape[-1]) for t in (q, k, v)]
    h = F.scaled_dot_product_attention(*fold, attn_mask=mask)
    past = ~tri[None, :, :, None]  # (1, C, S, 1): rows i > c
    # in place unless autograd holds the output (SDPA's backward reads it)
    h = h.masked_fill(past, 0) if h.requires_grad else h.masked_fill_(past, 0)
    return h.view(B, H, C, S, -1)


@functools.lru_cache(maxsize=8)
def _jagged_index(S: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(flat, starts): flat (T,) = c·S + i over i ≤ c, slice by slice (T = S(S+1)/2), and each
    slice's first packed index (S + 1,) with T last."""
    lengths = torch.arange(1, S + 1, device=device)
    starts = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])
    c = torch.arange(S, device=device).repeat_interleave(lengths)
    i = torch.arange(starts[-1].item(), device=device) - starts[c]
    return c * S + i, starts


def _nested(values: torch.Tensor, offsets: torch.Tensor, S: int) -> torch.Tensor:
    """(total, H, d) values, offsets of the sequences → (sequences, H, j, d) jagged, with the
    lengths' bounds given (no device sync to find them)."""
    nt = torch.nested.nested_tensor_from_jagged(values, offsets, min_seqlen=1, max_seqlen=S)
    return nt.transpose(1, 2)


def jagged(q, k, v, pad=None, out: str = "full") -> torch.Tensor:
    """The prefixes as a jagged nested tensor, one SDPA, scattered into the zero layout (module
    docstring). No padding: nested-tensor SDPA takes no key mask."""
    check_qkv(q, k, v)
    check_out(out)
    B, H, C, S, d = q.shape
    if pad is not None:
        raise ReproError("the jagged context-axis kernel takes no padding (nested SDPA has no key mask); use 'flex'")
    if out == "diagonal":
        return diagonal_only(q, k, v, None)
    flat, starts = _jagged_index(S, str(q.device))
    T = flat.numel()
    offsets = torch.cat(
        [(starts[:-1][None] + T * torch.arange(B, device=q.device)[:, None]).flatten(), starts.new_full((1,), B * T)]
    )

    def pack(t):  # (B, H, C, S, e) → (B·T, H, e)
        return t.flatten(2, 3)[:, :, flat].transpose(1, 2).reshape(B * T, H, t.shape[-1]).contiguous()

    o = F.scaled_dot_product_attention(*(_nested(pack(t), offsets, S) for t in (q, k, v)))
    o = o.transpose(1, 2).values().view(B, T, H, -1).transpose(1, 2)  # (B, H, T, e)
    return q.new_zeros(B, H, C * S, o.shape[-1]).index_copy(2, flat, o).view(B, H, C, S, -1)


def diagonal_only(q, k, v, pad=None) -> torch.Tensor:
    """h_{t,t} (B, H, S, d): query c of slice c over keys 0 … c (and not padding), all slices in
    one batched attention; the softmax in at least float32."""
    B, H, C, S, d = q.shape
    i = torch.arange(S, device=q.device)
    s = torch.einsum("bhcd,bhcjd->bhcj", q[:, :, i, i], k) / math.sqrt(d)  # (B, H, C, S)
    masked = ~_prefix_rows(S, q.device)  # [c, j]: j > c
    if pad is not None:
        masked = masked | pad[:, None, None, :]
    p = torch.softmax(s.masked_fill(masked, float("-inf")), -1, dtype=torch.promote_types(s.dtype, torch.float32))
    return torch.einsum("bhcj,bhcjd->bhcd", p.to(v.dtype), v)


# --------------------------------------------------------------------------- packed slices (whole model)


@dataclasses.dataclass(frozen=True, eq=False)
class PackedSlices:
    """S slices packed as one row of N = S(S+1)/2 tokens: token n belongs to slice `doc[n]` at
    position `pos[n]` (slice c holds x[0..c]); `last[c]` is slice c's last token (its diagonal
    read-out)."""

    S: int
    doc: torch.Tensor  # (N,) int32
    pos: torch.Tensor  # (N,) int64
    last: torch.Tensor  # (S,) int64
    starts: torch.Tensor  # (S + 1,) int64, N last


@functools.lru_cache(maxsize=8)
def packed_slices(S: int, device: str) -> PackedSlices:
    lengths = torch.arange(1, S + 1, device=device)
    starts = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])
    doc = torch.arange(S, device=device).repeat_interleave(lengths)
    pos = torch.arange(int(starts[-1]), device=device) - starts[doc]
    return PackedSlices(S, doc.to(torch.int32), pos, starts[1:] - 1, starts)


def packed_blocks(doc: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(partial, full) bool (1, 1, n, n) tiles of the block-diagonal "same slice" mask over N
    packed tokens with non-decreasing slice ids `doc`: a tile is needed when the slices of its
    queries and keys overlap, full when one slice covers all of both (and it is not cut short)."""
    N = doc.numel()
    n = -(-N // block)
    first = doc[torch.arange(n, device=doc.device) * block]
    last = doc[torch.clamp(torch.arange(1, n + 1, device=doc.device) * block, max=N) - 1]
    whole = (torch.arange(1, n + 1, device=doc.device) * block <= N) & (first == last)
    any_ = (first[:, None] <= last[None, :]) & (first[None, :] <= last[:, None])
    full = whole[:, None] & whole[None, :] & (first[:, None] == first[None, :])
    return (any_ & ~full)[None, None], full[None, None]


@functools.lru_cache(maxsize=4)
def _packed_block_mask(S: int, block: int, device: str):
    doc = packed_slices(S, device).doc
    partial, full = packed_blocks(doc, block)

    def mask_mod(b, h, q_idx, kv_idx):
        return doc[q_idx] == doc[kv_idx]

    return _block_mask(partial, full, mask_mod, block, doc.numel())


PACKED = ("flex", "jagged")


@dataclasses.dataclass(frozen=True)
class PackedAttention:
    """Attention within each packed slice, bidirectionally (`whole_model`'s AttentionInterface
    calls it in place of SDPA): query (B, Hq, N, d), key and value (B, Hkv, N, d) → (B, Hq, N, d).
    `how`: "flex" (FlexAttention, the slices' block-diagonal BlockMask, grouped heads native) or
    "jagged" (nested-tensor SDPA over the B·S slices, grouped heads repeated)."""

    S: int
    how: str = "flex"
    block: int = FLEX_BLOCK

    def __post_init__(self) -> None:
        if self.how not in PACKED:
            raise ReproError(f"packed context-axis attention is one of {PACKED}, not {self.how!r}")

    def __call__(self, query, key, value, scaling: float | None = None) -> torch.Tensor:
        B, Hq, N, d = query.shape
        if N != self.S * (self.S + 1) // 2:
            raise ReproError(f"packed slices of S = {self.S} are {self.S * (self.S + 1) // 2} tokens, got {N}")
        scale = scaling if scaling is not None else 1.0 / math.sqrt(d)
        # one dtype for all three (under autocast q, k can come out of RoPE in float32, v in bf16)
        dev = query.device.type
        dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else query.dtype
        query, key, value = (t.to(dtype) for t in (query, key, value))
        if self.how == "flex":
            bm = _packed_block_mask(self.S, int(self.block), str(query.device))
            return _flex_call(query, key, value, bm, scale, gqa=key.shape[1] != Hq)
        if key.shape[1] != Hq:
            key, value = (t.repeat_interleave(Hq // key.shape[1], dim=1) for t in (key, value))
        starts = packed_slices(self.S, str(query.device)).starts
        offsets = torch.cat(
            [
                (starts[:-1][None] + N * torch.arange(B, device=query.device)[:, None]).flatten(),
                starts.new_full((1,), B * N),
            ]
        )
        nts = (
            _nested(t.transpose(1, 2).reshape(B * N, t.shape[1], t.shape[-1]).contiguous(), offsets, self.S)
            for t in (query, key, value)
        )
        o = F.scaled_dot_product_attention(*nts, scale=scale)
        return o.transpose(1, 2).values().view(B, N, Hq, -1).transpose(1, 2)
