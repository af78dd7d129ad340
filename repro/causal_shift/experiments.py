"""Causal shift (000, "input–output alignment shift" in autoregressive transformers).

§III — where hidden states stop looking like the input token and start looking like the next
one: every layer's states decoded in the tied dictionary (tied_decoding.nearest_tokens, top-5), and three
continuous measures (cosine to the input and to the output embedding, and the projection on the
input→output axis, 0 at the input token and 1 at the output token, as the logit lens reads it:
σ of the output token's logit minus the input token's, lens.axis_preference). The switch layer is
where the target-match curve overtakes the input-match curve (linearly interpolated between
layers), and where the projection first reaches 0.5 (the lens prefers the output token); both
with a bootstrap CI over sequences.

§IV — residual attenuation x_{l+1} = α_l·x_l + F_l(x_l), F_l the block's whole residual update,
as a module attached to any model's blocks (TinyDecoder or HF) by forward hooks:
`ResidualGate`, fixed ("cut": α at one layer, 1 elsewhere; "all": α at every layer) or learned
("learned": α_l = 1 − (1 − α)·π_l, π = softmax of L logits, zero — uniform — at init, trained
with the model; a one-hot π is the fixed cut at that layer, so the two are on one scale).
α = 1 everywhere is the unmodified model. Choices the source leaves open, stated: the cut's α
is 0.5 (the source restricts α > 0 without giving its value), and the gate mixes the
per-layer attenuation linearly in π (mixture-of-depths style, no one-hot sampling).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from repro.core import activations, checkpoints, lens, scoring, tied_decoding, train
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.ground.runtime import ReproError, derive_seed, generator

GATE_MODES = ("none", "cut", "all", "learned")


# --------------------------------------------------------------------------- §III alignment profiles


@dataclass
class AlignmentProfile:
    """Per sequence s and layer l = 0 … L (0: the embeddings, L: the last block's output,
    before the final norm): (S, L+1) means over the sequence's tokens (position 0 excluded).

    `projection`: Fig 3's input→output projection as the logit lens reads it
    (`lens.axis_preference`: σ(z_out − z_in), 0 = decodes as the input token, 1 = as the output
    token); `unit_projection`: the same axis with every vector scaled to unit length
    (`tied_decoding.axis_projection`, ≈ 0.5 + (cos_out − cos_in)/2 for unrelated tokens), kept for
    comparison: its output end needs cos(h, e_out) = 1, which no real model's layer reaches."""

    input_match: torch.Tensor
    target_match: torch.Tensor
    cos_in: torch.Tensor
    cos_out: torch.Tensor
    projection: torch.Tensor
    n_tokens: int
    k: int

    unit_projection: torch.Tensor

    MEASURES = ("input_match", "target_match", "cos_in", "cos_out", "projection", "unit_projection")

    @property
    def n_layers(self) -> int:
        return self.input_match.shape[1] - 1

    def mean(self, name: str, rows: torch.Tensor | None = None) -> np.ndarray:
        x = getattr(self, name)
        if rows is not None:
            x = x[rows]
        return torch.nanmean(x, dim=0).numpy()


