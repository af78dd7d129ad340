"""repro.context_axis.gpu_kernels: the one-launch context-axis kernels (flex, dense, jagged) and
the packed whole-model path compute exactly `trimmed`'s output — forward, backward, padding
(Algorithm 1's P), the zero upper triangle, the diagonal — and the "auto" choices leave the CPU's
paths as they were.

Every check runs on the CPU (float64: flex eagerly, forward only — torch has no FlexAttention
backward on the CPU) and, where a CUDA device is present, on it (float32 and bfloat16, flex
compiled: the kernels the GPU runs). `scripts/context_axis_gpu.sh` runs this file on the GPU
machine. Tolerances, as ‖out − ref‖ / ‖ref‖ against float64 `trimmed`:

- float64: 1e-12 (the same sums in another order; measured ≤ 2e-15);
- float32: 2e-3 (float32 arithmetic lands near 1e-6 here; the bound leaves room for TF32 where
  a run allows it, ≈ 3e-4). One stray or missing key moves a row by about 1/(c+1) of its norm,
  and a wrong tile or mask does so to whole tiles of rows (≥ 6e-3 at S = 160), so this bound
  tells a masking error from rounding;
- bfloat16: 3e-2 (operands rounded to 8 bits, 2⁻⁸ ≈ 4e-3 per element, summed over d and c): it
  checks the half-precision path; the masks are float32's to check.
"""

from __future__ import annotations

import math

import pytest
import torch

from repro.context_axis import gpu_kernels as gk
from repro.context_axis import kernels as ca
from repro.context_axis import whole_model as cl
from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError, generator

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype"),
]

CUDA = torch.cuda.is_available()
NO_CUDA = "no CUDA device here: the CUDA half runs on the GPU machine (scripts/context_axis_gpu.sh)"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason=NO_CUDA))]
TOL = {torch.float64: 1e-12, torch.float32: 2e-3, torch.bfloat16: 3e-2}
# the dtypes each device checks: float64 on the CPU; on CUDA FlexAttention has no float64 (NOTES)
DTYPES = {"cpu": (torch.float64,), "cuda": (torch.float32, torch.bfloat16)}
# S and flex's tile per device: on the CPU (eager: the tiles change nothing) 33 over 16-tiles; on
# CUDA the kernel's own tiles must divide the BlockMask's, so its default 128, and S = 160: per
# slice c ≥ 127 a full tile, partial ones and one cut short by S
SIZES = {"cpu": (33, 16), "cuda": (160, gk.FLEX_BLOCK)}


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    got, want = got.detach().double(), want.detach().double()
    return float((got - want).norm() / want.norm())


def _qkv(B, H, S, d, seed, device="cpu", dtype=torch.float64):
    g = generator(seed)
    return [torch.randn(B, H, S, S, d, generator=g, dtype=torch.float64).to(device, dtype) for _ in range(3)]


