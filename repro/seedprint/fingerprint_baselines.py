"""The four passive fingerprinting baselines SeedPrint is compared with (001 §6.1.2, App B.3.2).

001 reduces each baseline to one similarity and calls two models "same lineage" iff it is
≥ 0.8 (the threshold of REEF, Zhang et al. 2024; Tables 5, 6, 8). What each one computes,
with the source the definition follows (the papers' official code where the text is silent):

- **Intrinsic** (Yoon et al. 2025, arXiv 2507.03014; "PDF" in LeaFBench): for every block,
  the standard deviation of all entries of W_Q, W_K, W_V and W_O → four depth profiles of
  length L per model. Each profile is z-normalised over layers, the two models' profiles are
  compared by Pearson correlation per matrix type, and the four correlations are averaged
  (the "average attention-parameter correlation" of the paper; LeaFBench's
  `fingerprint/pdf/`). LeaFBench then maps r̄ to (r̄+1)/2; 001 reports r̄ itself (Table 8 has
  −0.337), so we return r̄ ∈ [−1, 1]. Needs equal depth (LeaFBench interpolates the shorter
  profile; we refuse) and L ≥ 3 to mean anything: with L = 2 a Pearson correlation is ±1.
- **REEF** (Zhang et al. 2024, §4; code tmylla/REEF `generate_activations.py`,
  `compute_cka.py`): the residual state at the *last token* after decoder block 18 of
  Llama-2-7B's 32 (a forward hook on `model.layers[18]`), for the same samples (200
  TruthfulQA statements) in both models; each feature centred and divided by its standard
  deviation over the samples; then **linear** CKA (Kornblith et al. 2019). The RBF-kernel
  CKA (bandwidth √median of the nonzero squared distances) of their ablations is
  `kernel="rbf"`. We take block round(18/32 · L) by default, the same depth fraction.
- **PCS** (HuRef, Zeng et al. 2024, §3; code LUMIA-Group/HuRef `Parameters_Cos_Sim.py`):
  cosine similarity of the two models' parameter vectors — *all* parameters as
  `model.parameters()` lists them (a tied embedding once), embeddings and norm weights
  included, accumulated tensor by tensor. Parameters are matched by name and must have equal
  shapes (HuRef zips the two lists in order and silently skips mismatched shapes; we
  raise). REEF's own `pcs.py` drops every parameter whose name contains "embed" or
  "lm_head": ``pcs(..., exclude=("embed", "lm_head"))``. Note the all-ones norm weights: for a
  *tiny* random model they dominate the norm, so two unrelated initialisations can score
  PCS > 0.8 (2 layers, d = 64: ≈ 0.86); ``info["dot_share_1d"]`` says how much of the dot
  product came from 1-D parameters, and ``matrices_only=True`` compares ≥ 2-D parameters only.
- **ICS** (HuRef §3, "invariant terms"; code `main.py: get_invariant_terms2save`,
  `Invariant_terms_Cos_Sim.py`): with X̂ the word embeddings of a fixed token subset (HuRef:
  the 4096 least frequent tokens of an English-Wikipedia frequency list), and every weight
  in the x·W convention, per block

      M_a = X̂ W_Q W_Kᵀ X̂ᵀ,   M_b = X̂ W_V W_O X̂ᵀ,   M_f = X̂ W_1 W_2 X̂ᵀ        (n × n each),

  invariant to permutations/rotations of the hidden units that leave the model's function
  unchanged (the heads' value/output spaces, the MLP units, the residual basis when X̂ moves
  with it). For gated MLPs HuRef takes W_1 = W_gate ∘ W_up (elementwise). HuRef uses the last
  two blocks; each of the 6 terms is standardised (mean 0, std 1) and the cosine is taken of
  the concatenation — which equals the mean of the 6 per-term Pearson correlations, the
  form computed here (one term at a time, so 4096² terms never pile up). Random-init models
  have no tokenizer, hence no token frequencies: we draw the token subset uniformly with a
  seed (the same ids for both models), or take ``token_ids``. GQA/MQA: each K/V head is
  repeated for the query heads that read it (`repeat_interleave`, as transformers'
  `repeat_kv` and REEF's ics.py do; HuRef's code tiles whole K/V blocks, identical for MQA,
  wrong per head for grouped K/V), so M_a = Σ_h X̂ W_Q^h (W_K^{g(h)})ᵀ X̂ᵀ is the sum of the
  heads' bilinear forms. RoPE, biases and norms are ignored, as in HuRef. Widths and depths
  may differ (the terms are n × n); vocabularies may not. (REEF's re-implementation, ics.py,
  differs: raw cosine of the concatenated terms, no standardisation, and W_up without W_gate.)

Families: those `block_weights.block_weights` reads (Llama-like, GPT-2, GPT-NeoX). Weights of
any dtype; all reductions in float64, ICS's matrix products in float32 (``dtype``) on the
weights' device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from repro.core import activations
from repro.core.lens import arch_map, resolve
from repro.ground.runtime import ReproError, generator
from repro.seedprint.block_weights import block_weights

THRESHOLD = 0.8  # REEF's decision threshold, used by 001 App B.3.2 for all four methods
METHODS = ("intrinsic", "reef", "pcs", "ics")
REEF_DEPTH_FRACTION = 18 / 32  # REEF: output of block 18 of Llama-2-7B's 32
HUREF_N_TOKENS = 4096  # HuRef main.py: num_tokens
HUREF_N_LAYERS = 2  # HuRef main.py / REEF ics.py: the last two blocks
_CHUNK = 1 << 22  # elements per float64 chunk when streaming a parameter (32 MiB)


@dataclass(frozen=True)
class BaselineResult:
    """One baseline's verdict on a pair of models. `info`: what was compared (provenance)."""

    method: str  # "intrinsic" | "reef" | "pcs" | "ics"
    similarity: float
    same_lineage: bool  # similarity >= THRESHOLD
    info: dict


