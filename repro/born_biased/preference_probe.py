"""Random-input probing of any causal LM — the hot loop of 001 §3–5 (and of SeedPrint).

One forward pass per batch under `torch.no_grad()`, read through `repro.core.activations.hooks` at a few
positions only (its `positions`), keeping what the experiments read:

- the last-token residual state entering block 0 and leaving every block (pre-final-norm),
  when ``keep_states=True`` (inter-sequence contraction, 001 §4 Fig 2 / Fig 7);
- the final-normed state at those positions (the LM head's input: contraction direction,
  001 Finding 2.2), and the argmax of the last block's output over hidden dimensions
  (001 Fig 10);
- logits at those positions only (argmax next token, 001 §3), computed from the hooked
  final-normed state, never over all T positions (the LM head is the largest matmul of a
  probe when V ≈ 50k).

Prefix trick: in a causal model the prediction at position t−1 of a sequence depends only on
its first t tokens, so one pass over random sequences of length T_max answers every probe
length T ≤ T_max at once (``lengths``): the length-T probe *is* the length-T prefix. This
holds for RoPE and for learned absolute positions; the lengths share their prefixes, so their
statistics are paired, not independent.

Works on transformers models known to `repro.core.lens.arch_map` and on `repro.core.models.tiny`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn

from repro.core import activations, arch, lens
from repro.ground.runtime import ReproError

LOGIT_CHUNK = 1024  # sequences per float32 LM-head matmul (V = 50k: 200 MB of logits per length)


@dataclass
class ProbeResult:
    """What a probe kept, indexed by probe length (first axis ``len(lengths)``)."""

    lengths: tuple[int, ...]
    n_seq: int
    next_token: torch.Tensor | None  # (n_len, N) argmax next-token id; None without an LM head
    top_dim: torch.Tensor  # (n_len, N) argmax over d of the last block's output
    final_normed: torch.Tensor  # (n_len, N, d) the LM head's input at the last position
    states: torch.Tensor | None  # (n_len, L+1, N, d): block-0 input, then each block's output
    vocab_size: int | None
    info: dict = field(default_factory=dict)  # provenance: model class, sizes, dtype
    dim_std: torch.Tensor | None = None  # (n_len, d) std over sequences of the last block's output

    def index(self, length: int) -> int:
        try:
            return self.lengths.index(int(length))
        except ValueError:
            raise ReproError(f"probe length {length} was not read out; lengths are {self.lengths}") from None


@torch.no_grad()
def probe(
    model: nn.Module,
    inputs: torch.Tensor,
    *,
    lengths: Sequence[int] | None = None,
    keep_states: bool = False,
    batch_size: int = 64,
    tie_seed: int = 0,
) -> ProbeResult:
    """Run `model` on random `inputs` and read the last-token quantities at every probe length.

    `inputs`: (N, T) token ids or (N, T, d) embeddings (fed as ``inputs_embeds``, e.g. the
    Gaussian inputs of 001 §4.1). `lengths`: probe lengths ≤ T (default: T only).
    Inputs are cast to the model's dtype; what is kept is float32 on the CPU.
    """
    if inputs.dim() not in (2, 3):
        raise ReproError(f"probe inputs must be (N, T) token ids or (N, T, d) embeddings, got {tuple(inputs.shape)}")
    N, T = inputs.shape[:2]
    lengths = tuple(sorted({int(t) for t in ((T,) if lengths is None else lengths)}))
    if not lengths or lengths[0] < 1 or lengths[-1] > T:
        raise ReproError(f"probe lengths must lie in [1, {T}], got {lengths}")
    if batch_size < 1:
        raise ReproError(f"batch_size must be >= 1, got {batch_size}")
    amap = lens.arch_map(model)
    blocks = amap.blocks(model)
    try:
        head = lens.resolve(model, amap.lm_head)
    except ReproError:
        head = None
    has_head = isinstance(head, nn.Module)
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    pos = torch.tensor([t - 1 for t in lengths], device=device)

    # the residual stream (every block's input, the last block's output) and the final norm's
    # output at the probe positions only, copied to the CPU batch by batch
    with activations.hooks(model, residual=True, modules=[], final_norm=True, positions=pos, device="cpu") as cap:
        for start in range(0, N, batch_size):
            x = inputs[start : start + batch_size].to(device)
            if x.is_floating_point():
                x = x.to(dtype)
            kw = {"inputs_embeds": x} if x.dim() == 3 else {"input_ids": x}
            model(**kw, logits_to_keep=1)  # the head's own logits: one position, discarded
    if cap.residual is None or cap.final_normed is None:
        raise ReproError(f"probe: hooks on {type(model).__name__} did not fire; is its ArchMap right?")
    final_normed = cap.final_normed.float().transpose(0, 1).contiguous()  # (n_len, N, d)
    last = cap.residual[:, -1].float().transpose(0, 1)  # (n_len, N, d)
    next_token = None
    vocab = None
    if has_head:
        # logits at the probe positions only, in float32 whatever the model's dtype (a bfloat16
        # logit would tie the top tokens), in chunks of sequences
        chunks = []
        for start in range(0, N, LOGIT_CHUNK):
            h = final_normed[:, start : start + LOGIT_CHUNK].to(device)
            logits = lens.unembed(model, h, normed=True, amap=amap, compute_dtype=torch.float32)
            chunks.append(logits.argmax(-1).cpu())
        next_token = torch.cat(chunks, dim=1)
        vocab = int(arch.unembedding(model, amap).shape[0])
    states = None
    if keep_states:
        states = cap.residual.float().permute(2, 1, 0, 3).contiguous()  # (N, L+1, n_len, d) -> (n_len, L+1, N, d)
    info = dict(
        model=type(model).__name__,
        n_seq=N,
        T=T,
        lengths=list(lengths),
        n_layer=len(blocks),
        inputs="embeddings" if inputs.dim() == 3 else "token ids",
        dtype=str(next(model.parameters()).dtype),
    )
    return ProbeResult(
        lengths,
        N,
        next_token,
        argmax_random_ties(last, tie_seed),
        final_normed,
        states,
        vocab,
        info,
        dim_std=last.double().std(dim=1).float() if N > 1 else None,
    )


def argmax_random_ties(x: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """argmax over the last axis with exact ties broken uniformly at random (seeded), not toward
    the lowest index: a bfloat16 state has ~3 significant digits, so its top two hidden
    dimensions tie now and then, and `torch.argmax` would credit the lower index every time."""
    top = x.amax(-1, keepdim=True)
    u = torch.rand(x.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float32)
    return torch.where(x == top, u, -1.0).argmax(-1)


# --------------------------------------------------------------------------- the head's own null (no contraction)
#
# What would a model with these embeddings and LM head predict if its blocks put *no* shared
# direction into the final state? Each sequence's final-normed state would then be an independent
# isotropic vector, and token v would win the argmax with a probability set by the head alone
# (001 App B.2's uniform null ignores that: tokens whose head rows are longer win more often).


def _zero_norm_bias(norm: nn.Module) -> None:
    bias = getattr(norm, "bias", None)
    if isinstance(bias, torch.Tensor) and bool(bias.detach().abs().max() > 0):
        raise ReproError("head_logit_scales assumes a zero final-norm bias (001 App B.1's init); this model has one")


def head_logit_scales(model: nn.Module) -> np.ndarray:
    """Per-token standard deviation of the logit when the state entering the final norm is
    isotropic Gaussian: ‖P(γ ⊙ w_v)‖ for head rows w_v and norm weight γ, where P removes the mean
    over channels for a LayerNorm (its output is centred) and is the identity for an RMSNorm (or
    no norm). Up to a common factor, which an argmax ignores. float64, shape (V,)."""
    amap = lens.arch_map(model)
    norm = lens.final_norm(model, amap)
    _zero_norm_bias(norm)
    head = lens.resolve(model, amap.lm_head)
    head_bias = getattr(head, "bias", None)
    if isinstance(head_bias, torch.Tensor) and bool(head_bias.detach().abs().max() > 0):
        raise ReproError("head_logit_scales assumes an LM head without bias")
    W = arch.unembedding(model, amap).detach().double().cpu()
    gamma = getattr(norm, "weight", None)
    if isinstance(gamma, torch.Tensor):
        W = W * gamma.detach().double().cpu()
    if "layernorm" in type(norm).__name__.lower():
        W = W - W.mean(dim=1, keepdim=True)
    return W.norm(dim=1).numpy()


@torch.no_grad()
def isotropic_next_tokens(model: nn.Module, n: int, seed: int, batch_size: int = 256) -> np.ndarray:
    """Argmax next token of `n` isotropic Gaussian states put through the model's own final norm
    and LM head (logits in float32, as `probe` does): what these embeddings and head predict when
    the blocks contract nothing. One draw of the null of `head_logit_scales`."""
    amap = lens.arch_map(model)
    norm = lens.final_norm(model, amap)
    p = next(model.parameters())
    gen = torch.Generator().manual_seed(int(seed))
    d = arch.unembedding(model, amap).shape[1]
    out = []
    for start in range(0, n, batch_size):
        z = torch.randn(min(batch_size, n - start), d, generator=gen)
        h = norm(z.to(device=p.device, dtype=p.dtype)).float()
        out.append(lens.unembed(model, h, normed=True, amap=amap, compute_dtype=torch.float32).argmax(-1).cpu())
    return torch.cat(out).numpy()


# --------------------------------------------------------------------------- statistics of a probe


def contraction_token(model: nn.Module, final_normed: torch.Tensor) -> int:
    """001 Finding 2.2: the contraction direction (the mean over sequences of the final-normed
    last-token state, (N, d) → (d,)) projected through W_U; returns the argmax token."""
    direction = final_normed.double().mean(0).float()
    device = arch.unembedding(model).device
    with torch.no_grad():
        return int(lens.unembed(model, direction.to(device), normed=True, compute_dtype=torch.float32).argmax())


def uniform_rank_counts(
    n: int, vocab_size: int, generator: torch.Generator, draws: int = 20, ranks: int = 50
) -> np.ndarray:
    """001 Fig 1a's red line: the sorted counts of the `ranks` most frequent tokens when n tokens
    are drawn uniformly from the vocabulary, averaged over `draws` independent draws."""
    out = np.zeros(ranks)
    for _ in range(draws):
        ids = torch.randint(0, vocab_size, (n,), generator=generator)
        c = np.sort(np.bincount(ids.numpy(), minlength=vocab_size))[::-1][:ranks]
        out[: len(c)] += c
    return out / draws


def rank_counts(ids: torch.Tensor | np.ndarray, size: int, ranks: int = 50) -> np.ndarray:
    """Counts of the `ranks` most frequent values of `ids` (in [0, size)), descending."""
    ids = np.asarray(ids).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= size):
        raise ReproError(f"rank_counts: ids must lie in [0, {size}); got [{ids.min()}, {ids.max()}]")
    c = np.sort(np.bincount(ids, minlength=size))[::-1][:ranks]
    return np.pad(c, (0, max(0, ranks - len(c)))).astype(float)
