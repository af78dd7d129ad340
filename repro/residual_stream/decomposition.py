"""The residual stream as a sum of terms, direct logit attribution, the FFN key–value rewrite.

Reproduces 002 "Residual Stream Decomposition", "Direct Logit Attribution" and "FFN as
Key-Value Memory" (Elhage et al. 2021; Geva et al. 2021) on HF GPT-2, Llama-family (SmolLM2)
and Gemma 3 models and on `repro.core.models.tiny.TinyDecoder`, with plain forward hooks
(`repro.core.activations.hooks`); the model is never modified.

Terms of the final residual x^(L) (before the final norm), at every position t:

- ``embed``: x^(0), the token embedding (+ GPT-2's learned position, + Gemma's √d scaling,
  which happens inside Gemma's embedding module) — one term, as 002 counts it;
- ``heads[l, h]``: W_O^(l,h) z^(l,h), the input of the output projection split by head and
  multiplied by that head's slice of W_O — L·H terms;
- ``attn_bias[l]``: the output projection's bias b_O (GPT-2) — L more terms where a model
  has one, stated separately because 002's count (1 + L·H + L) leaves biases out;
- ``ffn[l]``: what the FFN adds — L terms.

Gemma 3's sandwich norms put an RMSNorm *after* W_O (and after the FFN): we freeze that norm's
per-token scale at its value on the full attention output, which makes it linear, so each
head's term is gain ⊙ W_O^(l,h) z^(l,h) / rms(o) and the heads still sum exactly.

Direct logit attribution (002 "Direct Logit Attribution") freezes the *final* norm the same
way: with s_t its per-token scale and γ its gain, logit_v = Σ_terms s_t (γ ⊙ u_v)·C(term) +
u_v·β + b_v, where C is LayerNorm's centring (linear; the identity for RMSNorm), β the norm's
bias and b_v the LM head's bias; the last two are one constant term, stated. Gemma 2's logit
soft-cap, when a config has one, is not linear: the attribution is of the pre-cap logit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from repro.core import scoring
from repro.core.activations import hooks
from repro.core.arch import frozen_norm, out_proj_weight
from repro.core.lens import arch_map, final_norm, resolve
from repro.ground.runtime import ReproError

F32_U = 2.0**-24  # float32 unit roundoff

# --------------------------------------------------------------------------- counting


def _layers_heads(config: Any) -> tuple[int, int]:
    if hasattr(config, "get_text_config"):
        config = config.get_text_config()
    L = next((getattr(config, k) for k in ("num_hidden_layers", "n_layer") if hasattr(config, k)), None)
    H = next((getattr(config, k) for k in ("num_attention_heads", "n_head") if hasattr(config, k)), None)
    if L is None or H is None:
        raise ReproError(
            f"{type(config).__name__} names no layer or head count "
            "(num_hidden_layers/n_layer, num_attention_heads/n_head)"
        )
    return int(L), int(H)


def count_terms(config: Any) -> int:
    """002 Proposition "Residual Stream Decomposition": 1 + L·H + L terms (embedding, every
    head, every FFN), from a model config (HF or TinyConfig). 32×32 → 1057, 24×16 → 409."""
    L, H = _layers_heads(config)
    return 1 + L * H + L


def bias_terms(model: nn.Module) -> int:
    """Additive terms 002's count leaves out: one output-projection bias per layer, where the
    model's attention output projection has a bias (GPT-2: L; Llama, Gemma: 0)."""
    amap = arch_map(model)
    if amap.attn_out_proj is None:
        return 0
    return sum(getattr(resolve(b, amap.attn_out_proj), "bias", None) is not None for b in amap.blocks(model))


def example_config(n_layer: int, n_head: int) -> Any:
    """The config of one of 002's two counting examples: the 32-layer × 32-head model (a Llama
    config) and the exercise's 24 × 16 (a GPT-2 config)."""
    from transformers import GPT2Config, LlamaConfig

    if n_layer == 32:
        return LlamaConfig(num_hidden_layers=n_layer, num_attention_heads=n_head)
    return GPT2Config(n_layer=n_layer, n_head=n_head)