@torch.no_grad()
def alignment_profile(
    model: nn.Module,
    ids: torch.Tensor,
    *,
    k: int = 5,
    skip_first: int = 1,
    space: str = "lens",
    compute_dtype: torch.dtype | None = None,
    top_k: bool = True,
) -> AlignmentProfile:
    """000 §III over sequences ids (S, T+1): states at positions 0 … T−1 are compared with their
    input token ids[:, :T] and their target ids[:, 1:]. The first `skip_first` positions (the
    <bos> / attention-sink token) are left out.

    space "lens" (default): every layer's state goes through the model's final norm first, as
    the logit lens reads it, and decodes by dot product with the tied dictionary (= the logit
    lens's top-k); "raw": the pre-norm state, decoded by cosine. On the embedded models the raw
    stream is dominated by a few massive dimensions and decodes to nothing after layer 1
    (measured, NOTES), so the lens space is what the source's "logit lens methodology" means.
    `top_k=False` skips the (tokens × V) decoding (the match curves are NaN): the continuous
    measures of Fig 3 need no vocabulary-sized matmul."""
    if space not in ("lens", "raw"):
        raise ReproError(f"space must be 'lens' or 'raw', got {space!r}")
    D = tied_decoding.tied_dictionary(model)
    fnorm = lens.final_norm(model) if space == "lens" else (lambda t: t)
    metric = "dot" if space == "lens" else "cosine"
    resid = activations.capture(model, ids[:, :-1], modules=[], logits_to_keep=1).residual  # (S, L+1, T, d)
    S, L1, T, d = resid.shape
    inp, tgt = ids[:, skip_first:-1], ids[:, 1 + skip_first :]
    flat_in, flat_out = inp.reshape(-1), tgt.reshape(-1)
    e_in, e_out = D[flat_in], D[flat_out]
    out = {m: torch.full((S, L1), math.nan) for m in AlignmentProfile.MEASURES}
    for layer in range(L1):
        h = fnorm(resid[:, layer, skip_first:].reshape(-1, d))
        per = {
            "cos_in": tied_decoding.cosine_to(h, D, flat_in),
            "cos_out": tied_decoding.cosine_to(h, D, flat_out),
            "projection": tied_decoding.axis_preference(model, h, flat_in, flat_out, normed=space == "lens"),
            "unit_projection": tied_decoding.axis_projection(h, e_in, e_out),
        }
        if top_k:
            top = tied_decoding.nearest_tokens(h, D, k, metric=metric, compute_dtype=compute_dtype)
            per.update(
                input_match=tied_decoding.top_k_match(top, flat_in).float(),
                target_match=tied_decoding.top_k_match(top, flat_out).float(),
            )
        for m, v in per.items():
            out[m][:, layer] = torch.nanmean(v.view(S, -1).cpu(), dim=1)
    return AlignmentProfile(**out, n_tokens=int(inp.numel()), k=k)


def crossing(a: np.ndarray, b: np.ndarray) -> float:
    """First (fractional) layer where curve b reaches curve a from below, linearly interpolated
    between layers; NaN when it never does. b ≥ a at layer 0 counts only after b < a once."""
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    below = np.nonzero(diff < 0)[0]
    if below.size == 0:
        return float("nan")
    for l in range(int(below[0]), len(diff) - 1):
        if diff[l] < 0 <= diff[l + 1]:
            return l + float(-diff[l] / (diff[l + 1] - diff[l]))
    return float("nan")


def level_crossing(curve: np.ndarray, level: float = 0.5) -> float:
    """First fractional layer where `curve` reaches `level` from below."""
    c = np.asarray(curve, dtype=float)
    return crossing(np.full_like(c, level), c)


def switch_layers(p: AlignmentProfile, rows: torch.Tensor | None = None) -> dict[str, float]:
    """The switch layer by the top-k curves (target overtakes input) and by the projection's 0.5."""
    return {
        "match": crossing(p.mean("input_match", rows), p.mean("target_match", rows)),
        "projection": level_crossing(p.mean("projection", rows), 0.5),
        "cosine": crossing(p.mean("cos_in", rows), p.mean("cos_out", rows)),
    }


def bootstrap_switch(p: AlignmentProfile, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, tuple]:
    """Percentile bootstrap over sequences of each switch estimate: name → (lo, hi, share of
    resamples where a switch exists)."""
    g = generator(seed)
    S = p.input_match.shape[0]
    draws: dict[str, list[float]] = {}
    for _ in range(n_boot):
        rows = torch.randint(0, S, (S,), generator=g)
        for name, v in switch_layers(p, rows).items():
            draws.setdefault(name, []).append(v)
    out = {}
    for name, v in draws.items():
        a = np.asarray(v)
        ok = a[~np.isnan(a)]
        lo, hi = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2]) if ok.size else (math.nan, math.nan)
        out[name] = (float(lo), float(hi), float(ok.size / a.size))
    return out


