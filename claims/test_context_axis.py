"""004 Context axis: Algorithm 1, the diagonal read-out, upper-triangle and segment sparsity,
cost, and the first empirical test of the proposal (CA-1 … CA-8).

The source is a structural proposal with no code and no experiments. CA-1 … CA-6 are exact
statements about the construction: they are checked exactly (float64, random tiny
transformers models drawn by hypothesis, derandomised) and on the embedded pretrained models
(CA-4). CA-7's cost is counted (FLOPs through torch's FlopCounterMode, states stored), so the
records are the same on every machine; times are in benchmarks/test_context_axis_kernels.py.
CA-8 trains identical small LMs on Brown — causal, full context axis, full axis with
stochastic axis drop — from the same initial weights and data order, and compares held-out
NLL under causal, full and segment-k inference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from torch.utils.flop_counter import FlopCounterMode

from repro import context_axis as ca
from repro import context_axis_lm as cl
from repro import data, figures
from repro import train as T
from repro.models.hf import build_model
from repro.runtime import ReproError, generator

# 004 Figure 1 (L = 5), 1 = masked: (a) context axis 2, (b) context axis 3
FIG1 = {2: [[0, 0, 0, 1, 1]] * 3 + [[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]],
        3: [[0, 0, 0, 0, 1]] * 4 + [[0, 0, 0, 0, 0]]}

# float64 throughout CA-3/5/6: two exact formulations of one function differ only by the
# order of floating-point sums (≈ 1e-16 relative); 1e-9 on logits of size ≈ 1 leaves 10⁶×
# headroom and still catches any real leak (a future token moves logits by ≳ 1e-3 here)
EXACT = 1e-9

# (claim, profile) → why the claim does not hold at that profile (measured; see CA-8's records)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("CA-8", "ci"): (
        "no benefit at this scale: the context-axis models (with or without axis drop) end 0.012 nats/token above "
        "the identical causal model under every inference mode (3 seeds, paired t p ≈ 0.4–0.6; seed sd 0.015–0.03). "
        "2-layer × 64-wide llama models, 400 steps of 16 × 32 Brown tokens: the trained models barely re-read the "
        "past (their NLL moves < 0.001 nats between causal, segment and full inference), so the axis has little to "
        "add; a deeper model trained longer (the paper profile, a GPU) is the test this leaves open."),
}


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("context_axis")


def _tiny(arch: str, n_layer: int, seed: int, vocab: int = 50):
    """A random tiny transformers model in float64 with perturbed norms (so that no identity
    norm makes two formulations agree by accident)."""
    return build_model(arch, n_layer=n_layer, n_head=4, d_model=32, vocab_size=vocab, seed=seed, perturb_norms=0.1,
                       attn_implementation="sdpa", dtype=torch.float64)


def _exhaustive(check, sizes, **strategies):
    """Run `check(**example)` on `sizes['check']['examples']` derandomised hypothesis examples
    (the same examples every run: the records are deterministic)."""
    runner = settings(max_examples=sizes["check"]["examples"], derandomize=True, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck))(given(**strategies)(check))
    runner()


# --------------------------------------------------------------------------- CA-1, CA-2


@pytest.mark.claim("CA-1", source="004 §2.1, Algorithm 1")
def test_algorithm1_mask(claim):
    """Algorithm 1 line by line against the closed form M[b,0,c,i,j] = 1 iff j > max(i, c) or
    x[b, j] is padding, on every sequence of length ≤ 6 over {pad, a, b} (3⁶ + … sequences)."""
    worst, shapes_ok, n = 0, True, 0
    for S in range(1, 7):
        x = torch.cartesian_prod(*[torch.arange(3)] * S).reshape(-1, S)  # every sequence; 0 = padding
        M = ca.algorithm1_mask(x, pad_id=0)
        shapes_ok &= M.shape == (x.shape[0], 1, S, S, S) and M.dtype == torch.bool
        c, i, j = torch.meshgrid(torch.arange(S), torch.arange(S), torch.arange(S), indexing="ij")
        want = (j > torch.maximum(i, c))[None] | (x == 0)[:, None, None, :]
        worst += int((M[:, 0] != want).sum())
        n += x.shape[0]
    claim.record("sequences checked (S = 1 … 6, every sequence over 3 symbols)", n)
    claim.record("mask entries differing from the closed form", worst, expected=0, tol=0,
                 why="an exact boolean construction")
    claim.record("shape (B, 1, S, S, S), bool", int(shapes_ok), expected=1, tol=0, why="exact")
    M5 = ca.algorithm1_mask(torch.ones(1, 5, dtype=torch.long))[0, 0].int()
    claim.figure(figures.mask_slices(M5.numpy(), [0, 2, 3, 4], "004 Algorithm 1, L = 5: M[c] (1 = masked)"),
                 "mask_slices")
    assert worst == 0 and shapes_ok


@pytest.mark.claim("CA-2", source="004 §2.1, Fig 1")
def test_figure1_slices(claim):
    """Fig 1's two printed slices; in slice c every query sees up to c; the query i = c of
    slice c is the ordinary causal row; the last slice masks nothing."""
    S = 5
    M = ca.algorithm1_mask(torch.ones(1, S, dtype=torch.long))[0, 0].int()
    fig_diff = sum(int((M[c] != torch.tensor(want)).sum()) for c, want in FIG1.items())
    causal = torch.triu(torch.ones(S, S, dtype=torch.int), 1)
    diag_diff = sum(int((M[c, c] != causal[c]).sum()) for c in range(S))
    sees = [[int((M[c, i] == 0).nonzero().max()) for i in range(S)] for c in range(S)]
    up_to_c = sum(int(sees[c][i] != max(i, c)) for c in range(S) for i in range(S))
    claim.record("entries differing from Fig 1 (a), (b)", fig_diff, expected=0, tol=0, why="exact")
    claim.record("diagonal rows differing from the causal mask", diag_diff, expected=0, tol=0, why="exact")
    claim.record("queries whose last visible key is not max(i, c)", up_to_c, expected=0, tol=0, why="exact")
    claim.record("entries masked in the last slice", int(M[S - 1].sum()), expected=0, tol=0, why="exact")
    claim.figure(figures.mask_slices(M.numpy(), [2, 3], "004 Fig 1 (a) c = 2, (b) c = 3, L = 5 (ours)"), "fig1")
    # Fig 2: every slot of the (context, causal) grid is computed; the diagonal is read out
    grid = np.tile(np.arange(6)[:, None], (1, 6))
    claim.figure(figures.axis_layout(grid, np.ones((6, 6)), "004 Fig 2: output states h_{c,t} (diagonal read out)",
                                     "computed"), "fig2_layout")
    assert fig_diff == diag_diff == up_to_c == 0 and not M[S - 1].any()


# --------------------------------------------------------------------------- CA-3


@pytest.mark.claim("CA-3", source="004 §2.2")
def test_diagonal_is_autoregressive(claim, sizes):
    """Through any number of layers: changing any token after t never changes the diagonal
    output at t, and the diagonal equals the per-prefix bidirectional oracle (random llama and
    GPT-2 configs and sequences). And it is not causal attention: the past is re-read."""
    claim.dtype = "float64"  # exact checks: see EXACT
    c = sizes["check"]
    stats = {"future": 0.0, "oracle": 0.0, "masked": 0.0, "vs_causal": [], "n": 0}

    def check(arch, S, L, seed, t):
        t = t % S
        m = _tiny(arch, L, seed % 11)
        g = generator(seed)
        ids = torch.randint(0, 50, (2, S), generator=g)
        other = ids.clone()
        other[:, t + 1:] = torch.randint(0, 50, (2, S - t - 1), generator=g)
        with torch.no_grad():
            full = cl.full_axis_logits(m, ids, bucket=1 + seed % 4)
            stats["future"] = max(stats["future"], float((cl.full_axis_logits(m, other)[:, :t + 1]
                                                          - full[:, :t + 1]).abs().max()))
            stats["oracle"] = max(stats["oracle"], float((full - cl.prefix_oracle(m, ids)).abs().max()))
            stats["masked"] = max(stats["masked"], float((full - cl.masked_logits(m, ids)).abs().max()))
            if S > 2 and L > 1:  # one layer: the last query reads the same inputs either way
                stats["vs_causal"].append(float((full[:, -1] - cl.causal_logits(m, ids)[:, -1]).abs().max()))
        stats["n"] += 1

    _exhaustive(check, sizes, arch=st.sampled_from(["llama", "gpt2"]), S=st.integers(2, c["max_S"]),
                L=st.integers(1, c["max_layers"]), seed=st.integers(0, 2 ** 16), t=st.integers(0, c["max_S"]))
    claim.record("random models × sequences checked", stats["n"])
    claim.record("max |Δ diagonal logit ≤ t| when tokens after t change", stats["future"], expected=0.0, tol=EXACT,
                 why="float64, exact construction (see EXACT)")
    claim.record("max |full axis − per-prefix bidirectional oracle|", stats["oracle"], expected=0.0, tol=EXACT,
                 why="float64, exact construction (see EXACT)")
    claim.record("max |bucketed full axis − Algorithm 1 masked formulation|", stats["masked"], expected=0.0,
                 tol=EXACT, why="float64, exact construction (see EXACT)")
    med = float(np.median(stats["vs_causal"]))
    claim.record("median |diagonal − causal| logit at the last position (not causal attention)", med,
                 expected=1e-3, compare="ge", why="re-reading the past must move the output well above rounding")
    assert stats["future"] <= EXACT and stats["oracle"] <= EXACT and stats["masked"] <= EXACT
    assert med >= 1e-3


# --------------------------------------------------------------------------- CA-4


@dataclass
class PretrainedRun:
    name: str
    max_full_vs_oracle: float
    max_seg1_vs_causal: float
    max_segS_vs_oracle: float
    params: tuple[int, int]
    state_unchanged: bool
    impl_restored: bool
    nll: dict[str, float]
    dtype: str


@pytest.fixture(scope="module")
def pretrained_run(model_name, pretrained, sizes) -> PretrainedRun:
    m, tok = pretrained(model_name)
    p = sizes["pretrained"]
    ids = data.bos_windows(tok, "test", p["n_seq"], p["seq_len"] + 1, who=f"--model {model_name}: CA-4's claims",
                           device=next(m.parameters()).device)
    x, y = ids[:, :-1], ids[:, 1:]
    before = {k: v.detach().clone() for k, v in m.state_dict().items()}
    n_params = sum(p.numel() for p in m.parameters())
    impl = m.config._attn_implementation
    with torch.no_grad():
        causal = cl.causal_logits(m, x).float()
        oracle = cl.prefix_oracle(m, x).float()
        full = cl.full_axis_logits(m, x).float()
        seg1 = cl.segment_logits(m, x, 1).float()
        segS = cl.segment_logits(m, x, x.shape[1]).float()
        segk = cl.segment_logits(m, x, p["segment"]).float()

    def nll(lg):
        return float(F.cross_entropy(lg.transpose(1, 2), y))

    return PretrainedRun(
        model_name, float((full - oracle).abs().max()), float((seg1 - causal).abs().max()),
        float((segS - oracle).abs().max()), (n_params, sum(p.numel() for p in m.parameters())),
        all(torch.equal(v, before[k]) for k, v in m.state_dict().items()), m.config._attn_implementation == impl,
        {"causal": nll(causal), "full": nll(full), f"segment:{p['segment']}": nll(segk)},
        str(next(m.parameters()).dtype).removeprefix("torch."))


@pytest.mark.claim("CA-4", source="004 §2.2")
def test_pretrained_weights_run_unchanged(claim, pretrained_run, sizes):
    """The embedded pretrained model runs in context-axis mode with its own state dict: no new
    parameters, nothing changed, the batched full axis and the KV-cache segment mode agree with
    the per-prefix oracle and with causal decoding. Its NLL in each mode is recorded (the
    source: "compatible with existing pretrained weights … minimal retraining")."""
    r = pretrained_run
    claim.dtype = r.dtype
    # rounding: the same function through different kernel shapes (padded buckets, KV cache vs
    # one pass) in the model's dtype; measured ≤ 1e-4 (float32) on logits of size ≈ 10–30
    tol = 0.05 if r.dtype == "bfloat16" else 2e-3
    why = f"{r.dtype} rounding of one function through differently shaped kernels (logits ≈ 10–30)"
    claim.record("parameters after / before", r.params[1] / r.params[0], expected=1.0, tol=0, why="exact",
                 claim_id="CA-4")
    claim.record("state dict unchanged, attention implementation restored", int(r.state_unchanged and r.impl_restored),
                 expected=1, tol=0, why="exact")
    claim.record("max |bucketed full axis − per-prefix oracle| (logits)", r.max_full_vs_oracle, expected=0.0, tol=tol,
                 why=why)
    claim.record("max |segment k = S − oracle| (logits)", r.max_segS_vs_oracle, expected=0.0, tol=tol, why=why)
    claim.record("max |segment k = 1 − causal| (logits)", r.max_seg1_vs_causal, expected=0.0, tol=tol, why=why)
    for mode, v in r.nll.items():
        claim.record(f"Brown test NLL, {mode} inference", v, unit="nats/token")
    claim.record("NLL cost of running the causal weights on the full axis", r.nll["full"] - r.nll["causal"],
                 unit="nats/token")
    claim.table(f"CA-4 {r.name}: held-out NLL of the pretrained weights by inference mode",
                ["mode", "NLL (nats/token)"], [[k, round(v, 4)] for k, v in r.nll.items()])
    assert r.params[0] == r.params[1] and r.state_unchanged and r.impl_restored
    assert max(r.max_full_vs_oracle, r.max_segS_vs_oracle, r.max_seg1_vs_causal) <= tol


# --------------------------------------------------------------------------- CA-5


@pytest.mark.claim("CA-5", source="004 §2.3, Fig 3")
def test_upper_triangle_is_never_read(claim, sizes):
    """Zeroing the strictly-upper part (positions t > c of slice c) in every layer's input
    changes no diagonal output (whole models); the trimmed kernel, which never computes it,
    equals the naive kernel on everything else."""
    claim.dtype = "float64"  # exact checks: see EXACT
    c = sizes["check"]
    stats = {"model": 0.0, "kernel": 0.0, "n": 0}

    def check(arch, S, L, seed):
        m = _tiny(arch, L, seed % 11)
        ids = torch.randint(0, 50, (2, S), generator=generator(seed))
        with torch.no_grad():
            stats["model"] = max(stats["model"], float((cl.masked_logits(m, ids, zero_upper=True)
                                                        - cl.masked_logits(m, ids)).abs().max()))
        q, k, v = (torch.randn(2, 2, S, S, 4, generator=generator(seed + i), dtype=torch.float64) for i in range(3))
        stats["kernel"] = max(stats["kernel"], float((ca.trimmed(q, k, v) - ca.upper_zeroed(ca.naive(q, k, v)))
                                                     .abs().max()))
        stats["n"] += 1

    _exhaustive(check, sizes, arch=st.sampled_from(["llama", "gpt2"]), S=st.integers(2, c["max_S"]),
                L=st.integers(1, c["max_layers"]), seed=st.integers(0, 2 ** 16))
    S = sizes["cost"]["S"][-1]
    claim.record("random models checked", stats["n"])
    claim.record("max |Δ diagonal logit| with the upper triangle zeroed in every layer", stats["model"],
                 expected=0.0, tol=EXACT, why="float64, exact construction (see EXACT)")
    claim.record("max |trimmed − upper-zeroed naive| (kernel outputs)", stats["kernel"], expected=0.0, tol=EXACT,
                 why="float64, exact construction (see EXACT)")
    claim.record(f"share of the S × S states never computed (S = {S})", (S - 1) / (2 * S))
    # Fig 3 from a real layer: ‖h_{c,t}‖ of a 1-layer model's per-slice outputs, trimmed kernel
    m = _tiny("llama", 1, 0)
    ids = torch.randint(0, 50, (1, 6), generator=generator(0))
    h = _per_slice_states(m, ids, kernel="trimmed")
    src = np.where(np.tril(np.ones((6, 6))) > 0, np.arange(6)[:, None], -1)
    claim.figure(figures.axis_layout(src, h.norm(dim=-1).numpy(), "004 Fig 3: strictly upper part zero "
                                     "(1-layer attention, trimmed kernel)", "‖attention output‖"), "fig3_layout")
    assert stats["model"] <= EXACT and stats["kernel"] <= EXACT


def _per_slice_states(model, ids: torch.Tensor, kernel: str) -> torch.Tensor:
    """The first layer's attention output for every (slice, position) of one sequence, through
    a context-axis kernel on the model's own projections (single head view, for the figures)."""
    layer = model.model.layers[0]
    with torch.no_grad():
        x = layer.input_layernorm(model.model.embed_tokens(ids))[0]  # (S, d)
        S = x.shape[0]
        a = layer.self_attn
        q, k, v = (proj(x)[None, None, None].expand(1, 1, S, S, -1) for proj in (a.q_proj, a.k_proj, a.v_proj))
        return ca.attend(q, k, v, kernel)[0, 0]