def _pad(B, S, device="cpu"):
    """Right padding (sample 1's last third) and one padded key inside sample 0: every slice
    keeps key 0, so no slice is all padding."""
    pad = torch.zeros(B, S, dtype=torch.bool)
    pad[-1, S - S // 3 :] = True
    pad[0, 3] = True
    return pad.to(device)


# --------------------------------------------------------------------------- the block mask


def _tiles(allowed: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The definition of FlexAttention's tiles, by brute force: allowed (R, S, S) padded with
    False to whole tiles; a tile is partial if some entry is allowed and not all, full if all."""
    R, S, _ = allowed.shape
    n = -(-S // block)
    a = torch.zeros(R, n * block, n * block, dtype=torch.bool)
    a[:, :S, :S] = allowed
    a = a.view(R, n, block, n, block)
    any_, all_ = a.any(4).any(2), a.all(4).all(2)
    return any_ & ~all_, all_


def _dense(num: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """BlockMask's (count, indices) rows back to a bool (…, n, n) tile matrix."""
    n = idx.shape[-1]
    taken = torch.arange(n) < num[..., None].long()
    return torch.zeros(*idx.shape, dtype=torch.bool).scatter(-1, idx.long(), taken)


@pytest.mark.parametrize("S,block", [(11, 4), (16, 4), (33, 8), (9, 16)])
@pytest.mark.parametrize("padded", [False, True])
def test_slice_block_mask_lists_exactly_the_tiles_of_the_prefix(S, block, padded):
    """For every folded row (sample, head, slice c) the BlockMask's partial and full tiles are
    those of the dense mask "query ≤ c, key ≤ c, key not padding" (full tiles skip the mask in
    FlexAttention's kernel, so a wrongly full tile would let the future in); its mask_mod is that
    mask; and the transposed (query-side) lists the backward reads agree with the forward's."""
    B, H = 2, 2
    pad = _pad(B, S) if padded else None
    pads = None if pad is None else pad[:, None].expand(B, H, S).reshape(B * H, S)  # per (sample, head)
    bm = gk.slice_block_mask(B * H, S, pads, block, device="cpu")
    c = torch.arange(S)
    allowed = (c[None, :, None] <= c[:, None, None]) & (c[None, None, :] <= c[:, None, None])  # [c, i, j]
    allowed = allowed[None, None].expand(B, H, S, S, S)
    if pad is not None:
        allowed = allowed & ~pad[:, None, None, None, :]
    allowed = allowed.reshape(B * H * S, S, S)
    partial, full = _tiles(allowed, block)
    assert torch.equal(_dense(bm.kv_num_blocks, bm.kv_indices)[:, 0], partial)
    assert torch.equal(_dense(bm.full_kv_num_blocks, bm.full_kv_indices)[:, 0], full)
    assert partial.any() and bool(full.any()) == (S >= block)  # one tile cut short by S is never full
    assert torch.equal(_dense(bm.q_num_blocks, bm.q_indices)[:, 0], partial.transpose(-1, -2))
    b, i, j = (t.flatten() for t in torch.meshgrid(torch.arange(B * H * S), c, c, indexing="ij"))
    assert torch.equal(bm.mask_mod(b, torch.zeros_like(b), i, j).view_as(allowed), allowed)


@pytest.mark.parametrize("S,block", [(9, 4), (20, 16), (12, 128)])
def test_packed_block_mask_is_the_slices_block_diagonal(S, block):
    """The packed whole-model BlockMask: tiles of the "same slice" mask over S(S+1)/2 tokens."""
    lay = gk.packed_slices(S, "cpu")
    same = lay.doc[:, None] == lay.doc[None, :]
    partial, full = _tiles(same[None], block)
    got_partial, got_full = gk.packed_blocks(lay.doc, block)
    assert torch.equal(got_partial[0], partial) and torch.equal(got_full[0], full)
    assert lay.pos.tolist()[:6] == [0, 0, 1, 0, 1, 2] and lay.last.tolist()[:3] == [0, 2, 5]


# --------------------------------------------------------------------------- the kernels against trimmed


def _cases(device, padded=False):
    """(device, dtype) to check; on CUDA bf16 without padding only in the forward (its padded
    forward is float32's code at another precision; each combination is one more flex build)."""
    return [(device, dt) for dt in DTYPES[device] if not (padded and dt == torch.bfloat16 and device == "cuda")]


@pytest.fixture(autouse=True)
def compiled_for_real(request, monkeypatch):
    """CUDA cases start from an empty dynamo cache, and a recompile past dynamo's limit fails
    instead of falling back to eager FlexAttention (which would pass these checks without
    testing the compiled kernels)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("device") == "cuda":
        torch._dynamo.reset()
        for name in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):  # the name by torch version
            if hasattr(torch._dynamo.config, name):
                monkeypatch.setattr(torch._dynamo.config, name, True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", gk.GPU_KERNELS)
@pytest.mark.parametrize("padded", [False, True])
def test_forward_is_trimmed_with_its_zero_upper_triangle(device, kernel, padded):
    """Every position ≤ c of every slice equals float64 `trimmed` within the dtype's tolerance,
    every position > c is exactly zero, with and without padding (the jagged kernel refuses
    padding in one line), and out="diagonal" is `trimmed`'s diagonal."""
    B, H, d = 2, 2, 16
    S, block = SIZES[device]
    for dev, dtype in _cases(device, padded):
        q, k, v = _qkv(B, H, S, d, 1, dev, dtype)
        pad = _pad(B, S, dev) if padded else None
        if kernel == "jagged" and padded:
            with pytest.raises(ReproError, match="no padding"):
                gk.jagged(q, k, v, pad)
            continue
        want = ca.trimmed(*(t.double() for t in (q, k, v)), pad)
        fn = (lambda *a, **kw: gk.flex(*a, block=block, **kw)) if kernel == "flex" else getattr(gk, kernel)
        with torch.no_grad():
            got = fn(q, k, v, pad)
            diag = fn(q, k, v, pad, out="diagonal")
        assert got.shape == want.shape and got.dtype == dtype
        assert _rel(got, want) <= TOL[dtype], (dtype, _rel(got, want))
        assert not ca.upper_zeroed(got).ne(got).any(), "positions > c of slice c must be exactly zero"
        assert _rel(diag, ca.diagonal(want)) <= TOL[dtype]


def _grads(fn, q, k, v, pad, weight):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    (fn(q, k, v, pad) * weight).sum().backward()
    return q.grad, k.grad, v.grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", gk.GPU_KERNELS)
def test_backward_is_trimmeds(device, kernel):
    """Gradients of a random weighting of the output with respect to q, k and v equal those of
    float64 `trimmed`'s autograd (with padding where the kernel takes it). FlexAttention has no
    CPU backward in torch, so flex's is checked on CUDA only."""
    if device == "cpu" and kernel == "flex":
        pytest.skip("torch has no FlexAttention backward on the CPU; flex's backward is checked on CUDA")
    B, H, d = 2, 2, 16
    S, block = SIZES[device]
    for dev, dtype in _cases(device):
        q, k, v = _qkv(B, H, S, d, 2, dev, dtype)
        pad = None if kernel == "jagged" else _pad(B, S, dev)
        weight = torch.randn(B, H, S, S, d, generator=generator(3), dtype=torch.float64).to(dev)
        want = _grads(ca.trimmed, *(t.double() for t in (q, k, v)), pad, weight)
        fn = (lambda *a: gk.flex(*a, block=block)) if kernel == "flex" else getattr(gk, kernel)
        got = _grads(fn, q, k, v, pad, weight.to(dtype))
        for name, g, w in zip("qkv", got, want):
            assert g.dtype == dtype and _rel(g, w) <= TOL[dtype], (name, dtype, _rel(g, w))


def test_a_broken_mask_fails_the_forward_check():
    """The negative control of the checks above: flex with a mask_mod that lets each slice see
    one key past c differs from `trimmed` far beyond float64's tolerance."""
    B, H, S, d = 1, 2, 12, 16
    q, k, v = _qkv(B, H, S, d, 4)
    bm = gk.slice_block_mask(B * H, S, None, 16, device="cpu")
    c_of = torch.arange(S).repeat(B * H)
    bm.mask_mod = lambda b, h, i, j: (i <= c_of[b]) & (j <= c_of[b] + 1)
    fold = [t.reshape(B * H * S, 1, S, d) for t in (q, k, v)]
    broken = gk._flex_call(*fold, bm, 1 / math.sqrt(d)).view(B, H, S, S, d)
    assert _rel(ca.upper_zeroed(broken), ca.trimmed(q, k, v)) > 1e-2


def test_flex_in_chunks_past_the_grid_limit_is_flex_in_one(monkeypatch):
    """Past FLEX_MAX_ROWS folded slices (CUDA's grid limit) flex runs whole (sample, head) groups
    per call: the same output, padding included, as one call (the limit lowered here to 20 rows
    against 2·3·9 = 54: three calls of two groups)."""
    B, H, S, d = 2, 3, 9, 16
    q, k, v = _qkv(B, H, S, d, 8)
    pad = _pad(B, S)
    one = [gk.flex(q, k, v), gk.flex(q, k, v, pad)]
    calls = []
    call = gk._flex_call
    monkeypatch.setattr(gk, "FLEX_MAX_ROWS", 20)
    monkeypatch.setattr(gk, "_flex_call", lambda *a, **kw: calls.append(a[0].shape[0]) or call(*a, **kw))
    assert torch.equal(gk.flex(q, k, v), one[0]) and torch.equal(gk.flex(q, k, v, pad), one[1])
    assert calls == [18, 18, 18] * 2


# --------------------------------------------------------------------------- the choice


def test_auto_runs_trimmed_on_the_cpu_and_the_gpu_rule_by_size():
    """`attend`'s default is "auto": on the CPU that is `trimmed`, bit for bit (the claims' path
    is unchanged); the rule on CUDA: dense up to DENSE_MAX_S, flex beyond, trimmed in float64
    or without a compiler."""
    q, k, v = _qkv(1, 2, 6, 4, 5)
    assert gk.pick(q) == "trimmed"
    assert torch.equal(ca.attend(q, k, v), ca.trimmed(q, k, v))
    assert torch.equal(ca.attend(q, k, v, out="diagonal"), ca.trimmed(q, k, v, out="diagonal"))
    rule = gk.pick_for
    assert rule("cuda", torch.bfloat16, gk.DENSE_MAX_S, True) == "dense"
    assert rule("cuda", torch.bfloat16, gk.DENSE_MAX_S + 1, True) == "flex"
    assert rule("cuda", torch.float32, 2048, True) == "flex"
    assert rule("cuda", torch.float64, 2048, True) == "trimmed"
    assert rule("cuda", torch.bfloat16, 2048, False) == "trimmed"
    assert rule("cpu", torch.float32, 2048, True) == "trimmed"
    for name in ("dense", "jagged"):  # (flex: the forward test)
        assert torch.allclose(ca.attend(q, k, v, name), ca.trimmed(q, k, v), atol=1e-12, rtol=0)
    with pytest.raises(ReproError, match="bool tensor"):
        gk.flex(q, k, v, torch.zeros(1, 6))


# --------------------------------------------------------------------------- the whole model


def _model(arch: str, device: str, dtype: torch.dtype):
    if arch == "llama-gqa":  # grouped heads, as SmolLM2: 4 query heads over 2 key/value heads
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(
            vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=32, attn_implementation="sdpa",
        )  # fmt: skip
        with torch.random.fork_rng():
            torch.manual_seed(0)
            m = LlamaForCausalLM(cfg).eval()
    else:
        m = build_model(arch, seed=0, n_layer=2, n_head=4, d_model=64, vocab_size=97, n_positions=32, perturb_norms=0.1)
    return m.to(device, dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arch", ["llama", "gpt2", "llama-gqa"])
def test_packed_model_is_the_bucketed_full_axis(device, arch):
    """`packed_axis_logits` (all slices in one forward) equals the bucketed full axis, which the
    claims test against the per-prefix oracle: logits, and for the paths with a backward on the
    device the gradients of the loss with respect to every weight (CA-8 trains through them).
    float64 on the CPU (flex forward only), float32 on CUDA (TF32 tolerance as above)."""
    dtype = torch.float64 if device == "cpu" else torch.float32
    m = _model(arch, device, dtype)
    S = 11 if device == "cpu" else 20  # CUDA: 210 packed tokens, two of flex's tiles
    ids = torch.randint(0, 97, (2, S), generator=generator(6)).to(device)
    want = cl.full_axis_logits(m, ids, kernel="bucketed")
    m.zero_grad()
    want.square().mean().backward()
    want_grads = {n: p.grad.clone() for n, p in m.named_parameters()}
    for how in gk.PACKED:
        m.zero_grad()
        backward = not (how == "flex" and device == "cpu")
        with torch.set_grad_enabled(backward):
            got = cl.full_axis_logits(m, ids, kernel=how)
        assert _rel(got, want) <= TOL[dtype], (how, _rel(got, want))
        if backward:
            got.square().mean().backward()
            for n, p in m.named_parameters():
                assert _rel(p.grad, want_grads[n]) <= TOL[dtype], (how, n, _rel(p.grad, want_grads[n]))
    if device == "cuda" and arch == "llama":  # the default there (one model: each check is a flex build)
        assert cl.full_axis_kernel(m, ids) == "flex"
        with torch.no_grad():
            assert _rel(cl.logits(m, ids, "full"), want) <= TOL[dtype]


def test_the_cpu_full_axis_stays_bucketed():
    """On the CPU "auto" is the bucketed path, bit for bit, for `logits(…, "full")` and for a
    `ContextAxisLM` training in full mode; a bad kernel name is one line."""
    lm = cl.build_lm(dict(n_layer=1, n_head=2, d_model=32, vocab_size=61), 8, 0, train_mode="full")
    ids = torch.randint(0, 61, (2, 8), generator=generator(7))
    assert cl.full_axis_kernel(lm.model, ids) == "bucketed"
    with torch.no_grad():
        want = cl.full_axis_logits(lm.model, ids, bucket=8, kernel="bucketed")
        assert torch.equal(cl.logits(lm.model, ids, "full"), want)
        lm.train()
        assert torch.equal(lm(ids).logits, want)
    with pytest.raises(ReproError, match="full-axis logits run one of"):
        cl.full_axis_logits(lm.model, ids, kernel="fused")
