"""Spectral filters and dark signals (003, Cancedda: "Spectral Filters, Dark Signals, and
Attention Sinks"), for any Llama-, Gemma- or GPT-2-style HF causal LM.

Conventions (003 §2–4, Table 3): vectors are rows and multiply matrices on the right, so a
filter P (d × d) acts as h ↦ h·P. W_u, W_e are (V, d); V_u, V_e hold their right singular
vectors as columns, sorted by decreasing singular value.

- Norm gains are folded into the matrices downstream of the norm (003 §2): W_u ← W_u·diag(g_f)
  with g_f the final norm's gain, so V_u is a basis of the *residual* stream; a reading matrix
  W_y (q, k, v, 1, 3) ← diag(g_in)·W_y with its sub-layer's input-norm gain; on Gemma's
  sandwich blocks a writing matrix (o, 2) ← W_y·diag(g_post) with the gain of the norm applied
  to its output (the norm's per-token scale stays out: it is not a matrix).
- 20 bands (§4): band j holds singular vectors edges[j-1] … edges[j]-1 with
  edges[j] = ⌊j·d/20 + ½⌋ (nearest integer), so k bands always hold the nearest integer to
  k·d/20 directions and band sizes differ by at most one when 20 ∤ d (d = 576: 28 or 29).
- Filters (eq. 2, 3 and §4): Φ_{u,j:k} = V_{u,j:k}V_{u,j:k}ᵀ (and Φ_e);
  Ψ_k = I − Φ_{e,k+1:20}Φ_{u,k+1:20} (Ψ_20 = I); Ω_{u,k} = Φ_{u,1:k} + Φ_{u,20:20} (k ≤ 19);
  random controls R_k project on the first k bands of a seeded random orthonormal basis.
  With tied embeddings and a unit final gain V_e = V_u and Ψ_k = Φ_{u,1:k}.

Interventions (§4, Fig 2): `filtered` registers plain forward hooks that filter the residual
stream after a layer (red box), one MLP's contribution (yellow box), token 0 only (Fig 11
middle), or swap the filtered-out part with another sample's (the "shavings swap", Fig 10).
`Sweep` computes the same NLLs from one cached forward pass: the prefix below the filtered
layer is never recomputed (its blocks are replaced by pass-throughs while the suffix runs).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from repro.core import activations, arch, lens, memo, tied_decoding
from repro.core.arch import frozen_norm
from repro.ground.runtime import ReproError, generator

N_BANDS = 20


# --------------------------------------------------------------------------- spectra and bands


def band_edges(d: int, n_bands: int = N_BANDS) -> list[int]:
    """edges[j] = ⌊j·d/n + ½⌋, j = 0 … n: band j (1-based) is edges[j-1]:edges[j]."""
    if d < n_bands:
        raise ReproError(f"a width of {d} cannot be split into {n_bands} spectral bands")
    return [int(math.floor(j * d / n_bands + 0.5)) for j in range(n_bands + 1)]


@dataclass(frozen=True)
class Spectrum:
    """Singular values S (d,) in decreasing order and right singular vectors V (d, d) as
    columns, of a (V, d) matrix, in float64."""

    S: torch.Tensor
    V: torch.Tensor


def spectrum(W: torch.Tensor) -> Spectrum:
    """SVD of a tall (V, d) matrix through the eigendecomposition of WᵀW in float64 (d × d:
    cheap for a 262k-token vocabulary, and σ_i² ≥ 1e-16·σ_1² is all the filters need)."""
    W = W.detach().double()
    evals, evecs = torch.linalg.eigh(W.T @ W)
    order = torch.argsort(evals, descending=True)
    return Spectrum(evals[order].clamp_min(0).sqrt(), evecs[:, order])


def _gain(norm: nn.Module | None) -> torch.Tensor | None:
    if norm is None or isinstance(norm, nn.Identity):
        return None
    g = frozen_norm(norm).gain
    return None if g is None else g.cpu()


def unembedding_matrix(model: nn.Module) -> torch.Tensor:
    """W_u (V, d) with the final norm's gain folded in (003 §2), float64."""
    amap = lens.arch_map(model)
    W = arch.unembedding(model, amap).detach().cpu().double()
    g = _gain(lens.final_norm(model, amap))
    return W if g is None else W * g.double()[None, :]