def _result(method: str, similarity: float, info: dict[str, Any]) -> BaselineResult:
    if not math.isfinite(similarity):
        raise ReproError(f"{method}: similarity is not finite ({similarity}); info: {info}")
    return BaselineResult(method, float(similarity), bool(similarity >= THRESHOLD), {"threshold": THRESHOLD, **info})


def _pearson(a: torch.Tensor, b: torch.Tensor, what: str) -> float:
    a = a.reshape(-1).to(torch.float64)
    b = b.reshape(-1).to(device=a.device, dtype=torch.float64)
    a = a - a.mean()
    b = b - b.mean()
    na, nb = a.norm(), b.norm()
    if na == 0 or nb == 0:
        raise ReproError(f"{what}: a compared vector is constant; its correlation is undefined")
    return float(torch.dot(a, b) / (na * nb))


# --------------------------------------------------------------------------- Intrinsic


def attention_std_profiles(model: nn.Module) -> dict[str, torch.Tensor]:
    """Yoon et al. 2025's fingerprint: per matrix type ("q", "k", "v", "o"), the (L,) float64
    profile of each block's standard deviation over all entries of that matrix."""
    blocks = block_weights(model)
    return {
        t: torch.tensor([getattr(b, t).to(torch.float64).std().item() for b in blocks], dtype=torch.float64)
        for t in "qkvo"
    }


def intrinsic(model_a: nn.Module, model_b: nn.Module) -> BaselineResult:
    """Mean over Q, K, V, O of the Pearson correlation between the models' layer-wise
    standard-deviation profiles (Yoon et al. 2025; see the module docstring)."""
    pa, pb = attention_std_profiles(model_a), attention_std_profiles(model_b)
    la, lb = len(pa["q"]), len(pb["q"])
    if la != lb:
        raise ReproError(
            f"intrinsic: models differ in depth: {la} vs {lb} blocks; "
            "the layer-wise profiles are compared layer by layer"
        )
    if la < 2:
        raise ReproError(f"intrinsic: needs at least 2 blocks for a correlation over layers, got {la}")
    corr = {t: _pearson(pa[t], pb[t], f"intrinsic ({t} std profile)") for t in "qkvo"}
    sim = sum(corr.values()) / 4
    return _result(
        "intrinsic",
        sim,
        {
            "n_layers": la,
            "per_matrix": corr,
            "statistic": "std over all entries of each W_Q/W_K/W_V/W_O",
            "compare": "Pearson per matrix type over layers, averaged",
        },
    )


# --------------------------------------------------------------------------- PCS


def _param_list(model: nn.Module, exclude: Sequence[str], matrices_only: bool) -> dict[str, torch.Tensor]:
    return {
        n: p
        for n, p in model.named_parameters()  # tied parameters once, as HuRef's list
        if not any(s in n for s in exclude) and (p.dim() >= 2 or not matrices_only)
    }


