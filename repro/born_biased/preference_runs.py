"""001 §3's random-token preference runs (Table 1, Figs 1a, 2, 10; App B.1–B.2) and Finding 2.2's
direction agreement over many random models: random-init HF models (App B.1 init, the embedding
and LM head fixed across seeds, footnote 2) probed with one fixed set of uniform random token
sequences by `preference_probe`, every probe length read from one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from repro.born_biased import preference_probe as probe
from repro.born_biased.head_null import gaussian_argmax_rates, null_top_log10_p
from repro.born_biased.init_bias import mean_pairwise_cosine
from repro.core import memo
from repro.core.data import random_tokens
from repro.core.models.hf import build_model
from repro.core.stats import Top1, top1_preference
from repro.ground.runtime import derive_seed, generator, resolve_dtype


@dataclass
class PreferenceRun:
    """One random-init model probed with the same N random token sequences at several lengths
    (one row group of 001 Table 1; Fig 1a, Fig 10, Fig 2 and Finding 2.2 read the same pass)."""

    arch: str
    seed: int
    sizes: dict
    lengths: tuple[int, ...]
    top1: list[Top1]  # per length: most frequent argmax next token, Bonferroni p (App B.2)
    top_dim: list[Top1]  # per length: most frequent argmax hidden dimension of the last block
    rank_counts: np.ndarray  # (n_len, R) counts of the R most predicted tokens
    dim_rank_counts: np.ndarray  # (n_len, R) the same for hidden dimensions
    final_cosine: np.ndarray  # (n_len,) inter-sequence cosine of the final-normed last-token state
    contraction_token: list[int]  # per length: argmax of W_U · mean final-normed state (Finding 2.2)
    next_token: np.ndarray | None = None  # (n_len, N) argmax next token per sequence
    layer_cosine: np.ndarray | None = None  # (n_len, L+1): embeddings, then each block's output
    dim_std: np.ndarray | None = None  # (n_len, d) std over sequences of the last block's output
    # the head's own null (only with preference_run(null=True)): each token's argmax rate for
    # isotropic final states, and one such draw of N states through the model's norm and head
    null_rates: np.ndarray | None = None  # (V,)
    null_next_token: np.ndarray | None = None  # (N,)

    def at(self, length: int) -> int:
        return self.lengths.index(length)

    def null_log10_p(self, i: int) -> float:
        """log10 p of length index i's top-1 count against the head's own null (not uniform)."""
        return null_top_log10_p(self.top1[i].count, self.top1[i].n, self.null_rates)

    def null_draw_top1(self) -> Top1:
        """The top-1 token of the isotropic null draw (its p is App B.2's uniform one)."""
        return top1_preference(self.null_next_token, self.sizes["vocab_size"])

    def dim_null_rates(self, i: int) -> np.ndarray:
        """Each hidden dimension's argmax rate if the last block's output had its measured
        per-dimension spread and no shared offset (independent N(0, std_j²))."""
        return gaussian_argmax_rates(self.dim_std[i])

    def freq_of(self, token: int, length: int) -> float:
        """How often this model predicts `token` at probe length `length`."""
        return float(np.mean(self.next_token[self.at(length)] == token))


RANKS = 50  # ranks drawn in the Fig 1a / Fig 10 histograms


def random_token_inputs(n_seq: int, T: int, vocab_size: int) -> torch.Tensor:
    """001 App B.2's fixed set of N uniform random token sequences: one set per (N, T, V), shared
    by every seed and architecture (paired comparisons)."""
    return random_tokens(n_seq, T, vocab_size, generator(derive_seed("random-token-probes", n_seq, T, vocab_size)))


def random_init_model(
    arch: str,
    *,
    seed: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_positions: int,
    embedding_seed: int,
    dtype: torch.dtype,
    device: torch.device | str = "cpu",
    draw_on_device: bool = False,
) -> torch.nn.Module:
    """The random-init model a preference run probes (App B.1 init, `hf.build_model`), on `device`.

    By default drawn on the CPU in float32 and moved: the same weights on every device. With
    `draw_on_device` on a GPU it is built there and drawn there, from generators of that device
    seeded alike (the same distribution, other numbers): no weight crosses from the host, where a
    CPU generator spent ≈ 1 s per 124M-parameter model (Finding 2.2's 100 models at paper). On the
    CPU both ways are the same code and the same numbers, bit for bit."""
    shape = dict(n_layer=n_layer, n_head=n_head, d_model=d_model, vocab_size=vocab_size, n_positions=n_positions)
    if not draw_on_device:
        model = build_model(
            arch, **shape, seed=seed, embedding_seed=embedding_seed, attn_implementation="sdpa", dtype=dtype
        )
        return model.to(device)
    from repro.core.models import hf
    from repro.core.models.attention import register

    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # older layout: pay for transformers' init, then overwrite it
        import contextlib

        no_init_weights = contextlib.nullcontext
    register()
    config = hf.build_config(arch, **shape, attn_implementation="sdpa")
    dev = torch.device(device)
    with dev, no_init_weights():
        model = hf._model_class(arch)(config)
    model.tie_weights()
    with dev:  # init_gpt_style_ makes its draws' buffers on the default device: this one
        hf.init_gpt_style_(
            model, n_layer, generator(seed, device=dev), embedding_generator=generator(embedding_seed, device=dev)
        )
    if dtype != torch.float32:
        for param in model.parameters():  # parameters only, as build_model: RoPE's inv_freq stays float32
            param.data = param.data.to(dtype)
    return model.eval()


@memo.cached("bb-preference-run")
def preference_run(
    arch: str,
    *,
    seed: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_seq: int,
    lengths,
    embedding_seed: int = 0,
    keep_states: bool = True,
    device: torch.device | str = "cpu",
    dtype: str = "auto",
    batch_size: int = 64,
    null: bool = False,
    draw_on_device: bool = False,
) -> PreferenceRun:
    """Build a random-init `arch` model (App B.1 init; embedding and LM head fixed by
    `embedding_seed` across seeds, footnote 2) and probe it (001 §3, App B.2). `null`: also the
    head's own null (per-token argmax rates for isotropic final states, and one draw of N such
    states through the model's final norm and head; ≈ one LM-head pass). `draw_on_device`: the
    weights drawn where the model runs (`random_init_model`)."""
    lengths = tuple(sorted(lengths))
    torch_dtype = resolve_dtype(dtype, device)
    model = random_init_model(
        arch,
        seed=seed,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        vocab_size=vocab_size,
        n_positions=max(lengths),
        embedding_seed=embedding_seed,
        dtype=torch_dtype,
        device=device,
        draw_on_device=draw_on_device,
    )
    res = probe.probe(
        model,
        random_token_inputs(n_seq, max(lengths), vocab_size),
        lengths=lengths,
        keep_states=keep_states,
        batch_size=batch_size,
        tie_seed=derive_seed("ties", arch, seed),
    )
    sizes = dict(
        arch=arch,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        vocab_size=vocab_size,
        n_seq=n_seq,
        lengths=list(lengths),
        embedding_seed=embedding_seed,
        dtype=str(torch_dtype).removeprefix("torch."),
    )
    run = PreferenceRun(
        arch,
        seed,
        sizes,
        lengths,
        top1=[top1_preference(t, vocab_size) for t in res.next_token],
        top_dim=[top1_preference(t, d_model) for t in res.top_dim],
        rank_counts=np.stack([probe.rank_counts(t, vocab_size, RANKS) for t in res.next_token]),
        dim_rank_counts=np.stack([probe.rank_counts(t, d_model, RANKS) for t in res.top_dim]),
        final_cosine=np.array([mean_pairwise_cosine(h) for h in res.final_normed]),
        contraction_token=[probe.contraction_token(model, h) for h in res.final_normed],
        next_token=res.next_token.numpy(),
        dim_std=None if res.dim_std is None else res.dim_std.double().numpy(),
    )
    if null:
        run.null_rates = gaussian_argmax_rates(probe.head_logit_scales(model))
        run.null_next_token = probe.isotropic_next_tokens(model, n_seq, derive_seed("isotropic-null", arch, seed))
    if res.states is not None:
        run.layer_cosine = np.array([[mean_pairwise_cosine(h) for h in per_len] for per_len in res.states])
    return run


def preference_runs(
    *,
    archs,
    seeds,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_seq: int,
    lengths,
    dtype: str = "auto",
    device: torch.device | str = "cpu",
    keep_states: bool = True,
    null: bool = False,
) -> dict[tuple[str, int], PreferenceRun]:
    """001 Table 1's row groups (§3, App B.2): `preference_run` for every architecture and seed
    (the architecture outer), keyed (arch, seed); `null` and `keep_states` as there."""
    return {
        (arch, seed): preference_run(
            arch,
            seed=seed,
            d_model=d_model,
            n_layer=n_layer,
            n_head=n_head,
            vocab_size=vocab_size,
            n_seq=n_seq,
            lengths=lengths,
            keep_states=keep_states,
            device=device,
            dtype=dtype,
            null=null,
        )
        for arch in archs
        for seed in seeds
    }


def uniform_baselines(n_seq: int, vocab_size: int, d_model: int) -> tuple[np.ndarray, np.ndarray]:
    """The random baselines of 001 Fig 1a / Fig 10 (red lines): rank counts of n_seq uniform draws
    over the vocabulary (generator 1) and over the d_model hidden dimensions (generator 2)."""
    return (
        probe.uniform_rank_counts(n_seq, vocab_size, generator(1), ranks=RANKS),
        probe.uniform_rank_counts(n_seq, d_model, generator(2), ranks=RANKS),
    )


@dataclass
class DirectionResult:
    """001 Finding 2.2 over many random models: does the contraction direction name the favourite?"""

    sizes: dict
    favourite: np.ndarray  # (M,) most predicted token per model
    favourite_count: np.ndarray  # (M,)
    direction_token: np.ndarray  # (M,) argmax of W_U · mean final-normed state
    log10_p: np.ndarray  # (M,) Bonferroni p of each favourite
    rank_counts: np.ndarray | None = None  # (M, RANKS) counts of each model's most predicted tokens

    @property
    def agree(self) -> np.ndarray:
        return self.favourite == self.direction_token


def direction_agreement(
    *,
    arch: str,
    n_models: int,
    T: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    n_seq: int,
    dtype: str = "auto",
    device: torch.device | str = "cpu",
) -> DirectionResult:
    """Finding 2.2 protocol on `n_models` random-init models (seeds 0 … M−1, shared embedding
    and LM head): favourite token vs the contraction direction's token, at length T. On a GPU
    every model is built and drawn there (`random_init_model(draw_on_device=True)`): at paper
    the 100 models' host draws took longer than their probes; on the CPU the numbers are the
    ones a CPU build gives."""
    if n_models < 1:
        raise ValueError(f"direction_agreement needs n_models >= 1, got {n_models}")
    fav, cnt, dirs, lp, ranks = [], [], [], [], []
    for seed in range(n_models):
        run = preference_run(
            arch,
            seed=seed,
            lengths=(T,),
            keep_states=False,
            d_model=d_model,
            n_layer=n_layer,
            n_head=n_head,
            vocab_size=vocab_size,
            n_seq=n_seq,
            dtype=dtype,
            device=device,
            draw_on_device=torch.device(device).type != "cpu",
        )
        fav.append(run.top1[0].token)
        cnt.append(run.top1[0].count)
        dirs.append(run.contraction_token[0])
        lp.append(run.top1[0].log10_p)
        ranks.append(run.rank_counts[0])
    info = {k: v for k, v in run.sizes.items() if k != "lengths"}
    return DirectionResult(
        dict(info, T=T, n_models=n_models), np.array(fav), np.array(cnt), np.array(dirs), np.array(lp), np.array(ranks)
    )