def embedding_matrix(model: nn.Module) -> torch.Tensor:
    """W_e (V, d) as written into the residual stream (Gemma's √d scale included), float64."""
    return tied_decoding.input_embeddings(model).cpu().double()


@dataclass
class Filters:
    """The spectral filters of one model (003 §4, §6) as float32 (d, d) matrices."""

    u: Spectrum
    e: Spectrum
    n_bands: int = N_BANDS
    edges: list[int] = field(init=False)

    def __post_init__(self) -> None:
        d = self.u.V.shape[0]
        if self.e.V.shape[0] != d:
            raise ReproError(f"W_u and W_e have different widths ({d} vs {self.e.V.shape[0]})")
        self.edges = band_edges(d, self.n_bands)

    @property
    def d(self) -> int:
        return self.u.V.shape[0]

    def dims(self, j: int, k: int) -> int:
        """How many directions bands j … k hold."""
        self._check(j, k)
        return self.edges[k] - self.edges[j - 1]

    def _check(self, j: int, k: int) -> None:
        if not 1 <= j <= k <= self.n_bands:
            raise ReproError(f"bands must satisfy 1 ≤ j ≤ k ≤ {self.n_bands}, got j={j}, k={k}")

    def basis(self, which: str, j: int, k: int) -> torch.Tensor:
        """V_{which, j:k}: (d, dims) columns, which ∈ {"u", "e"}."""
        self._check(j, k)
        V = {"u": self.u.V, "e": self.e.V}[which]
        return V[:, self.edges[j - 1] : self.edges[k]]

    def _proj(self, B: torch.Tensor) -> torch.Tensor:
        return (B @ B.T).float()

    def phi(self, which: str, j: int, k: int) -> torch.Tensor:
        """Φ_{which, j:k} = V V ᵀ over bands j … k."""
        return self._proj(self.basis(which, j, k))

    def dark(self, which: str = "u") -> torch.Tensor:
        """The U-dark (E-dark) projector Φ_{·,20:20}: the last 5% of the spectrum."""
        return self.phi(which, self.n_bands, self.n_bands)

    def psi(self, k: int) -> torch.Tensor:
        """Ψ_k = I − Φ_{e,k+1:20}·Φ_{u,k+1:20} (eq. 2); Ψ_20 = I. Not symmetric unless the two
        projectors commute (they do when V_e = V_u)."""
        self._check(1, k)
        eye = torch.eye(self.d, dtype=torch.float64)
        if k == self.n_bands:
            return eye.float()
        Pe = self.basis("e", k + 1, self.n_bands)
        Pu = self.basis("u", k + 1, self.n_bands)
        return (eye - (Pe @ Pe.T) @ (Pu @ Pu.T)).float()

    def omega(self, k: int) -> torch.Tensor:
        """Ω_{u,k} = [V_{u,1:k}; V_{u,20:20}][…]ᵀ (eq. 3): the head plus the dark band; Ω_{u,0}
        is the dark band alone (one band retained)."""
        if k == 0:
            return self.dark("u")
        self._check(1, k)
        if k >= self.n_bands - 1:
            return self.phi("u", 1, self.n_bands)
        return self._proj(torch.cat([self.basis("u", 1, k), self.basis("u", self.n_bands, self.n_bands)], 1))

    def random_basis(self, seed: int) -> torch.Tensor:
        """A seeded random orthonormal basis of R^d (columns), float64."""
        g = generator(seed)
        Q, R = torch.linalg.qr(torch.randn(self.d, self.d, generator=g, dtype=torch.float64))
        return Q * torch.sign(torch.diagonal(R))[None, :]  # Haar-distributed

    def random(self, k: int, seed: int) -> torch.Tensor:
        """The first k bands' worth of directions of a random orthonormal basis ('Rnd', Fig 7)."""
        self._check(1, k)
        return self._proj(self.random_basis(seed)[:, : self.edges[k]])

    def family(self, name: str, k: int, seed: int = 0) -> torch.Tensor:
        """A filter by family name: phi_u, phi_e (Φ_{·,1:k}), psi, omega, random."""
        if name in ("phi_u", "phi_e"):
            return self.phi(name[-1], 1, k)
        if name == "psi":
            return self.psi(k)
        if name == "omega":
            return self.omega(k)
        if name == "random":
            return self.random(k, seed)
        raise ReproError(f"unknown filter family {name!r}: phi_u, phi_e, psi, omega or random")

    def retained(self, name: str, k: int) -> int:
        """Directions a family's k-th filter keeps (Ψ's nominal count: it removes a double
        projection, so it keeps more information than this, 003 §4)."""
        if name == "omega" and k < self.n_bands:  # Ω_{u,19} = I: bands 1 … 19 and 20
            return (self.dims(1, k) if k else 0) + self.dims(self.n_bands, self.n_bands)
        return self.dims(1, k)