@torch.no_grad()
def decoded_panel(model: nn.Module, ids: torch.Tensor, tokenizer, start: int, width: int = 7) -> list[list[str]]:
    """000 Table I: top-1 tied-dictionary decoding of positions start … start+width−1 of one
    sequence (1-D ids) at every layer, consecutive layers with the same decodings grouped.
    Rows: ["layers", tok, tok, …]; the first row is the input."""
    D = tied_decoding.tied_dictionary(model)
    resid = activations.capture(model, ids[None], modules=[], logits_to_keep=1).residual[0]  # (L+1, T, d)
    fnorm = lens.final_norm(model)
    pos = slice(start, start + width)
    dec = [
        [tokenizer.decode([int(t)]) for t in tied_decoding.nearest_tokens(fnorm(resid[l, pos]), D, 1)[:, 0]]
        for l in range(resid.shape[0])
    ]
    rows = [["input", *[tokenizer.decode([int(t)]) for t in ids[pos]]]]
    first = 0
    for l in range(1, len(dec) + 1):
        if l == len(dec) or dec[l] != dec[first]:
            rows.append([f"{first}" if l - 1 == first else f"{first}–{l - 1}", *dec[first]])
            first = l
    return rows


# --------------------------------------------------------------------------- §IV residual attenuation