# --------------------------------------------------------------------------- decomposition


@dataclass
class Decomposition:
    """Terms of the final (pre-norm) residual; shapes for B sequences of T tokens, width d.

    embed (B, T, d); heads (B, L, H, T, d); attn_bias (B, L, T, d) or None when no layer has
    one; ffn (B, L, T, d); residual (B, T, d), the model's own x^(L) read by a hook.
    """

    embed: torch.Tensor
    heads: torch.Tensor
    attn_bias: torch.Tensor | None
    ffn: torch.Tensor
    residual: torch.Tensor
    output: Any = None  # the model's forward output (logits), for DLA checks

    @property
    def n_layers(self) -> int:
        return self.heads.shape[1]

    @property
    def n_heads(self) -> int:
        return self.heads.shape[2]

    def names(self) -> list[str]:
        """Term labels, in the order of `stack()`: embed, L0H0 … L0H(H-1), L0 b_O, L0 FFN, L1H0 …"""
        out = ["embed"]
        for l in range(self.n_layers):
            out += [f"L{l}H{h}" for h in range(self.n_heads)]
            if self.attn_bias is not None:
                out.append(f"L{l} b_O")
            out.append(f"L{l} FFN")
        return out

    def stack(self) -> torch.Tensor:
        """(B, n_terms, T, d): every term, in the order of `names()`."""
        parts = [self.embed.unsqueeze(1)]
        for l in range(self.n_layers):
            parts.append(self.heads[:, l])
            if self.attn_bias is not None:
                parts.append(self.attn_bias[:, l].unsqueeze(1))
            parts.append(self.ffn[:, l].unsqueeze(1))
        return torch.cat(parts, dim=1)

    def total(self) -> torch.Tensor:
        """(B, T, d): the sum of all terms, accumulated in float64."""
        return self.stack().double().sum(dim=1)