def filters(model: nn.Module) -> Filters:
    """The spectral filters of a model: V_u from the gain-folded W_u, V_e from W_e."""
    return Filters(spectrum(unembedding_matrix(model)), spectrum(embedding_matrix(model)))


# --------------------------------------------------------------------------- parameter projections


READ = ("q", "k", "v", "1", "3")
WRITE = ("o", "2")


def _linear_rows(module: nn.Module) -> torch.Tensor:
    """The weight as (d_out, d_in) float64 for nn.Linear and GPT-2's Conv1D alike."""
    from repro.core.arch import out_proj_weight

    return out_proj_weight(module)[0].cpu().double()


def component_matrices(model: nn.Module, layer: int) -> dict[str, torch.Tensor]:
    """Row-convention W_y of one layer with norm gains folded (003 Table 3): reading matrices
    W_q, W_k, W_v (d, H·d_h), W_1, W_3 (d, d_m); writing W_o (H·d_h, d), W_2 (d_m, d).
    W_3 is absent from non-gated MLPs (GPT-2)."""
    amap = lens.arch_map(model)
    block = amap.blocks(model)[layer]
    g_attn = _gain(lens.resolve(block, amap.attn_norm)) if amap.attn_norm else None
    g_mlp = _gain(lens.resolve(block, amap.mlp_norm)) if amap.mlp_norm else None
    g_attn_out = g_mlp_out = None
    if amap.attn_resid != amap.attn:  # Gemma: a norm on the sub-layer's output
        g_attn_out = _gain(lens.resolve(block, amap.attn_resid))
        g_mlp_out = _gain(lens.resolve(block, amap.mlp_resid))
    attn, mlp = lens.resolve(block, amap.attn), lens.resolve(block, amap.mlp)
    out: dict[str, torch.Tensor] = {}
    if hasattr(attn, "q_proj"):
        out.update(q=_linear_rows(attn.q_proj).T, k=_linear_rows(attn.k_proj).T, v=_linear_rows(attn.v_proj).T)
        out["o"] = _linear_rows(attn.o_proj).T
    elif hasattr(attn, "c_attn"):  # GPT-2: one fused (d, 3d) Conv1D
        q, k, v = _linear_rows(attn.c_attn).T.chunk(3, dim=1)
        out.update(q=q, k=k, v=v, o=_linear_rows(attn.c_proj).T)
    else:
        raise ReproError(
            f"{type(attn).__name__}: no q/k/v/o projections known; add it to repro.spectral_filters.spectral"
        )
    if hasattr(mlp, "gate_proj"):
        out.update(
            {"1": _linear_rows(mlp.gate_proj).T, "3": _linear_rows(mlp.up_proj).T, "2": _linear_rows(mlp.down_proj).T}
        )
    elif hasattr(mlp, "c_fc"):
        out.update({"1": _linear_rows(mlp.c_fc).T, "2": _linear_rows(mlp.c_proj).T})
    else:
        raise ReproError(f"{type(mlp).__name__}: no MLP matrices known; add it to repro.spectral_filters.spectral")
    for y in ("q", "k", "v"):
        if g_attn is not None:
            out[y] = g_attn.double()[:, None] * out[y]
    for y in ("1", "3"):
        if y in out and g_mlp is not None:
            out[y] = g_mlp.double()[:, None] * out[y]
    if g_attn_out is not None:
        out["o"] = out["o"] * g_attn_out.double()[None, :]
    if g_mlp_out is not None:
        out["2"] = out["2"] * g_mlp_out.double()[None, :]
    return out