# --------------------------------------------------------------------------- CA-6, CA-7: counted cost


def _flops(fn, *args) -> int:
    with FlopCounterMode(display=False) as fc:
        fn(*args)
    return int(fc.get_total_flops())


def _causal_flops(q, k, v) -> int:
    """Dense causal attention over one slice (the standard decoder's S × S), written out: the
    counter does not see inside CPU SDPA's fused kernel."""
    S = q.shape[-2]

    def causal():
        s = (q @ k.transpose(-1, -2)).masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
        return torch.softmax(s, -1) @ v

    return _flops(causal)


def _slope(xs, ys) -> float:
    """Least-squares log–log slope."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def _tail_slope(xs, ys) -> float:
    """The log–log slope between the two largest x: the growth exponent once the lower-order
    terms (e.g. the segment kernel's per-chunk padding, ≈ 8 keys per query) have faded."""
    return float(np.log(ys[-1] / ys[-2]) / np.log(xs[-1] / xs[-2]))


@pytest.fixture(scope="module")
def cost(sizes):
    """Counted FLOPs of every kernel at each S (H heads, head_dim d, batch 1), the segment
    kernel's at the largest S for each k, and the states each layout stores."""
    c = sizes["cost"]
    H, d = c["heads"], c["head_dim"]
    g = generator(0)
    rows = {name: [] for name in ("naive", "masked_sdpa", "trimmed", "segment k=4", "causal")}
    states = {"full S×S layout": [], "segment band k=4": [], "causal": []}
    for S in c["S"]:
        q, k, v = (torch.randn(1, H, S, S, d, generator=g) for _ in range(3))
        for name in ("naive", "masked_sdpa", "trimmed"):
            if name == "naive" and S > ca.NAIVE_MAX_S:
                continue
            rows[name].append((S, _flops(ca.attend, q, k, v, name)))
        band = [ca.to_band(t, 4) for t in (q, k, v)]
        rows["segment k=4"].append((S, _flops(ca.segment, *band)))
        rows["causal"].append((S, _causal_flops(q[:, :, 0], k[:, :, 0], v[:, :, 0])))
        states["full S×S layout"].append((S, S * S))
        states["segment band k=4"].append((S, band[0].shape[2] * S))
        states["causal"].append((S, S))
    S = c["S"][-1]
    q, k, v = (torch.randn(1, H, S, S, d, generator=g) for _ in range(3))
    seg = []
    for K in c["segments"]:
        band = [ca.to_band(t, K) for t in (q, k, v)]
        out = ca.segment(*band)
        seg.append((K, _flops(ca.segment, *band), out[0, 0].numel() // d))
    return dict(rows=rows, states=states, seg=seg, S=S, H=H, d=d)


@pytest.mark.claim("CA-6", source="004 §2.3, Fig 4")
def test_segment_level_sparsity(claim, sizes, cost):
    """Segment size k: only k context slots per token are computed, deeper slices reuse the
    last one (Fig 4); k = 1 is exactly causal attention and k = S the full axis (whole models,
    KV-cache segment mode against the masked formulation with Fig 4's reuse); stored states
    and FLOPs grow linearly in k at fixed S."""
    claim.dtype = "float64"  # exact checks: see EXACT
    c = sizes["check"]
    stats = {"k1": 0.0, "kS": 0.0, "k": 0.0, "n": 0}

    def check(arch, S, L, seed, k):
        m = _tiny(arch, L, seed % 11)
        ids = torch.randint(0, 50, (2, S), generator=generator(seed))
        k = 1 + k % S
        with torch.no_grad():
            stats["k1"] = max(stats["k1"], float((cl.segment_logits(m, ids, 1) - cl.causal_logits(m, ids)).abs().max()))
            stats["kS"] = max(stats["kS"], float((cl.segment_logits(m, ids, S) - cl.prefix_oracle(m, ids)).abs().max()))
            stats["k"] = max(stats["k"], float((cl.segment_logits(m, ids, k) - cl.masked_logits(m, ids, segment=k))
                                               .abs().max()))
        stats["n"] += 1

    _exhaustive(check, sizes, arch=st.sampled_from(["llama", "gpt2"]), S=st.integers(2, c["max_S"]),
                L=st.integers(1, c["max_layers"]), seed=st.integers(0, 2 ** 16), k=st.integers(0, c["max_S"]))
    ks = np.array([r[0] for r in cost["seg"]], dtype=float)
    fl = np.array([r[1] for r in cost["seg"]], dtype=float)
    st_ = np.array([r[2] for r in cost["seg"]], dtype=float)
    fl_slope, st_slope = _slope(ks, fl), _slope(ks, st_)
    claim.record("random models checked", stats["n"])
    for key, label in (("k1", "segment k = 1 − causal decoding"), ("kS", "segment k = S − full axis (oracle)"),
                       ("k", "segment k (KV cache) − masked formulation with Fig 4 reuse")):
        claim.record(f"max |{label}| (logits)", stats[key], expected=0.0, tol=EXACT,
                     why="float64, exact construction (see EXACT)")
    # counted, deterministic; the frozen-key GEMMs of a chunk (16 slices) run to the chunk's
    # last slice, a waste that shrinks as k grows: 0.85–1.0 is linear for k ≥ 1
    claim.record(f"log–log slope of segment FLOPs in k (S = {cost['S']})", fl_slope, expected=1.0, tol=0.15,
                 why="counted FLOPs; chunking waste ≤ 15% at k = 1")
    claim.record(f"log–log slope of stored states in k (S = {cost['S']})", st_slope, expected=1.0, tol=0.02,
                 why="K·S states by construction (min(k, S) = k here)")
    claim.table("CA-6: segment kernel cost at fixed S", ["k", "GFLOP", "states per head (K·S)"],
                [[int(k), round(f / 1e9, 4), int(s)] for k, f, s in zip(ks, fl, st_)])
    src = np.where(np.tril(np.ones((6, 6))) > 0, np.minimum(np.arange(6)[:, None], np.arange(6)[None, :] + 2), -1)
    claim.figure(figures.axis_layout(src, (src >= 0) * (1 + (np.arange(6)[:, None] <= np.arange(6)[None, :] + 2)),
                                     "004 Fig 4: segment size 3 (slots c ≥ t + 3 reuse h_{t+2,t})",
                                     "stored (2) / reused (1) / zero (0)"), "fig4_layout")
    fig_curves = {"FLOPs": (ks, fl), "states": (ks, st_)}
    claim.figure(figures.cost_vs_length(fig_curves, f"CA-6 segment kernel at S = {cost['S']}: cost vs k",
                                        "count", {"FLOPs": fl_slope, "states": st_slope}), "cost_vs_k")
    assert stats["k1"] <= EXACT and stats["kS"] <= EXACT and stats["k"] <= EXACT
    assert abs(fl_slope - 1) <= 0.15 and abs(st_slope - 1) <= 0.02


@pytest.mark.claim("CA-7", source="004 §3.1")
def test_cost_grows_cubically_and_sparsity_brings_it_down(claim, cost):
    """Counted FLOPs against S: the Algorithm-1 kernels (naive, masked SDPA) grow as S³, the
    causal decoder as S²; the trimmed kernel stays S³ but does only the ≈ 1/3 that can reach
    the diagonal; segment(k) brings the exponent back to 2."""
    rows, S = cost["rows"], cost["S"]
    slopes = {n: _tail_slope([r[0] for r in v], [r[1] for r in v]) for n, v in rows.items() if len(v) > 1}
    at = {n: dict(v)[S] for n, v in rows.items() if S in dict(v)}
    why = "counted FLOPs; the lower-order terms left between the two largest S move the slope by < 0.15"
    for name, want in (("masked_sdpa", 3.0), ("trimmed", 3.0), ("segment k=4", 2.0), ("causal", 2.0)):
        claim.record(f"log–log slope of FLOPs in S (two largest S), {name}", slopes[name], expected=want, tol=0.15,
                     why=why)
    claim.record(f"FLOPs masked_sdpa / causal at S = {S}", at["masked_sdpa"] / at["causal"], expected=S, tol=0.01,
                 compare="rel", why="S slices of the S × S work, counted exactly")
    claim.record(f"FLOPs trimmed / masked_sdpa at S = {S}", at["trimmed"] / at["masked_sdpa"],
                 expected=(S + 1) * (2 * S + 1) / (6 * S * S), tol=0.01, compare="rel",
                 why="Σ (c+1)² / S³ exactly")
    claim.record(f"FLOPs segment k=4 / masked_sdpa at S = {S}", at["segment k=4"] / at["masked_sdpa"])
    claim.table(f"CA-7: counted GFLOP by kernel (H = {cost['H']}, d = {cost['d']}, batch 1)",
                ["S", *rows], [[s, *[round(dict(v).get(s, float("nan")) / 1e9, 5) for v in rows.values()]]
                               for s in sorted({r[0] for v in rows.values() for r in v})])
    curves = {n: ([r[0] for r in v], [r[1] for r in v]) for n, v in rows.items()}
    claim.figure(figures.cost_vs_length(curves, "CA-7: attention FLOPs per layer vs S (counted)", "FLOPs", slopes),
                 "flops_vs_S")
    st_curves = {n: ([r[0] for r in v], [r[1] for r in v]) for n, v in cost["states"].items()}
    claim.figure(figures.cost_vs_length(st_curves, "CA-7: states stored per head vs S", "states",
                                        {n: _tail_slope(*c) for n, c in st_curves.items()}), "states_vs_S")
    assert abs(slopes["masked_sdpa"] - 3) <= 0.15 and abs(slopes["causal"] - 2) <= 0.15
    assert abs(slopes["segment k=4"] - 2) <= 0.15 and at["trimmed"] < at["masked_sdpa"] / 2.5


# --------------------------------------------------------------------------- CA-8


VARIANTS = ("causal", "context axis", "axis drop")


@dataclass
class Experiment:
    modes: list[str]
    nll: dict[str, dict[str, np.ndarray]]  # variant → mode → (seeds, windows)
    results: dict[str, list[T.TrainResult]]
    seeds: tuple[int, ...]
    dropped: dict[str, list[int]]
    n_windows: int
    seq_len: int


@pytest.fixture(scope="module")
def experiment(sizes, device) -> Experiment:
    tc = T.TrainConfig(**sizes["train"], vocab_size=sizes["model"]["vocab_size"])
    train_tokens, val_tokens, ident = T.corpus_tokens("brown", tc.vocab_size)
    n, L = sizes["eval"]["windows"], tc.seq_len + 1
    if val_tokens.numel() < n * L:
        raise ReproError(f"CA-8 needs {n} held-out windows of {L} tokens; Brown validation has {val_tokens.numel()}")
    windows = val_tokens[: n * L].view(n, L)
    modes = ["causal", *[f"segment:{k}" for k in sizes["eval"]["segments"]], "full"]
    setups = {"causal": dict(train_mode="causal"), "context axis": dict(train_mode="full"),
              "axis drop": dict(train_mode="full", axis_drop=sizes["axis_drop"])}
    nll = {v: {m: [] for m in modes} for v in VARIANTS}
    results = {v: [] for v in VARIANTS}
    dropped = {v: [] for v in VARIANTS}
    for seed in sizes["seeds"]:
        for variant in VARIANTS:
            r = cl.train_lm(sizes["model"], tc, seed, bucket=sizes["bucket"], train_tokens=train_tokens,
                            val_tokens=val_tokens, data_identity=ident, **setups[variant])
            results[variant].append(r)
            dropped[variant].append(sum(r.model.drop_draws(tc.steps)))  # replayed: also for cached runs
            for mode in modes:
                nll[variant][mode].append(cl.window_nll(r.model, windows, mode).numpy())
    return Experiment(modes, {v: {m: np.stack(x) for m, x in d.items()} for v, d in nll.items()}, results,
                      tuple(sizes["seeds"]), dropped, n, tc.seq_len)


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Mean over seeds of (a − b) (each seed: mean over windows), its sd, and the two-sided
    paired t-test p-value over seeds."""
    d = a.mean(1) - b.mean(1)
    p = float(sps.ttest_rel(a.mean(1), b.mean(1)).pvalue) if len(d) > 1 and np.any(d != d[0]) else float("nan")
    return float(d.mean()), float(d.std(ddof=1)) if len(d) > 1 else float("nan"), p


@pytest.mark.policy_dtype
@pytest.mark.claim("CA-8", source="004 §1, §3.1")
def test_context_axis_training_gives_better_representations(claim, experiment, sizes, profile):
    """The proposal's premise, tested: models trained with the context axis (± stochastic axis
    drop) against the identical causal model, held-out NLL under causal-only (KV-cache
    compatible), segment-k and full context-axis inference. The claim is read as: the context
    axis model beats the causal one under the inference it would be deployed with — causal or
    segment-level (§3.1) — and under full context-axis inference."""
    e = experiment
    base = e.nll["causal"]["causal"]
    table, rows = {}, []
    for v in VARIANTS:
        table[v] = {m: (float(e.nll[v][m].mean(1).mean()), float(e.nll[v][m].mean(1).std(ddof=1))) for m in e.modes}
        rows.append([v, *[f"{table[v][m][0]:.4f} ± {table[v][m][1]:.4f}" for m in e.modes]])
    claim.table(f"CA-8: held-out NLL (nats/token), mean ± sd over seeds {list(e.seeds)}; {e.n_windows} Brown "
                f"validation windows of {e.seq_len} tokens", ["trained as", *e.modes], rows)
    claim.record("seeds", len(e.seeds))
    claim.record("causal model, causal inference (the baseline)", float(base.mean()), unit="nats/token")
    deltas = {}
    for v, mode in (("context axis", "full"), ("axis drop", "full"), ("context axis", "causal"),
                    ("axis drop", "causal"), ("axis drop", e.modes[-2]), ("causal", "full")):
        d, sd, p = _paired(e.nll[v][mode], base)
        deltas[(v, mode)] = (d, p)
        claim.record(f"Δ NLL: {v} model, {mode} inference − baseline (paired t over seeds: p = {p:.3g})", d,
                     unit="nats/token")
    dropped = [x / sizes["train"]["steps"] for x in e.dropped["axis drop"]]
    claim.record("axis drop: share of batches trained causally", float(np.mean(dropped)), expected=sizes["axis_drop"],
                 tol=3 * np.sqrt(sizes["axis_drop"] * (1 - sizes["axis_drop"]) / sizes["train"]["steps"]),
                 why="Binomial(steps, p): 3 standard errors")
    claim.figure(figures.nll_by_inference(table, e.modes, "CA-8: held-out NLL by training and inference mode",
                                          reference=float(base.mean())), "nll_by_mode")
    curves = {f"{v} (seed {s})": r.losses for v in VARIANTS for s, r in zip(e.seeds, e.results[v])}
    claim.figure(figures.training_curves(curves, "CA-8: training loss (each model in its own training mode)"),
                 "training")
    best = min(deltas[("context axis", "full")][0], deltas[("axis drop", "full")][0])
    deployable = min(deltas[("axis drop", "causal")][0], deltas[("axis drop", e.modes[-2])][0])
    measured = (f"Δ full = {best:+.4f}, Δ causal/segment (axis drop) = {deployable:+.4f} nats "
                f"(p = {deltas[('axis drop', 'causal')][1]:.2g})")
    claim.not_reproduced_if(NOT_REPRODUCED, ("CA-8", profile.name), measured)
    # the premise: better held-out NLL, significantly (paired over seeds), under the full axis
    # and under a deployable inference mode
    assert best < 0 and deltas[("context axis", "full")][1] < 0.05
    assert deployable < 0 and deltas[("axis drop", "causal")][1] < 0.05


@pytest.mark.policy_dtype
@pytest.mark.claim("CA-8", source="004 §3.1")
def test_training_inference_mismatch(claim, experiment):
    """§3.1's training–inference mismatch, measured: how much each trained model's held-out NLL
    moves between its training mode and the inference modes (causal for the causal model; full
    for the context-axis models), against the seed-to-seed spread of the baseline."""
    e = experiment
    seed_sd = float(e.nll["causal"]["causal"].mean(1).std(ddof=1))
    worst = 0.0
    for v in VARIANTS:
        own = e.nll[v]["causal" if v == "causal" else "full"].mean(1)
        for mode in e.modes:
            d = float(np.abs(e.nll[v][mode].mean(1) - own).max())
            worst = max(worst, d)
            claim.record(f"{v} model: max over seeds |NLL({mode}) − NLL(training mode)|", d, unit="nats/token")
    claim.record("seed-to-seed sd of the causal baseline", seed_sd, unit="nats/token")
    # what the data supports at this scale: the mismatch is below half the seed sd, i.e. it
    # cannot change any comparison between the variants here
    claim.record("largest mismatch / baseline seed sd", worst / seed_sd, expected=0.5, compare="le",
                 why="half the seed-to-seed sd: smaller differences cannot reorder the variants")
    assert worst <= 0.5 * seed_sd
