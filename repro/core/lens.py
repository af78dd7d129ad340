"""The logit lens and the tuned lens: next-token predictions read off intermediate residual states.

`unembed` is the one unembedding (final norm, LM head, the model's final logit soft-cap);
`logit_lens` applies it to every layer's pre-norm state, so the final norm is applied exactly
once (nostalgebraist 2020, "interpreting GPT: the logit lens"; the states' convention is
`repro.core.activations`'). `kl_to_logits` is the suite's one KL; `TunedLens` /
`fit_tuned_lens` / `lens_kl` are Belrose et al.'s tuned lens and its per-layer KL to the model.

The architecture map is `repro.core.arch`, the hooks that read activations
`repro.core.activations`, the tied-dictionary decoding of 000 §III `repro.core.tied_decoding`:
import from them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch
from torch import nn

from repro.core import memo
from repro.core.arch import ArchMap, arch_map, final_norm, resolve, text_config
from repro.ground.errors import ReproError

# --------------------------------------------------------------------------- unembedding and the logit lens


def unembed(
    model: nn.Module,
    h: torch.Tensor,
    *,
    normed: bool = False,
    amap: ArchMap | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Logits of residual states h (..., d): final norm (unless `normed`), LM head, then the
    model's final logit soft-cap if its config has one (Gemma 2: cap·tanh(z/cap)).

    `compute_dtype` (e.g. torch.float32 for a bfloat16 model): run the LM head's matmul in that
    dtype, on a cast copy of its weight, instead of through the module."""
    amap = amap or arch_map(model)
    if not normed:
        h = final_norm(model, amap)(h)
    head = resolve(model, amap.lm_head)
    if compute_dtype is None:
        logits = head(h)
    else:
        bias = getattr(head, "bias", None)
        logits = torch.nn.functional.linear(
            h.to(compute_dtype), head.weight.to(compute_dtype), None if bias is None else bias.to(compute_dtype)
        )
    cap = getattr(text_config(model), amap.softcap_attr, None) if amap.softcap_attr else None
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def logit_lens(
    model: nn.Module,
    hidden_states: torch.Tensor | Sequence[torch.Tensor],
    *,
    last_is_normed: bool = False,
    layer_dim: int = 1,
) -> torch.Tensor | list[torch.Tensor]:
    """Logits read off every layer's residual state with the model's own final norm and head.

    `hidden_states` is either a tensor whose `layer_dim` indexes layers (a Capture's
    `residual`, shape (B, L+1, T, d) → (B, L+1, T, V)) or a sequence of (…, d) tensors (→ a
    list). The states must be pre-norm; if you pass transformers' `output_hidden_states`
    tuple, whose last entry is already normalised, set `last_is_normed=True` so it is not
    normalised twice. Run it under torch.no_grad() unless you need gradients (V is large).
    """
    amap = arch_map(model)
    if isinstance(hidden_states, torch.Tensor):
        if not last_is_normed:
            return unembed(model, hidden_states, amap=amap)
        n = hidden_states.shape[layer_dim]
        head = unembed(model, hidden_states.narrow(layer_dim, 0, n - 1), amap=amap)
        last = unembed(model, hidden_states.narrow(layer_dim, n - 1, 1), normed=True, amap=amap)
        return torch.cat([head, last], dim=layer_dim)
    states = list(hidden_states)
    return [unembed(model, h, normed=last_is_normed and i == len(states) - 1, amap=amap) for i, h in enumerate(states)]


# --------------------------------------------------------------------------- lens read-outs