def pcs(
    model_a: nn.Module, model_b: nn.Module, *, exclude: Sequence[str] = (), matrices_only: bool = False
) -> BaselineResult:
    """HuRef's parameter cosine similarity: ⟨θ_a, θ_b⟩ / (‖θ_a‖‖θ_b‖) over all parameters matched
    by name, streamed per tensor in float64 (nothing is concatenated).

    `exclude`: drop parameters whose name contains any of these substrings (REEF's pcs.py:
    ("embed", "lm_head")); `matrices_only`: drop 1-D parameters (norms, biases)."""
    exclude = tuple(exclude)
    pa = _param_list(model_a, exclude, matrices_only)
    pb = _param_list(model_b, exclude, matrices_only)
    only_a = [n for n in pa if n not in pb]
    only_b = [n for n in pb if n not in pa]
    if only_a or only_b:
        name, side, other = (only_a[0], "model_a", "model_b") if only_a else (only_b[0], "model_b", "model_a")
        raise ReproError(
            f"pcs: parameter {name!r} is in {side} but not in {other} "
            f"({len(only_a)} + {len(only_b)} unmatched names; tied vs untied embeddings?)"
        )
    for name, a in pa.items():
        if a.shape != pb[name].shape:
            raise ReproError(f"pcs: models differ in parameter {name!r}: {tuple(a.shape)} vs {tuple(pb[name].shape)}")
    if not pa:
        raise ReproError("pcs: no parameters left to compare")
    dot = dot_1d = norm_a = norm_b = 0.0
    n_params = 0
    with torch.no_grad():
        for name, a in pa.items():
            fa = a.detach().reshape(-1)
            fb = pb[name].detach().reshape(-1)
            part = 0.0
            for s in range(0, fa.numel(), _CHUNK):
                x = fa[s : s + _CHUNK].to(torch.float64)
                y = fb[s : s + _CHUNK].to(device=x.device, dtype=torch.float64)
                part += float(torch.dot(x, y))
                norm_a += float(torch.dot(x, x))
                norm_b += float(torch.dot(y, y))
            dot += part
            if a.dim() < 2:
                dot_1d += part
            n_params += fa.numel()
    if norm_a == 0 or norm_b == 0:
        raise ReproError("pcs: a model's compared parameters are all zero")
    return _result(
        "pcs",
        dot / math.sqrt(norm_a * norm_b),
        {
            "n_tensors": len(pa),
            "n_params": n_params,
            "exclude": list(exclude),
            "matrices_only": matrices_only,
            "dot_share_1d": dot_1d / dot if dot else float("nan"),
        },
    )


# --------------------------------------------------------------------------- ICS


def _embedding_weight(model: nn.Module) -> torch.Tensor:
    emb = resolve(model, arch_map(model).embed)
    w = getattr(emb, "weight", None)
    if not isinstance(w, torch.Tensor) or w.dim() != 2:
        raise ReproError(f"{type(model).__name__}: its embedding module has no (V, d) weight")
    return w


def select_tokens(vocab_size: int, n_tokens: int = HUREF_N_TOKENS, seed: int = 0) -> torch.Tensor:
    """A sorted, seeded uniform subset of min(n_tokens, vocab_size) token ids (CPU int64)."""
    if vocab_size < 2 or n_tokens < 2:
        raise ReproError(f"select_tokens: need vocab_size ≥ 2 and n_tokens ≥ 2, got {vocab_size}, {n_tokens}")
    n = min(int(n_tokens), int(vocab_size))
    return torch.randperm(int(vocab_size), generator=generator(seed))[:n].sort().values


def _block_indices(n_blocks: int, n_layers: int) -> list[int]:
    if not 1 <= n_layers <= n_blocks:
        raise ReproError(f"ics: n_layers must be in 1..{n_blocks} (the model's depth), got {n_layers}")
    return list(range(n_blocks - n_layers, n_blocks))