class ResidualGate(nn.Module):
    """x_{l+1} = α_l·x_l + F_l(x_l) on every block of a model (see the module docstring).

    Attach with `attach(model)`: the gate becomes the model's `residual_gate` sub-module (so its
    logits train and checkpoint with the model) and forward hooks rewrite each block's output
    y = x + F(x) into y − (1 − α_l)·x."""

    def __init__(self, n_layers: int, mode: str = "none", *, layer: int | None = None, alpha: float = 0.5):
        super().__init__()
        if mode not in GATE_MODES:
            raise ReproError(f"residual gate mode {mode!r}: choose one of {', '.join(GATE_MODES)}")
        if mode == "cut" and (layer is None or not 0 <= layer < n_layers):
            raise ReproError(f"a fixed cut needs a layer in 0 … {n_layers - 1}, got {layer}")
        if not 0.0 <= alpha <= 1.0:
            raise ReproError(f"residual attenuation α must lie in [0, 1], got {alpha}")
        self.n_layers, self.mode, self.layer, self.alpha = n_layers, mode, layer, float(alpha)
        if mode == "learned":
            self.logits = nn.Parameter(torch.zeros(n_layers))
        self._handles: list = []

    def describe(self) -> dict:
        return {"mode": self.mode, "layer": self.layer, "alpha": self.alpha, "n_layers": self.n_layers}

    def distribution(self) -> torch.Tensor:
        """π over layers (learned gates; detached, for reading); for fixed modes, where the
        attenuation sits."""
        if self.mode == "learned":
            return torch.softmax(self.logits.detach(), 0)
        pi = torch.zeros(self.n_layers)
        if self.mode == "cut":
            pi[self.layer] = 1.0
        elif self.mode == "all":
            pi[:] = 1.0 / self.n_layers
        return pi

    def alphas(self) -> torch.Tensor:
        """(L,) α_l."""
        if self.mode == "learned":
            return 1.0 - (1.0 - self.alpha) * torch.softmax(self.logits, 0)
        a = torch.ones(self.n_layers)
        if self.mode == "cut":
            a[self.layer] = self.alpha
        elif self.mode == "all":
            a[:] = self.alpha
        return a

    def attach(self, model: nn.Module) -> nn.Module:
        blocks = lens.arch_map(model).blocks(model)
        if len(blocks) != self.n_layers:
            raise ReproError(f"gate for {self.n_layers} layers attached to a model with {len(blocks)}")
        cfg = getattr(model, "config", None)
        if (
            getattr(cfg, "norm_position", "pre") != "pre"
            or getattr(cfg, "residual_alpha", 1.0) != 1.0
            or not getattr(cfg, "residual", True)
        ):
            raise ReproError(
                "ResidualGate rewrites y = x + F(x) into α·x + F(x): it needs pre-norm blocks with a plain "
                "residual (TinyConfig norm_position='pre', residual_alpha=1, residual=True)"
            )
        old = getattr(model, "residual_gate", None)
        if isinstance(old, ResidualGate):
            old.detach_hooks()  # one gate per model: the new one replaces it
        model.add_module("residual_gate", self)
        self.detach_hooks()
        if self.mode == "none":
            return model
        for i, block in enumerate(blocks):
            self._handles.append(block.register_forward_hook(self._hook(i), with_kwargs=True))
        return model

    def detach_hooks(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def _hook(self, i: int):
        def hook(_mod, args, kwargs, output):
            x = args[0] if args else kwargs["hidden_states"]
            y = output if isinstance(output, torch.Tensor) else output[0]
            a = self.alphas().to(device=y.device, dtype=y.dtype)[i]
            y = y - (1 - a) * x
            return y if isinstance(output, torch.Tensor) else (y, *output[1:])

        return hook


# --------------------------------------------------------------------------- evaluation (Table II)


@torch.no_grad()
def loss_and_accuracy(model: nn.Module, windows: torch.Tensor, batch: int = 32) -> tuple[float, float]:
    """Mean next-token NLL (nats) and top-1 accuracy over windows (n, T+1)."""
    total, correct, count = 0.0, 0, 0
    for logits, tgt in scoring.window_logits(
        lambda x: model(x).logits, windows, batch, next(model.parameters()).device
    ):
        total += float(scoring.token_nll(logits, tgt).sum())
        correct += int((logits.argmax(-1) == tgt).sum())
        count += tgt.numel()
    return total / count, correct / count


def last_word_items(
    tokenizer, texts: Sequence[str], *, min_words: int = 8, max_items: int = 500, max_tokens: int = 64
) -> list[tuple[list[int], list[int]]]:
    """LAMBADA-style items from sentences (000 Table II's LAMBADA column, on Brown): the context
    is a sentence without its last word, the target the last word's tokens (with its leading
    space). Sentences are split at '. ', kept with ≥ `min_words` alphabetic-ending words."""
    items: list[tuple[list[int], list[int]]] = []
    for text in texts:
        for sent in text.split(". "):
            words = sent.strip().split()
            if len(words) < min_words or not words[-1].isalpha():
                continue
            ctx = tokenizer(" ".join(words[:-1]), add_special_tokens=False)["input_ids"]
            tgt = tokenizer(" " + words[-1], add_special_tokens=False)["input_ids"]
            if 0 < len(tgt) and len(ctx) + len(tgt) <= max_tokens and ctx:
                items.append((list(ctx), list(tgt)))
            if len(items) >= max_items:
                return items
    return items


@torch.no_grad()
def last_word_scores(model: nn.Module, items: Sequence[tuple[list[int], list[int]]]) -> tuple[float, float]:
    """(accuracy, NLL) on last-word items, one forward pass each. Accuracy: the share whose every
    target token is the model's top-1 prediction given the context and the target's earlier
    tokens (= greedy decoding reproduces the whole word). NLL: mean nats of the whole word (the
    sum over its tokens) — graded, so informative where small models' accuracy is 0."""
    if not items:
        raise ReproError("no last-word items to score")
    hits, total = 0, 0.0
    dev = next(model.parameters()).device
    for ctx, tgt in items:
        seq = torch.tensor([ctx + tgt], device=dev)
        logp = model(seq[:, :-1]).logits[0, len(ctx) - 1 :].float().log_softmax(-1)
        target = seq[0, len(ctx) :]
        hits += int(torch.equal(logp.argmax(-1), target))
        total -= float(logp.gather(1, target[:, None]).sum())
    return hits / len(items), total / len(items)


# --------------------------------------------------------------------------- §IV training (Fig 4, Fig 5, Table II)


@dataclass(frozen=True)
class Variant:
    """One residual-path variant: a ResidualGate setting."""

    name: str
    mode: str = "none"
    layer: int | None = None
    alpha: float = 0.5

    def gate(self, n_layers: int) -> ResidualGate:
        return ResidualGate(n_layers, self.mode, layer=self.layer, alpha=self.alpha)


def gpt2_style(**overrides) -> TinyConfig:
    """The source's GPT-2-style model (LayerNorm, GELU, learned positions, tied embeddings,
    biases) at a chosen size."""
    base = dict(norm="layernorm", activation="gelu", positions="learned", tie_embeddings=True, bias=True)
    return TinyConfig(**{**base, **overrides})


def build(tc: TinyConfig, variant: Variant, seed: int, device: torch.device | str = "cpu") -> TinyDecoder:
    """A TinyDecoder with the variant's gate attached, on `device`; the same seed gives the same
    initial weights for every variant (the gate adds no weights, or zero logits)."""
    model = TinyDecoder(tc, generator(derive_seed("causal-shift-init", seed)))
    return variant.gate(tc.n_layer).attach(model).to(device)  # the gate's logits go along


def job_model_config(tc: TinyConfig, variant: Variant) -> dict:
    """What the checkpoint key records of a variant's model: the TinyConfig and the gate."""
    from dataclasses import asdict

    return {"tiny": asdict(tc), "residual_gate": variant.gate(tc.n_layer).describe()}


def build_for_job(seed: int, *, tiny: dict, variant: dict) -> TinyDecoder:
    """`build` from JSON-able arguments: the model factory of a distributed training job
    (repro.core.launch), on the CPU (accelerate moves it)."""
    return build(TinyConfig(**tiny), Variant(**variant), seed)


def variant_job(
    tc: TinyConfig,
    cfg: train.TrainConfig,
    variant: Variant,
    seed: int,
    *,
    corpus: str = "brown",
    data_identity: dict | None = None,
    tokens: tuple[str, dict] | None = None,
) -> dict:
    """`train_variant`'s run as a JSON-able job for another process (repro.core.launch);
    `tokens`: the streams' factory when they are not the corpus's (`launch.job`)."""
    from dataclasses import asdict

    from repro.core import launch

    return launch.job(
        "repro.causal_shift.experiments:build_for_job",
        {"tiny": asdict(tc), "variant": asdict(variant)},
        cfg.replace(model_seed=seed),
        corpus=corpus,
        model_config=job_model_config(tc, variant),
        data_identity=data_identity,
        tokens=tokens,
    )


def train_variant(
    tc: TinyConfig,
    cfg: train.TrainConfig,
    variant: Variant,
    seed: int,
    *,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    data_identity: dict | None = None,
    progress: bool = False,
    device: torch.device | str = "cpu",
    procs: int = 1,
    corpus: str = "brown",
) -> train.TrainResult:
    """Train (or load from the checkpoint cache) one variant on `device`; the gate is part of
    the key. `procs` > 1: train it on that many processes with torchrun first (repro.core.launch;
    `corpus` names where train/val tokens come from), then load the checkpoint it wrote."""
    cfg = cfg.replace(model_seed=seed)
    model_config = job_model_config(tc, variant)
    if procs > 1:
        from repro.core import launch

        launch.train_jobs([variant_job(tc, cfg, variant, seed, corpus=corpus, data_identity=data_identity)], procs)
    return train.train(
        lambda s: build(tc, variant, s, device),
        cfg,
        train_tokens=train_tokens,
        val_tokens=val_tokens,
        model_config=model_config,
        data_identity=data_identity,
        progress=progress,
    )


def gate_history(result: train.TrainResult, tc: TinyConfig, variant: Variant) -> dict[int, np.ndarray]:
    """step → π over layers, from the run's snapshots (Fig 5)."""
    out = {}
    for step, path in sorted(result.snapshots.items()):
        model = checkpoints.load_snapshot(build(tc, variant, 0), path)
        out[step] = model.residual_gate.distribution().detach().numpy()
    return out