def target_ranks(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Rank of each target token under `logits` (…, V): 1 = the top prediction; ties count
    against the target (rank = 1 + #tokens with a strictly larger logit)."""
    picked = logits.gather(-1, targets.unsqueeze(-1))
    return (logits > picked).sum(-1) + 1


@torch.no_grad()
def logit_lens_ranks(model: nn.Module, residual: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """002 "Logit Lens": rank of the correct next token read off every layer.

    residual (B, L+1, T, d): pre-norm states (a Capture's `residual`); targets (B, T) the next
    tokens. Returns (L+1, B, T) ranks, one layer at a time (the vocabulary can be large)."""
    return torch.stack(
        [target_ranks(unembed(model, residual[:, l]).float(), targets) for l in range(residual.shape[1])]
    )


class _KLToLogits(torch.autograd.Function):
    """KL(p ‖ softmax(z)) per row = Σ p log p − p·z + logsumexp(z), with the gradient
    softmax(z) − p written in place: two passes over the (…, V) logits forward and one backward,
    where log_softmax → difference → product → sum and its autograd made about eight (the tuned
    lens's step is dominated by such passes over (L, tokens, V) tensors: 1.75 s → 0.75 s for 30 ×
    128 × 49,152 on 2 cores, equal to float rounding)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, log_p: torch.Tensor) -> torch.Tensor:
        p = log_p.exp()
        lse = torch.logsumexp(z, -1)
        kl = (p * log_p).sum(-1) - torch.einsum("...nv,nv->...n", z, p) + lse
        ctx.save_for_backward(z, p, lse)
        return kl

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        z, p, lse = ctx.saved_tensors
        return (z - lse.unsqueeze(-1)).exp_().sub_(p).mul_(g.unsqueeze(-1)), None


def kl_to_logits(log_p: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ softmax(z)) in nats per row: `log_p` (n, V) log-probabilities of the reference,
    `z` (…, n, V) float32 logits (any leading dims, e.g. layers); returns (…, n)."""
    return _KLToLogits.apply(z, log_p)


class TunedLens(nn.Module):
    """Belrose et al. (2023), "Eliciting Latent Predictions from Transformers with the Tuned
    Lens", as 002 "Common Confusions" describes it: one affine translator per layer,
    h ↦ A_l h + b_l, initialised to the identity (A = I, b = 0: the logit lens), then decoded
    with the model's own final norm and unembedding (frozen). Layers 0 … L−1 get a translator;
    layer L is the model's output itself."""

    def __init__(self, n_layers: int, d_model: int):
        super().__init__()
        self.weight = nn.Parameter(torch.eye(d_model).repeat(n_layers, 1, 1))  # (L, d, d)
        self.bias = nn.Parameter(torch.zeros(n_layers, d_model))  # (L, d)

    def forward(self, h: torch.Tensor, layer: int | None = None) -> torch.Tensor:
        """Translate states: h (N, d) of one `layer`, or h (L, N, d) of every layer (layer=None)."""
        if layer is not None:
            return h @ self.weight[layer].T + self.bias[layer]
        return torch.baddbmm(self.bias.unsqueeze(1), h, self.weight.transpose(1, 2))  # (L, N, d)


@contextlib.contextmanager
def _frozen(model: nn.Module) -> Iterator[None]:
    """Freeze the model's parameters for the duration (restores requires_grad afterwards)."""
    saved = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in saved:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in saved:
            p.requires_grad_(flag)


@memo.cached("tuned-lens", ignore=("progress",))
def fit_tuned_lens(
    model: nn.Module,
    residual: torch.Tensor,
    *,
    steps: int = 100,
    batch_tokens: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
    autocast: str | None = "auto",
    progress: bool = False,
) -> tuple[TunedLens, list[float]]:
    """Train a TunedLens on KL(final ‖ lens) over the tokens of `residual` (N, L+1, d), all
    layers at once: each step draws `batch_tokens` tokens (seeded) and sums the per-layer mean
    KLs. Adam; the vocabulary matmuls run under `autocast` — "auto": the dtype policy
    (runtime.resolve_dtype; bfloat16 with native bf16, ~2.5× faster on such a CPU), None:
    float32; the KL itself is computed in float32. Returns the lens and the per-step loss."""
    from repro.ground.runtime import autocast as policy_autocast
    from repro.ground.runtime import generator

    if residual.dim() != 3:
        raise ReproError(f"fit_tuned_lens wants residual states (N tokens, L+1, d), got {tuple(residual.shape)}")
    N, L1, d = residual.shape
    L = L1 - 1
    lens = TunedLens(L, d).to(residual.device)
    opt = torch.optim.Adam(lens.parameters(), lr=lr)
    g = generator(seed)
    amp = policy_autocast(autocast, residual.device)
    losses: list[float] = []
    it = range(steps)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="tuned lens", leave=False)
    with _frozen(model):
        for _ in it:
            idx = torch.randint(0, N, (batch_tokens,), generator=g)
            h = residual[idx].float()  # (n, L+1, d)
            with torch.no_grad(), amp:
                log_p = unembed(model, h[:, L]).float().log_softmax(-1)  # (n, V)
            x = h[:, :L].transpose(0, 1)  # (L, n, d)
            with amp:
                logits = unembed(model, lens(x))  # (L, n, V)
            loss = kl_to_logits(log_p, logits.float()).mean(-1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()) / L)
    return lens.eval(), losses


@torch.no_grad()
def lens_kl(model: nn.Module, residual: torch.Tensor, lens: TunedLens | None = None, chunk: int = 256) -> torch.Tensor:
    """KL(final ‖ lens_l) per layer l = 0 … L−1 and token, (L, N) float32 nats, for the tokens of
    `residual` (N, L+1, d): the logit lens when `lens` is None, else the tuned lens."""
    N, L1, _ = residual.shape
    L = L1 - 1
    out = torch.empty(L, N)
    for start in range(0, N, chunk):
        h = residual[start : start + chunk].float()
        log_p = unembed(model, h[:, L]).float().log_softmax(-1)
        for l in range(L):
            x = h[:, l] if lens is None else lens(h[:, l], l)
            out[l, start : start + h.shape[0]] = kl_to_logits(log_p, unembed(model, x).float())
    return out


# --------------------------------------------------------------------------- tuned lens, trained to a held-out stop


@torch.no_grad()
def ridge_translators(model: nn.Module, residual: torch.Tensor, held_out: torch.Tensor, ridges: Sequence[float]):
    """A TunedLens whose translators are ridge least-squares maps of each layer's state onto the
    final state's direction, h_L / rms(h_L) (what the final norm and head read: the lens's norm is
    scale-invariant, so a map onto that direction decodes as the model's own output), the ridge
    per layer chosen on `held_out` by KL(final ‖ lens) from `ridges` (× the mean input variance).
    `residual`, `held_out`: (N, L+1, d). Returns (lens, per-layer held-out KL (L,), chosen ridges).
    An affine start for the KL training, far closer to its optimum than the identity (the logit
    lens): from the identity, 100 Adam steps left SmolLM2's layer 0 at 11.6 nats."""
    N, L1, d = residual.shape
    L = L1 - 1
    h = residual.double()
    y = h[:, L] / h[:, L].pow(2).mean(-1, keepdim=True).sqrt()
    yc = y - y.mean(0)
    best = None
    for lam in ridges:
        cand = TunedLens(L, d).to(residual.device)
        for l in range(L):
            x = h[:, l]
            xc = x - x.mean(0)
            cov = xc.T @ xc / N
            eye = torch.eye(d, dtype=cov.dtype, device=cov.device)
            a = torch.linalg.solve(cov + lam * cov.diagonal().mean() * eye, xc.T @ yc / N).T  # (d_out, d_in)
            cand.weight[l] = a.float()
            cand.bias[l] = (y.mean(0) - a @ x.mean(0)).float()
        kl = lens_kl(model, held_out, cand).mean(1)  # (L,)
        if best is None:
            best, best_kl, chosen = cand, kl, torch.full((L,), float(lam), dtype=torch.float64)
        else:
            better = kl < best_kl
            best.weight[better], best.bias[better] = cand.weight[better], cand.bias[better]
            best_kl, chosen = torch.where(better, kl, best_kl), torch.where(better, float(lam), chosen)
    return best, best_kl, chosen.tolist()


@dataclass(frozen=True)
class StoppedLens:
    """A tuned lens trained until its held-out KL stopped improving: the lens (each layer's
    translator at its best held-out step), the curve of held-out KL per layer (`steps`, and
    `held_kl` (evaluations, L)), each layer's best step, the step training stopped at and why."""

    lens: TunedLens
    steps: list[int]
    held_kl: torch.Tensor
    best_step: list[int]
    stopped_at: int
    converged: bool
    ridges: list[float] | None

    @property
    def best_kl(self) -> torch.Tensor:
        return self.held_kl.min(0).values


@memo.cached("tuned-lens-stopped")
def fit_tuned_lens_stopped(
    model: nn.Module,
    residual: torch.Tensor,
    held_out: torch.Tensor,
    *,
    max_steps: int,
    batch_tokens: int,
    lr: float,
    eval_every: int,
    patience: int,
    min_gain: float,
    ridges: Sequence[float] = (),
    seed: int = 0,
    autocast: str | None = "auto",
) -> StoppedLens:
    """Belrose et al.'s tuned lens with early stopping: Adam on KL(final ‖ lens) over the tokens
    of `residual` (N, L+1, d), as `fit_tuned_lens`, and every `eval_every` steps the per-layer
    mean KL on `held_out` (M, L+1, d, tokens of other windows). The layers' translators share no
    parameter and Adam's state is per parameter, so each layer keeps its own best snapshot (as if
    trained and stopped alone). Stop rule: training stops after `patience` evaluations in a row in
    which no layer's held-out KL fell by more than `min_gain` (relative to its best), or at
    `max_steps` (then `converged` is False). Start: the identity (the logit lens) when `ridges` is
    empty, else `ridge_translators`."""
    from repro.ground.runtime import autocast as policy_autocast
    from repro.ground.runtime import generator

    if residual.dim() != 3 or held_out.dim() != 3 or held_out.shape[1:] != residual.shape[1:]:
        raise ReproError(
            "fit_tuned_lens_stopped wants residual and held-out states (N tokens, L+1, d) of one model, "
            f"got {tuple(residual.shape)} and {tuple(held_out.shape)}"
        )
    if eval_every < 1 or patience < 1 or max_steps < 0:
        raise ReproError(f"eval_every and patience ≥ 1, max_steps ≥ 0 (got {eval_every}, {patience}, {max_steps})")
    N, L1, d = residual.shape
    L = L1 - 1
    if ridges:
        lens, kl0, chosen = ridge_translators(model, residual, held_out, ridges)
    else:
        lens, chosen = TunedLens(L, d).to(residual.device), None
        kl0 = lens_kl(model, held_out, lens).mean(1)
    best_w, best_b = lens.weight.detach().clone(), lens.bias.detach().clone()
    steps, curve, best_step = [0], [kl0], [0] * L
    best_kl = kl0.clone()
    opt = torch.optim.Adam(lens.parameters(), lr=lr)
    g = generator(seed)
    amp = policy_autocast(autocast, residual.device)
    stale, step = 0, 0
    with _frozen(model):
        while step < max_steps and stale < patience:
            step += 1
            idx = torch.randint(0, N, (batch_tokens,), generator=g)
            h = residual[idx].float()  # (n, L+1, d)
            with torch.no_grad(), amp:
                log_p = unembed(model, h[:, L]).float().log_softmax(-1)  # (n, V)
            with amp:
                logits = unembed(model, lens(h[:, :L].transpose(0, 1)))  # (L, n, V)
            loss = kl_to_logits(log_p, logits.float()).mean(-1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step % eval_every and step < max_steps:
                continue
            kl = lens_kl(model, held_out, lens).mean(1)
            steps.append(step)
            curve.append(kl)
            gained = kl < best_kl * (1.0 - min_gain)
            better = kl < best_kl
            with torch.no_grad():
                best_w[better], best_b[better] = lens.weight[better], lens.bias[better]
            best_kl = torch.where(better, kl, best_kl)
            best_step = [step if b else s for b, s in zip(better.tolist(), best_step)]
            stale = 0 if bool(gained.any()) else stale + 1
    with torch.no_grad():
        lens.weight.copy_(best_w)
        lens.bias.copy_(best_b)
    return StoppedLens(lens.eval(), steps, torch.stack(curve), best_step, step, stale >= patience, chosen)