def _iter_terms(
    model: nn.Module, token_ids: torch.Tensor, layers: Sequence[int], dtype: torch.dtype
) -> Iterator[tuple[str, torch.Tensor]]:
    emb = _embedding_weight(model)
    x = emb.detach()[token_ids.to(emb.device)].to(dtype)  # (n, d): the token subset only
    blocks = block_weights(model)
    for i in layers:
        b = blocks[i]
        w = {n: getattr(b, n).to(dtype) for n in ("q", "k", "v", "o", "up", "down")}
        group = b.n_heads // b.n_kv_heads
        if group > 1:  # each K/V head serves `group` consecutive query heads (repeat_kv)
            for n in ("k", "v"):
                w[n] = (
                    w[n]
                    .reshape(b.n_kv_heads, b.head_dim, -1)
                    .repeat_interleave(group, 0)
                    .reshape(b.n_heads * b.head_dim, -1)
                )
        up = w["up"] if b.gate is None else w["up"] * b.gate.to(dtype)  # HuRef: W_gate ∘ W_up
        yield f"{i}.qk", (x @ w["q"].T) @ (x @ w["k"].T).T  # X̂ W_Q W_Kᵀ X̂ᵀ
        yield f"{i}.vo", (x @ w["v"].T) @ (x @ w["o"]).T  # X̂ W_V W_O X̂ᵀ
        yield f"{i}.mlp", (x @ up.T) @ (x @ w["down"]).T  # X̂ W_1 W_2 X̂ᵀ


def invariant_terms(
    model: nn.Module,
    token_ids: torch.Tensor | Sequence[int],
    *,
    n_layers: int = HUREF_N_LAYERS,
    dtype: torch.dtype = torch.float32,
) -> dict[str, torch.Tensor]:
    """HuRef's invariant terms of the last `n_layers` blocks: "{block}.qk|vo|mlp" → (n, n)."""
    ids = torch.as_tensor(token_ids, dtype=torch.long)
    layers = _block_indices(len(arch_map(model).blocks(model)), n_layers)
    with torch.no_grad():
        return dict(_iter_terms(model, ids, layers, dtype))


def ics(
    model_a: nn.Module,
    model_b: nn.Module,
    *,
    n_tokens: int = HUREF_N_TOKENS,
    seed: int = 0,
    n_layers: int = HUREF_N_LAYERS,
    token_ids: torch.Tensor | Sequence[int] | None = None,
    dtype: torch.dtype = torch.float32,
) -> BaselineResult:
    """HuRef's invariant-terms cosine similarity: mean over the last `n_layers` blocks' 3 terms
    of the Pearson correlation between the models' terms (= HuRef's cosine of the concatenated,
    per-term standardised terms). Tokens: `token_ids`, else `select_tokens(V, n_tokens, seed)`."""
    va, vb = _embedding_weight(model_a).shape[0], _embedding_weight(model_b).shape[0]
    if token_ids is None:
        if va != vb:
            raise ReproError(
                f"ics: models have different vocabularies ({va} vs {vb} tokens); "
                "pass token_ids that are the same tokens in both"
            )
        ids = select_tokens(va, n_tokens, seed)
    else:
        ids = torch.as_tensor(token_ids, dtype=torch.long).reshape(-1)
        if ids.numel() < 2 or int(ids.min()) < 0 or int(ids.max()) >= min(va, vb):
            raise ReproError(f"ics: token_ids must be ≥ 2 ids in [0, {min(va, vb)})")
    la = _block_indices(len(arch_map(model_a).blocks(model_a)), n_layers)
    lb = _block_indices(len(arch_map(model_b).blocks(model_b)), n_layers)
    per_term: dict[str, float] = {}
    with torch.no_grad():
        for (name, ma), (_, mb) in zip(_iter_terms(model_a, ids, la, dtype), _iter_terms(model_b, ids, lb, dtype)):
            per_term[name] = _pearson(ma, mb, f"ics (term {name})")
    sim = sum(per_term.values()) / len(per_term)
    return _result(
        "ics",
        sim,
        {
            "n_tokens": int(ids.numel()),
            "token_seed": None if token_ids is not None else seed,
            "layers_a": la,
            "layers_b": lb,
            "per_term": per_term,
            "terms": "X W_Q W_K^T X^T, X W_V W_O X^T, X (W_gate∘W_up) W_down X^T",
            "gqa": "K/V heads repeat_interleave'd to the query heads",
        },
    )


# --------------------------------------------------------------------------- REEF / CKA


def _rbf_gram(x: torch.Tensor, sigma: float | None) -> torch.Tensor:
    g = x @ x.T
    sq = g.diagonal()
    d2 = (sq[:, None] + sq[None, :] - 2 * g).clamp_min(0)
    if sigma is None:  # REEF compute_cka.py: sigma = sqrt(median of the nonzero squared distances)
        nz = d2[d2 > 0]
        if nz.numel() == 0:
            raise ReproError("cka: all samples coincide; the RBF bandwidth is undefined")
        sigma = math.sqrt(float(nz.median()))
    return torch.exp(d2 * (-0.5 / (sigma * sigma)))