def projection_norms(W: torch.Tensor, V: torch.Tensor, kind: str) -> torch.Tensor:
    """Eq. (1): j_i = ‖(Vᵀ)_i W‖ for a reading W (d, n), ‖(Vᵀ)_i Wᵀ‖ for a writing W (n, d);
    returns (d,) in the order of V's columns (largest singular value first)."""
    V = V.double()
    if kind == "read":
        return (V.T @ W.double()).norm(dim=1)
    if kind == "write":
        return (W.double() @ V).norm(dim=0)
    raise ReproError(f"kind must be 'read' or 'write', got {kind!r}")


def band_share(j: torch.Tensor, edges: Sequence[int], band: int) -> float:
    """Share of a matrix's squared Frobenius norm that lies in one band: Σ_band j_i² / Σ j_i²
    (V is orthonormal, so Σ j_i² = ‖W‖²_F). Chance for a random matrix: the band's share of d."""
    j2 = j.double() ** 2
    return float(j2[edges[band - 1] : edges[band]].sum() / j2.sum())


def dark_shares(model: nn.Module, F: Filters, basis: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """y → (L,) U-dark share (last band) of every layer's W_y. `basis`: another orthonormal
    basis (d, d) in place of V_u (e.g. `F.random_basis(seed)`: the share of the same number of
    random directions, a negative control whose expectation is the chance share)."""
    L = len(lens.arch_map(model).blocks(model))
    V = F.u.V if basis is None else basis
    out: dict[str, list[float]] = {}
    for layer in range(L):
        for y, W in component_matrices(model, layer).items():
            j = projection_norms(W, V, "read" if y in READ else "write")
            out.setdefault(y, []).append(band_share(j, F.edges, F.n_bands))
    return {y: torch.tensor(v) for y, v in out.items()}


# --------------------------------------------------------------------------- interventions


def _apply(
    h: torch.Tensor, P: torch.Tensor, *, tokens: str = "all", swap: bool = False, swap_shift: int = 0
) -> torch.Tensor:
    """Filter a (B, T, d) stream: h·P on all tokens or token 0 only; with `swap`, add the
    filtered-out part of the next sample (same position) instead of dropping it (Fig 10).
    `swap_shift` ≠ 0 takes it from the position `swap_shift` earlier (cyclically) instead: a
    control in which token 0 too gets another token's shavings (its own sink part is lost)."""
    if tokens not in ("all", "first"):
        raise ReproError(f"tokens must be 'all' or 'first', got {tokens!r}")
    x = h.float()
    P = P.to(x.device, torch.float32)
    kept = x @ P
    if swap:
        if x.shape[0] < 2:
            raise ReproError("the shavings swap needs at least two samples in a batch")
        other = torch.roll(x, 1, dims=0)
        if swap_shift:
            other = torch.roll(other, swap_shift, dims=1)
        kept = kept + (other - other @ P)
    if tokens == "first":
        kept = torch.cat([kept[:, :1], x[:, 1:]], dim=1)
    return kept.to(h.dtype)


def _replace_first(output: Any, new: torch.Tensor) -> Any:
    if isinstance(output, torch.Tensor):
        return new
    return (new, *output[1:])


@contextlib.contextmanager
def filtered(
    model: nn.Module,
    layer: int,
    P: torch.Tensor,
    *,
    where: str = "resid",
    tokens: str = "all",
    swap: bool = False,
    swap_shift: int = 0,
) -> Iterator[None]:
    """Plain forward hooks: filter the residual stream right after block `layer` (where="resid",
    003 Fig 2 red box) or the MLP's contribution in block `layer` (where="mlp", yellow box:
    on Gemma, the post-feed-forward norm's output, which is what the block adds). The hook is
    removed on exit, also when the forward pass raises."""
    amap = lens.arch_map(model)
    blocks = amap.blocks(model)
    if not 0 <= layer < len(blocks):
        raise ReproError(f"layer {layer} out of range: the model has {len(blocks)} blocks")
    if where == "resid":
        mod = blocks[layer]
    elif where == "mlp":
        if tokens != "all" or swap:
            raise ReproError("MLP filters apply to all tokens, without swap (003 Fig 7)")
        mod = lens.resolve(blocks[layer], amap.mlp_resid)
    else:
        raise ReproError(f"where must be 'resid' or 'mlp', got {where!r}")

    def hook(_m, _a, output):
        h = output if isinstance(output, torch.Tensor) else output[0]
        return _replace_first(output, _apply(h, P, tokens=tokens, swap=swap, swap_shift=swap_shift))

    handle = mod.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


class _PassThrough(nn.Module):
    """Stands in for a prefix block whose output is already cached."""

    def __init__(self, like: nn.Module):
        super().__init__()
        for attr in ("attention_type", "layer_idx", "is_sliding"):
            if hasattr(like, attr):
                setattr(self, attr, getattr(like, attr))

    def forward(self, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return hidden_states


def nll_per_token(model: nn.Module, normed: torch.Tensor, targets: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """(B, T) NLL of `targets` from final-normed states (B, T, d): logsumexp of the logits
    minus the target's logit, in float32. The LM head runs over the vocabulary in chunks of
    `chunk` rows with a running logsumexp, so no (tokens × V) logit tensor is ever held (Gemma's
    262k vocabulary: 1 GB for 1,000 tokens); measured 2.1× faster than log-softmax over whole
    rows for 1,016 tokens × 262k in float32 on 2 cores, equal to 4e-6 nats."""
    B, T, d = normed.shape
    flat, tflat = normed.reshape(-1, d), targets.reshape(-1).to(normed.device)
    amap = lens.arch_map(model)
    W = arch.unembedding(model, amap)  # (V, d)
    bias = getattr(lens.resolve(model, amap.lm_head), "bias", None)
    cap = getattr(arch.text_config(model), amap.softcap_attr, None) if amap.softcap_attr else None

    def logits(rows: slice, h: torch.Tensor) -> torch.Tensor:  # (rows, n) in float32
        z = (W[rows] @ h.T).float()
        if bias is not None:
            z = z + bias[rows].float()[:, None]
        return torch.tanh(z / cap) * cap if cap else z

    h = flat.to(W.dtype)
    lse = torch.full((flat.shape[0],), float("-inf"), device=flat.device)
    for s in range(0, W.shape[0], chunk):
        lse = torch.logaddexp(lse, torch.logsumexp(logits(slice(s, s + chunk), h), 0))
    z_t = (h.float() * W[tflat].float()).sum(-1)
    if bias is not None:
        z_t = z_t + bias[tflat].float()
    if cap:
        z_t = torch.tanh(z_t / cap) * cap
    return (lse - z_t).cpu().view(B, T)


class Sweep:
    """NLL of a model on fixed samples under one filter at a time, reusing cached prefix states.

    One forward pass records the residual stream after every block and every block's MLP
    contribution; `nll(layer, P, …)` then runs only blocks layer+1 … L-1 (the prefix blocks are
    pass-throughs) from the filtered state, and returns the mean NLL per predicted token.
    `ids`: (B, T) samples, each starting with the same token (003 §5: token 0 is <BoS>).
    """

    def __init__(self, model: nn.Module, ids: torch.Tensor):
        self.model, self.ids = model, ids
        self.amap = lens.arch_map(model)
        self.blocks = self.amap.blocks(model)
        self.L = len(self.blocks)
        with torch.no_grad():
            cap = activations.capture(model, ids, modules=["mlp_out"], logits_to_keep=1)
        # resid[:, l + 1] = stream after block l; resid[:, 0] = the embeddings
        self.resid = cap.residual
        self.mlp_out = cap.modules["mlp_out"]
        self.base_prompts = self._prompt_nll_from(self.L, self.resid[:, self.L])
        self.base = float(self.base_prompts.mean())

    def _prompt_nll_from(self, start: int, h: torch.Tensor) -> torch.Tensor:
        """(B,) mean NLL per sample when blocks start … L-1 run from stream h (the state before
        block `start`), float64. Every sample has the same length, so their mean is the mean
        over all predicted tokens."""
        return self.token_nll(start, h).double().mean(1)

    def _nll_from(self, start: int, h: torch.Tensor) -> float:
        """Mean NLL when blocks start … L-1 run from stream h (the state before block `start`)."""
        return float(self._prompt_nll_from(start, h).mean())

    def token_nll(self, start: int, h: torch.Tensor) -> torch.Tensor:
        parent_path, _, attr = self.amap.layers.rpartition(".")
        parent = lens.resolve(self.model, parent_path)
        original = getattr(parent, attr)
        stand_in = nn.ModuleList([_PassThrough(b) if i < start else b for i, b in enumerate(original)])
        target = original[start] if start < self.L else lens.final_norm(self.model, self.amap)

        def inject(_m, args, kwargs):
            if args:
                return (h, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": h}

        handle = target.register_forward_pre_hook(inject, with_kwargs=True)
        setattr(parent, attr, stand_in)
        try:
            with torch.no_grad():
                normed = parent(input_ids=self.ids, use_cache=False).last_hidden_state
        finally:
            setattr(parent, attr, original)
            handle.remove()
        with torch.no_grad():
            return nll_per_token(self.model, normed[:, :-1], self.ids[:, 1:])

    def state(
        self,
        layer: int,
        P: torch.Tensor | None,
        *,
        where: str = "resid",
        tokens: str = "all",
        swap: bool = False,
        swap_shift: int = 0,
    ) -> torch.Tensor:
        """The stream after block `layer` with the filter applied (what `filtered` produces)."""
        h = self.resid[:, layer + 1]
        if P is None:
            return h
        if where == "mlp" and (tokens != "all" or swap):
            raise ReproError("MLP filters apply to all tokens, without swap (003 Fig 7)")
        if where == "mlp":
            m = self.mlp_out[layer]
            return (h.float() - m.float() + _apply(m, P).float()).to(h.dtype)
        return _apply(h, P, tokens=tokens, swap=swap, swap_shift=swap_shift)

    def memo_key(self) -> dict[str, Any]:
        """What a sweep's measurements depend on (repro.core.memo): the model and the samples."""
        if not hasattr(self, "_memo_key"):
            self._memo_key = {"model": memo.keyable(self.model), "ids": memo.keyable(self.ids)}
        return self._memo_key

    @memo.cached("sf-prompt-nll")
    def prompt_nll(self, layer: int, P: torch.Tensor | None, **kw: Any) -> torch.Tensor:
        """(B,) mean NLL of each sample with filter P applied after block `layer` (see `state`),
        float64: the per-sample spread is the measurement's noise (claims' power)."""
        if not 0 <= layer < self.L:
            raise ReproError(f"layer {layer} out of range: the model has {self.L} blocks")
        if P is None:
            return self.base_prompts.clone()
        return self._prompt_nll_from(layer + 1, self.state(layer, P, **kw))

    def nll(self, layer: int, P: torch.Tensor | None, **kw: Any) -> float:
        """Mean NLL with filter P applied after block `layer` (see `state`); P=None: no filter."""
        if not 0 <= layer < self.L:
            raise ReproError(f"layer {layer} out of range: the model has {self.L} blocks")
        return self._nll_from(layer + 1, self.state(layer, P, **kw))


# --------------------------------------------------------------------------- generation


def rep_n(tokens: Sequence[int], n: int = 3) -> float:
    """Repetition rate of a continuation: 1 − distinct n-grams / n-grams (Welleck et al. 2019's
    rep-n); 0 for no repeated n-gram, → 1 for a loop."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return 0.0 if not grams else 1.0 - len(set(grams)) / len(grams)


def generate(
    model: nn.Module,
    prompt_ids: torch.Tensor,
    max_new_tokens: int,
    *,
    layer: int | None = None,
    P: torch.Tensor | None = None,
) -> list[int]:
    """Greedy continuation (token ids after the prompt), optionally with the residual stream
    filtered after block `layer` at every position (003 §6.1, Tables 2, 4, 5)."""
    ctx = filtered(model, layer, P) if P is not None else contextlib.nullcontext()
    prompt_ids = prompt_ids.to(next(model.parameters()).device)
    with ctx, torch.no_grad():
        out = model.generate(
            prompt_ids,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            attention_mask=torch.ones_like(prompt_ids),
            pad_token_id=0,
        )
    return out[0, prompt_ids.shape[1] :].tolist()