def _heads(z: torch.Tensor, w_o: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Per-head outputs: z (B, T, H·D) the output projection's input, w_o (d, H·D) → (B, H, T, d)."""
    B, T, HD = z.shape
    D = HD // n_heads
    return torch.einsum("bthk,dhk->bhtd", z.float().view(B, T, n_heads, D), w_o.float().view(-1, n_heads, D))


@torch.no_grad()
def decompose(model: nn.Module, input_ids: torch.Tensor, **forward_kwargs: Any) -> Decomposition:
    """Split the final residual of one forward pass into 002's terms (see the module docstring).

    Needs blocks whose attention has an output projection and sequential residuals (GPT-2,
    Llama family, Gemma 1–3, TinyDecoder with W_O); GPT-NeoX's parallel residual works too
    (its terms are the same). All terms are float32.
    """
    amap = arch_map(model)
    if amap.attn_out_proj is None or amap.mlp_resid is None:
        raise ReproError(
            f"{amap.family} blocks lack an attention output projection or an FFN; "
            "the 1 + L·H + L decomposition needs both"
        )
    if input_ids.dim() == 1:
        input_ids = input_ids.unsqueeze(0)
    H = _layers_heads(model.config)[1]
    sandwich = amap.attn_resid != amap.attn  # Gemma 2/3: a norm after W_O
    # the output projection's input (per-head split) and, under sandwich norms, its output
    modules = ["attn_heads", "mlp_out"] + ([amap.attn_out_proj] if sandwich else [])
    with hooks(model, residual=True, modules=modules) as cap:
        cap.output = model(input_ids=input_ids, **forward_kwargs)
    blocks = amap.blocks(model)
    heads, biases, any_bias = [], [], False
    for l, block in enumerate(blocks):
        w_o, b_o = out_proj_weight(resolve(block, amap.attn_out_proj))
        per_head = _heads(cap.modules["attn_heads"][l], w_o, H)  # (B, H, T, d)
        bias = torch.zeros_like(per_head[:, 0]) if b_o is None else b_o.float().expand_as(per_head[:, 0])
        any_bias |= b_o is not None
        if sandwich:  # freeze the post-attention norm's per-token scale on the full output o
            norm = frozen_norm(resolve(block, amap.attn_resid))
            o = cap.modules[amap.attn_out_proj][l].float()  # (B, T, d)
            s = norm.scale(o).unsqueeze(1)  # (B, 1, T, 1)
            per_head = norm.linear(per_head, s)
            bias = norm.linear(bias, s[:, 0]) if b_o is not None else bias
        heads.append(per_head)
        biases.append(bias)
    return Decomposition(
        embed=cap.residual[:, 0].float(),
        heads=torch.stack(heads, dim=1),
        attn_bias=torch.stack(biases, dim=1) if any_bias else None,
        ffn=torch.stack([t.float() for t in cap.modules["mlp_out"]], dim=1),
        residual=cap.residual[:, -1].float(),
        output=cap.output,
    )


def relative_error(total: torch.Tensor, residual: torch.Tensor) -> float:
    """How exactly the terms sum to x^(L): the max over positions of max-abs |total − x|
    relative to the position's max |x| (total (B, T, d), float64, e.g. `Decomposition.total()`)."""
    x = residual.double()
    return ((total - x).abs().amax(-1) / x.abs().amax(-1)).max().item()


def smallest_head(norms: torch.Tensor) -> tuple[int, int]:
    """(layer, head) of the smallest entry of a (L, H) table (e.g. per-head output norms)."""
    i = int(norms.flatten().argmin())
    return divmod(i, norms.shape[1])


@dataclass(frozen=True)
class SumCheck:
    """RS-1 on one model: how many terms its decomposition has against 1 + L·H + L plus its b_O
    terms (`bias`), how exactly they sum to x^(L) (`err`, `relative_error`) against the rounding
    bound `tol`, and the negative control: the same sum with one term left out, the head whose
    output is smallest (`head`: (layer, head), the hardest to miss), which must miss x^(L)."""

    n_terms: int
    expected: int
    bias: int
    err: float
    tol: float
    control: float
    head: tuple[int, int]


def sum_check(model: nn.Module, dec: Decomposition) -> SumCheck:
    """`SumCheck` of `model`'s decomposition `dec`. Tolerance per position, relative to the
    position's max |x|: n float32 additions of terms no larger than |x| (before cancellation) give
    ≤ n·u relative error in the worst case (Higham 2002 §3.1), with u = 2^-24; ×2: our float64 sum
    and the model's float32 sum both round."""
    n_terms = len(dec.names())
    bias = bias_terms(model)
    total = dec.total()
    l, h = smallest_head(dec.heads[0].norm(dim=-1).amax(-1))
    return SumCheck(
        n_terms,
        count_terms(model.config) + bias,
        bias,
        relative_error(total, dec.residual),
        n_terms * F32_U * 2,
        relative_error(total - dec.heads[:, l, h].double(), dec.residual),
        (l, h),
    )


# --------------------------------------------------------------------------- direct logit attribution


@dataclass
class Attribution:
    """Direct logit attribution of target tokens: per term (B, n_terms, T), plus the constant
    u_v·β + b_v (B, T) from the final norm's bias and the LM head's bias; their sum is the
    (pre-soft-cap) logit of the target."""

    per_term: torch.Tensor
    constant: torch.Tensor
    names: list[str]

    def total(self) -> torch.Tensor:
        return self.per_term.double().sum(dim=1) + self.constant.double()


@torch.no_grad()
def direct_logit_attribution(model: nn.Module, dec: Decomposition, targets: torch.Tensor) -> Attribution:
    """002 "Direct Logit Attribution": DLA_term(v) = s_t (γ ⊙ u_v) · C(term) for the token v =
    targets[b, t] at every position, with the final norm's per-token scale s_t frozen at its
    value on the actual residual and its gain γ folded into the unembedding u_v."""
    amap = arch_map(model)
    norm = frozen_norm(final_norm(model, amap))
    head = resolve(model, amap.lm_head)
    if targets.dim() == 1:
        targets = targets.unsqueeze(0)
    terms = dec.stack()  # (B, n, T, d)
    s = norm.scale(dec.residual).unsqueeze(1)  # (B, 1, T, 1)
    mapped = norm.linear(terms, s)  # (B, n, T, d)
    u = head.weight.detach().float()[targets]  # (B, T, d)
    per_term = torch.einsum("bntd,btd->bnt", mapped, u)
    constant = torch.zeros(targets.shape, dtype=torch.float32, device=u.device)
    if norm.bias is not None:
        constant = constant + u @ norm.bias
    if getattr(head, "bias", None) is not None:
        constant = constant + head.bias.detach().float()[targets]
    return Attribution(per_term, constant, dec.names())


@dataclass(frozen=True)
class DLACheck:
    """RS-2 on one model: the direct logit attribution of each next token (`att`) and the model's
    logits of those tokens (`logits`, (B, T) float64); how exactly the attributions sum to the
    logit (`err`: max |Σ DLA − logit| / max |logit|) against the rounding bound `tol`, and the
    negative control: the same sum with one head's attribution left out (`term`, the head whose
    attribution is smallest in magnitude over the positions), which must miss the logit."""

    att: Attribution
    logits: torch.Tensor
    err: float
    tol: float
    control: float
    term: int


def dla_check(model: nn.Module, ids: torch.Tensor, dec: Decomposition) -> DLACheck:
    """`DLACheck` of `model` on `ids` (1, T + 1) decomposed over ids[:, :-1] (`dec`). The bound
    is RS-1's: 2·n·u, worst-case float32 accumulation over the n terms (+ the constant)."""
    import re

    att = direct_logit_attribution(model, dec, ids[:, 1:])
    logits = dec.output.logits.double().gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    total = att.total()
    scale = logits.abs().max()
    err = ((total - logits).abs().max() / scale).item()
    n = len(att.names) + 1
    heads = [i for i, t in enumerate(att.names) if re.fullmatch(r"L\d+H\d+", t)]
    k = heads[int(att.per_term[0, heads].abs().amax(-1).argmin())]
    ctl = ((total - att.per_term[:, k].double() - logits).abs().max() / scale).item()
    return DLACheck(att, logits, err, 2 * n * F32_U, ctl, k)


# --------------------------------------------------------------------------- FFN as key–value memory


@dataclass
class KeyValue:
    """FFN(x) = Σ_i coeff_i(x)·value_i + bias (002 "FFN as Key-Value Memory", Geva et al. 2021).

    coeffs (…, F): φ(k_i·x + b_i) (GELU/ReLU MLP) or φ(g_i·x)·(u_i·x) (gated: SwiGLU, GeGLU);
    values (F, d): the rows value_i = column i of W_2 (the down projection); bias (d,) or None.
    """

    coeffs: torch.Tensor
    values: torch.Tensor
    bias: torch.Tensor | None

    def output(self) -> torch.Tensor:
        """Σ_i coeff_i · value_i (+ bias), accumulated in float64."""
        y = self.coeffs.double() @ self.values.double()
        return y + self.bias.double() if self.bias is not None else y


def _act(mlp: nn.Module) -> Any:
    for name in ("act_fn", "act"):
        if hasattr(mlp, name):
            return getattr(mlp, name)
    raise ReproError(f"{type(mlp).__name__} has no activation (act_fn / act)")


@torch.no_grad()
def ffn_key_value(mlp: nn.Module, x: torch.Tensor) -> KeyValue:
    """The key–value rewrite of an FFN module at inputs x (…, d) — the FFN's *input* (after its
    norm). Supports GPT-2 (c_fc/c_proj), gated Llama/Gemma MLPs (gate/up/down_proj) and
    TinyDecoder's MLP (up/down_proj, optionally gated)."""
    act = _act(mlp)
    x = x.float()
    if hasattr(mlp, "c_fc"):  # GPT-2: keys are W_1's columns (Conv1D stores W_1 as (d, F))
        w1, b1 = out_proj_weight(mlp.c_fc)
        pre = torch.nn.functional.linear(x, w1.float(), None if b1 is None else b1.float())
        w2, b2 = out_proj_weight(mlp.c_proj)
        return KeyValue(act(pre), w2.float().t(), None if b2 is None else b2.float())
    if hasattr(mlp, "up_proj") and hasattr(mlp, "down_proj"):
        up = mlp.up_proj(x)
        coeffs = act(mlp.gate_proj(x)) * up if hasattr(mlp, "gate_proj") else act(up)
        w2, b2 = out_proj_weight(mlp.down_proj)
        return KeyValue(coeffs.float(), w2.float().t(), None if b2 is None else b2.float())
    raise ReproError(f"no key-value rewrite for {type(mlp).__name__}: expected c_fc/c_proj or up/down_proj")


# --------------------------------------------------------------------------- gradient flow, norms


@dataclass(frozen=True)
class GradientFlow:
    """Gradients reaching the first layer, relative to the last (002 "Pre-Norm Gradient Flow").

    ratio: ‖∂L/∂x^(1)‖ / ‖∂L/∂x^(L−1)‖, x^(l) the residual stream after block l (x^(1) is the
    source's "first layer"; x^(L−1) is the input of the last block); param_ratio: the norm of
    block 1's weight-matrix gradients over block L's (Xiong et al. 2020, Fig 3); per_layer:
    ‖∂L/∂x^(l)‖ / ‖∂L/∂x^(L−1)‖ for l = 0 … L; identity_share: ⟨∂L/∂x^(1), ∂L/∂x^(L)⟩ /
    ‖∂L/∂x^(L)‖², the coefficient with which the direct path ∂L/∂x^(L) enters ∂L/∂x^(1) (the
    source's Proposition: exactly 1 in pre-norm, plus terms from the blocks, which project on it
    only by chance; no such path in post-norm, where every LayerNorm Jacobian sits on it)."""

    ratio: float
    param_ratio: float
    per_layer: tuple[float, ...]
    identity_share: float = float("nan")


def gradient_flow(
    model: nn.Module, input_ids: torch.Tensor, *, embed_scale: float = 1.0, max_batch_bytes: int = 2**33
) -> GradientFlow:
    """One forward/backward of the next-token loss on `input_ids` (B, T+1) through a
    TinyDecoder (pre- or post-norm); the model's gradients are cleared afterwards.
    `embed_scale`: the token embeddings are read ×embed_scale (Vaswani et al. 2017 read them ×√d;
    see `xavier_init_`). Sequences go through in micro-batches whose saved activations stay under
    about `max_batch_bytes` (the paper's 96-layer stacks on 16 × 256 tokens did not fit an 80 GB
    H100 in one pass): each micro-batch's loss is its share of the batch mean, so the
    weight gradients accumulate to the whole batch's and the squared state-gradient norms and
    inner products add up over sequences — the same numbers as one pass."""
    from repro.core.models.tiny import TinyDecoder

    if not isinstance(model, TinyDecoder):
        raise ReproError("gradient_flow needs a repro.core.models.tiny.TinyDecoder (pre- or post-norm)")
    L = model.config.n_layer
    if L < 2:
        raise ReproError("gradient_flow compares the first and last layers: n_layer must be >= 2")
    B, S = input_ids.shape[0], input_ids.shape[1] - 1
    cfg = model.config
    per_seq = 4 * L * S * (16 * cfg.d_model + 2 * cfg.n_head * S)  # rough: activations and attention saved
    step = max(1, min(B, max_batch_bytes // per_seq))
    model.zero_grad(set_to_none=True)
    sq = torch.zeros(L + 1, dtype=torch.float64)
    dot = gLgL = 0.0
    for start in range(0, B, step):
        ids = input_ids[start : start + step]
        if embed_scale == 1.0:
            out = model(ids[:, :-1], output_hidden_states=True)
        else:
            out = model(inputs_embeds=model.wte(ids[:, :-1]) * embed_scale, output_hidden_states=True)
        states = out.hidden_states  # L+1 × (b, T, d)
        for h in states:
            h.retain_grad()
        (scoring.token_nll(out.logits, ids[:, 1:]).sum() / (B * S)).backward()
        sq += torch.stack([h.grad.double().pow(2).sum() for h in states]).cpu()
        g1, gL = states[1].grad.double(), states[L].grad.double()
        dot, gLgL = dot + float((g1 * gL).sum()), gLgL + float((gL * gL).sum())
        del out, states, g1, gL
    g = sq.sqrt().tolist()

    def wgrad(block: nn.Module) -> float:
        return float(sum(p.grad.pow(2).sum() for p in block.parameters() if p.dim() > 1 and p.grad is not None).sqrt())

    first, last = wgrad(model.blocks[0]), wgrad(model.blocks[-1])
    model.zero_grad(set_to_none=True)
    return GradientFlow(g[1] / g[L - 1], first / last, tuple(x / g[L - 1] for x in g), dot / gLgL)


@torch.no_grad()
def xavier_init_(model: nn.Module, generator: torch.Generator) -> nn.Module:
    """Re-initialise a TinyDecoder in place with the init the post-norm argument assumes (the
    original Transformer, Vaswani et al. 2017, analysed by Xiong et al. 2020 §3): every weight
    matrix Xavier/Glorot normal, N(0, 2/(fan_in + fan_out)), with no 1/√(2L) damping of the
    residual projections (unlike 001 App B.1); biases 0; norms 1 / 0; the token embedding
    N(0, 1/d), which the original Transformer reads ×√d (pass `embed_scale=√d` to
    `gradient_flow`) — a tied LM head then gives unit-scale logits. Draws from `generator` in
    module order; returns the model."""
    d = model.config.d_model
    emb = model.get_input_embeddings()
    head = model.get_output_embeddings()
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            module.weight.normal_(0.0, d**-0.5, generator=generator)
        elif isinstance(module, nn.Linear):
            if module is head and emb is not None and head.weight is emb.weight:
                continue  # tied: the embedding's init
            fan_out, fan_in = module.weight.shape
            module.weight.normal_(0.0, (2.0 / (fan_in + fan_out)) ** 0.5, generator=generator)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, (nn.LayerNorm, nn.RMSNorm)):
            if module.weight is not None:
                module.weight.fill_(1.0)
            if getattr(module, "bias", None) is not None:
                module.bias.zero_()
    return model


# --------------------------------------------------------------------------- lens control


@torch.no_grad()
def mean_distribution_kl(
    model: nn.Module, train_final: torch.Tensor, test_final: torch.Tensor, chunk: int = 256
) -> torch.Tensor:
    """KL(p_t ‖ p̄) per held-out token (N,), float32 nats: p_t the model's next-token distribution
    at test_final[t] (N, d, pre-norm final states), p̄ its distribution averaged over the
    training tokens' final states train_final (M, d). A "lens" that reads nothing from the
    layer it is given: the negative control of "the tuned lens decodes intermediate layers"."""
    from repro.core.lens import kl_to_logits, unembed

    total = None
    for start in range(0, train_final.shape[0], chunk):
        p = unembed(model, train_final[start : start + chunk].float()).float().softmax(-1).double().sum(0)
        total = p if total is None else total + p
    log_mean = (total / train_final.shape[0]).clamp_min(1e-300).log().float()
    out = []
    for start in range(0, test_final.shape[0], chunk):
        log_p = unembed(model, test_final[start : start + chunk].float()).float().log_softmax(-1)
        out.append(kl_to_logits(log_p, log_mean.expand_as(log_p)))
    return torch.cat(out)


def residual_norms(residual: torch.Tensor, skip_first: int = 1) -> torch.Tensor:
    """Median ‖x^(l)‖ over tokens for each layer: residual (B, L+1, T, d) → (L+1,). The first
    `skip_first` positions are left out (BOS / attention-sink tokens carry massive activations,
    NOTES "Embedded pretrained models"; the median is robust to the rest)."""
    norms = residual[:, :, skip_first:].float().norm(dim=-1)  # (B, L+1, T')
    return norms.transpose(0, 1).flatten(1).median(dim=1).values