def _center_gram(k: torch.Tensor) -> torch.Tensor:
    return k - k.mean(0, keepdim=True) - k.mean(1, keepdim=True) + k.mean()


def cka(x: torch.Tensor, y: torch.Tensor, *, kernel: str = "linear", sigma: float | None = None) -> float:
    """Centered kernel alignment of two representations of the same N samples, x (N, d_a) and
    y (N, d_b): HSIC(K, L) / √(HSIC(K, K) HSIC(L, L)) with centred Gram matrices (Kornblith et
    al. 2019; REEF §4). Linear kernel by default — computed in feature space when N is large
    (‖yᵀx‖²_F / (‖xᵀx‖_F ‖yᵀy‖_F), the same number); ``kernel="rbf"``: Gaussian kernel with
    bandwidth `sigma`, or per matrix √median of the nonzero squared distances (REEF)."""
    if kernel not in ("linear", "rbf"):
        raise ReproError(f"cka: kernel must be 'linear' or 'rbf', got {kernel!r}")
    if x.dim() != 2 or y.dim() != 2:
        raise ReproError(f"cka: expects (N, d) matrices, got shapes {tuple(x.shape)} and {tuple(y.shape)}")
    if x.shape[0] != y.shape[0]:
        raise ReproError(f"cka: x and y must describe the same samples: {x.shape[0]} vs {y.shape[0]} rows")
    if x.shape[0] < 2:
        raise ReproError(f"cka: needs at least 2 samples, got {x.shape[0]}")
    x = x.detach().to(torch.float64)
    y = y.detach().to(device=x.device, dtype=torch.float64)
    if kernel == "rbf":
        kx, ky = _center_gram(_rbf_gram(x, sigma)), _center_gram(_rbf_gram(y, sigma))
        hsic, nx, ny = (kx * ky).sum(), kx.norm(), ky.norm()
    else:
        x = x - x.mean(0)
        y = y - y.mean(0)
        n, da, db = x.shape[0], x.shape[1], y.shape[1]
        if n * n * (da + db) <= n * (da * db + da * da + db * db):
            kx, ky = x @ x.T, y @ y.T
            hsic, nx, ny = (kx * ky).sum(), kx.norm(), ky.norm()
        else:
            hsic, nx, ny = (y.T @ x).square().sum(), (x.T @ x).norm(), (y.T @ y).norm()
    if nx == 0 or ny == 0:
        raise ReproError("cka: a representation is constant across samples; CKA is undefined")
    return float(hsic / (nx * ny))


def reef_layer(n_blocks: int, layer: int | float | None = None) -> int:
    """The block whose output REEF reads: None → round(18/32 · L) (REEF's depth fraction), a
    float in (0, 1] → that fraction of the depth, an int → that block (negative from the end)."""
    if isinstance(layer, bool):
        raise ReproError(f"reef: layer must be an int, a depth fraction or None, got {layer!r}")
    if layer is None or isinstance(layer, float):
        frac = REEF_DEPTH_FRACTION if layer is None else layer
        if not 0 < frac <= 1:
            raise ReproError(f"reef: a depth fraction must be in (0, 1], got {frac}")
        return min(n_blocks - 1, int(math.floor(frac * n_blocks + 0.5)))
    idx = int(layer) + (n_blocks if layer < 0 else 0)
    if not 0 <= idx < n_blocks:
        raise ReproError(f"reef: layer {layer} is out of range for a model with {n_blocks} blocks")
    return idx


def _batches(
    input_ids: torch.Tensor | Sequence[torch.Tensor], batch_size: int
) -> tuple[int, list[tuple[list[int], torch.Tensor]]]:
    if batch_size < 1:
        raise ReproError(f"reef: batch_size must be ≥ 1, got {batch_size}")
    if isinstance(input_ids, torch.Tensor):
        if input_ids.dim() != 2 or input_ids.shape[1] < 1:
            raise ReproError(f"reef: input_ids must be (N, T) token ids, got shape {tuple(input_ids.shape)}")
        n = input_ids.shape[0]
        return n, [
            (list(range(s, min(s + batch_size, n))), input_ids[s : s + batch_size]) for s in range(0, n, batch_size)
        ]
    seqs = [torch.as_tensor(s, dtype=torch.long).reshape(-1) for s in input_ids]
    if any(s.numel() == 0 for s in seqs):
        raise ReproError("reef: an input sequence is empty")
    by_len: dict[int, list[int]] = {}
    for i, s in enumerate(seqs):  # no padding: sequences of one length share a batch
        by_len.setdefault(s.numel(), []).append(i)
    out = []
    for idx in by_len.values():
        for s in range(0, len(idx), batch_size):
            chunk = idx[s : s + batch_size]
            out.append((chunk, torch.stack([seqs[i] for i in chunk])))
    return len(seqs), out


