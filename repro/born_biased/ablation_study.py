"""001 §4.1's architectural ablation (Table 2, Figs 3, 4, 7): the source's nano block as full,
attention-only and MLP-only stacks of random-init TinyDecoders fed Gaussian sequences with the
embedding's init statistics, probed through a tied LM head; and what BB-3 / BB-3.2a read off them
(Table 2's final cosines, the flatness test of the pooled top-1 counts, the widening gap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from repro.born_biased import preference_probe as probe
from repro.born_biased.head_null import gaussian_argmax_rates, null_top_log10_p
from repro.born_biased.init_bias import mean_pairwise_cosine, tiny_decoder
from repro.born_biased.preference_runs import RANKS
from repro.core import memo, stats
from repro.core.data import gaussian_inputs
from repro.core.models.tiny import TinyConfig
from repro.core.stats import SeedCurves, Top1, top1_preference
from repro.ground.runtime import derive_seed, generator, resolve_dtype

ABLATION_BLOCKS = {"full": "full", "attn-only": "attn", "mlp-only": "mlp"}


@dataclass
class AblationRun:
    """001 §4.1 (Table 2, Figs 3, 4, 7): one variant, one seed, Gaussian inputs."""

    variant: str
    seed: int
    sizes: dict
    top1: Top1
    rank_counts: np.ndarray  # (R,)
    final_cosine: float  # Table 2: last-token states after the final LayerNorm
    layer_cosine: np.ndarray  # (L,) after each block (Fig 7, Fig 4)
    layer_cosine_std: np.ndarray  # (L,) std over pairs of sequences (Fig 4's band)
    null_log10_p: float = math.nan  # top1's count against the tied head's own null (not uniform)


def pairwise_cosine_std(x: torch.Tensor) -> float:
    """Standard deviation of the cosine similarity over all distinct pairs of rows of x (N, d)."""
    z = torch.nn.functional.normalize(x.double(), dim=-1)
    g = z @ z.T
    iu = torch.triu_indices(len(z), len(z), offset=1)
    return float(g[iu[0], iu[1]].std())


@memo.cached("bb-ablation-run")
def ablation_run(
    variant: str,
    *,
    seed: int,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    T: int,
    n_seq: int,
    device: torch.device | str = "cpu",
    dtype: str = "auto",
) -> AblationRun:
    """A 12-layer pre-LN GELU decoder with RoPE (the source's nano GPT-2 block), as full,
    attention-only or MLP-only stack, fed N Gaussian sequences with the embedding's init
    statistics N(0, 0.02²) (001 §4.1); tied LM head for the next-token histogram."""
    if variant not in ABLATION_BLOCKS:
        raise ValueError(f"unknown ablation variant {variant!r}; choose one of {', '.join(ABLATION_BLOCKS)}")
    torch_dtype = resolve_dtype(dtype, device)
    cfg = TinyConfig.merged(
        vocab_size=vocab_size,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        max_len=T,
        block=ABLATION_BLOCKS[variant],
        norm="layernorm",
        activation="gelu",
        residual=True,
        positions="rope",
        final_norm=True,
        tie_embeddings=True,
    )
    model = tiny_decoder(cfg, derive_seed("bb3-weights", seed)).to(device=device, dtype=torch_dtype)
    x = gaussian_inputs(n_seq, T, d_model, generator(derive_seed("bb3-inputs", T, seed)), std=0.02, device=device)
    res = probe.probe(model, x, keep_states=True)
    states = res.states[0]  # (L+1, N, d)
    top1 = top1_preference(res.next_token[0], vocab_size)
    null_p = null_top_log10_p(top1.count, top1.n, gaussian_argmax_rates(probe.head_logit_scales(model)))
    sizes = dict(
        variant=variant,
        d_model=d_model,
        n_layer=n_layer,
        n_head=n_head,
        vocab_size=vocab_size,
        T=T,
        n_seq=n_seq,
        input_std=0.02,
        dtype=str(torch_dtype).removeprefix("torch."),
    )
    return AblationRun(
        variant,
        seed,
        sizes,
        top1,
        probe.rank_counts(res.next_token[0], vocab_size, RANKS),
        mean_pairwise_cosine(res.final_normed[0]),
        np.array([mean_pairwise_cosine(h) for h in states[1:]]),
        np.array([pairwise_cosine_std(h) for h in states[1:]]),
        null_p,
    )


def ablation_runs(
    *,
    seeds,
    d_model: int,
    n_layer: int,
    n_head: int,
    vocab_size: int,
    T: int,
    n_seq: int,
    dtype: str = "auto",
    device: torch.device | str = "cpu",
) -> dict[str, list[AblationRun]]:
    """001 §4.1 (Table 2, Figs 3, 4, 7): `ablation_run` of every variant (full, attention-only,
    MLP-only) for every seed, variant → runs in seed order."""
    return {
        v: [
            ablation_run(
                v,
                seed=seed,
                d_model=d_model,
                n_layer=n_layer,
                n_head=n_head,
                vocab_size=vocab_size,
                T=T,
                n_seq=n_seq,
                device=device,
                dtype=dtype,
            )
            for seed in seeds
        ]
        for v in ABLATION_BLOCKS
    }


def ablation_curves(ablation: dict[str, list[AblationRun]]) -> dict[str, SeedCurves]:
    """001 §4.1, Fig 7: each variant's inter-sequence cosine after every block, one row per seed."""
    return {v: SeedCurves(np.array([r.layer_cosine for r in runs])) for v, runs in ablation.items()}


def final_cosines(ablation: dict[str, list[AblationRun]]) -> dict[str, np.ndarray]:
    """001 Table 2: each variant's inter-sequence cosine of the final-normed last-token states, one per seed."""
    return {v: np.array([r.final_cosine for r in runs]) for v, runs in ablation.items()}


def pooled_top_counts(ablation: dict[str, list[AblationRun]]) -> dict[str, int]:
    """Each variant's top-1 counts pooled over seeds (Fig 3's histograms' tallest bars)."""
    return {v: sum(r.top1.count for r in runs) for v, runs in ablation.items()}


def flatter_p(ablation: dict[str, list[AblationRun]], variant: str, than: str) -> float:
    """001 §4.1's "flat" relative to another variant: pooled over seeds, under "as spiky as `than`"
    each top-1 count is as likely to come from either variant; the one-sided binomial p that
    `variant`'s pooled count is below `than`'s."""
    count = pooled_top_counts(ablation)
    return stats.binomial_p(count[variant], count[variant] + count[than], 0.5, alternative="less")