def last_token_states(
    model: nn.Module, input_ids: torch.Tensor | Sequence[torch.Tensor], layer: int, *, batch_size: int = 32
) -> torch.Tensor:
    """(N, d) float64 on CPU: the output of block `layer` (the residual stream after it, before
    any final norm) at each sequence's last token — REEF's forward hook on a decoder layer.
    `input_ids`: an (N, T) tensor, or a sequence of 1-D tensors of any lengths (no padding)."""
    blocks = arch_map(model).blocks(model)
    layer = reef_layer(len(blocks), layer)
    n, batches = _batches(input_ids, batch_size)
    device = next(model.parameters()).device
    kwargs = {"use_cache": False} if hasattr(model, "generation_config") else {}
    out: torch.Tensor | None = None
    was_training = model.training
    try:
        model.eval()
        for idx, batch in batches:
            last = torch.tensor([batch.shape[1] - 1])
            with activations.hooks(model, modules=[], positions=last, device="cpu") as cap, torch.no_grad():
                model(batch.to(device), **kwargs)
            if cap.residual.shape[0] != batch.shape[0]:
                raise ReproError(
                    f"reef: the blocks ran {cap.residual.shape[0] // batch.shape[0]} times in one forward pass"
                )
            h = cap.residual[:, layer + 1, 0].double()  # block `layer`'s output at the last token
            if out is None:
                out = torch.empty(n, h.shape[-1], dtype=torch.float64)
            out[idx] = h
    finally:
        model.train(was_training)
    assert out is not None
    return out


def _standardize(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """REEF's load_acts(center=True, scale=True): per feature, minus the mean, over the std."""
    x = x - x.mean(0)
    std = x.std(0)
    constant = std == 0
    return x / torch.where(constant, torch.ones_like(std), std), int(constant.sum())


def reef(
    model_a: nn.Module,
    model_b: nn.Module,
    input_ids: torch.Tensor | Sequence[torch.Tensor],
    *,
    layer: int | float | None = None,
    batch_size: int = 32,
    kernel: str = "linear",
    standardize: bool = True,
) -> BaselineResult:
    """REEF: CKA between the two models' last-token states after block `layer` (default REEF's
    depth fraction 18/32 of each model's own depth) on the same `input_ids`, each feature
    standardised over the samples first (REEF's compute_cka.py). Widths may differ."""
    la, lb = (reef_layer(len(arch_map(m).blocks(m)), layer) for m in (model_a, model_b))
    xa = last_token_states(model_a, input_ids, la, batch_size=batch_size)
    xb = last_token_states(model_b, input_ids, lb, batch_size=batch_size)
    const_a = const_b = 0
    if standardize:
        (xa, const_a), (xb, const_b) = _standardize(xa), _standardize(xb)
    return _result(
        "reef",
        cka(xa, xb, kernel=kernel),
        {
            "layer_a": la,
            "layer_b": lb,
            "n_blocks_a": len(arch_map(model_a).blocks(model_a)),
            "n_blocks_b": len(arch_map(model_b).blocks(model_b)),
            "n_samples": xa.shape[0],
            "kernel": kernel,
            "pooling": "last token, block output",
            "standardized": standardize,
            "constant_features": [const_a, const_b],
        },
    )


# --------------------------------------------------------------------------- all four


def all_baselines(
    model_a: nn.Module,
    model_b: nn.Module,
    input_ids: torch.Tensor | Sequence[torch.Tensor],
    *,
    layer: int | float | None = None,
    batch_size: int = 32,
    n_tokens: int = HUREF_N_TOKENS,
    seed: int = 0,
) -> dict[str, BaselineResult]:
    """The four baselines of 001 App B.3.2 with their sources' defaults, keyed by method name."""
    return {
        "intrinsic": intrinsic(model_a, model_b),
        "reef": reef(model_a, model_b, input_ids, layer=layer, batch_size=batch_size),
        "pcs": pcs(model_a, model_b),
        "ics": ics(model_a, model_b, n_tokens=n_tokens, seed=seed),
    }
