"""SeedPrint as its authors released it: the test of their public code, on two n × d responses.

Read from YnezT0311/SeedPrints on GitHub at commit ``4a39abc4fd566b714f3529fe20b8fc82fe293fc2``
(`CODE_COMMIT`; the paper does not describe this test — its Algorithm 1 is `algorithm.algorithm_one`):

- ``seedprint.py``, ``run_test`` with its defaults (``method="analytical"``,
  ``identity_mode="coset"``, ``DEFAULT_BUFFER_K = 400``, ``use_agg=False``): what
  ``test_toy_models.py`` and ``test_foundation_models.py`` call, and what ``run_table1.sh`` …
  ``run_table5.sh`` (the paper's Tables 4a, 4b, 4c, 5 and 6) run — none passes ``--buffer_k``,
  ``--identity_mode`` or ``--use_agg``. (The later stored version, commit
  ``42b4624f0ce123c527efe9ba0fef7c5392625153``, adds ``method="empirical"`` with "simplified" and
  "full_pipeline" null baselines; the analytical default is unchanged.)
- ``baselines/LeaFBench/fingerprint/seed/seed.py`` with ``correlation_test.py``'s ``test_lineage``
  and ``config/seed.yaml``: LeaFBench's — ``buffer_k = int(ratio_k · D)``, ``ratio_k: 0.1``;
  ``test_lineage`` keeps the base's bottom-k only (it reads no ``identity_mode``; ``seed.py``'s
  default is ``'base'``), drops NaN rows and drops undefined τ's (k shrinks).
- ``utils.py`` (``generate_random_embeddings``) with ``test_toy_models.py`` (the init model of the
  base's seed) and LeaFBench's ``get_random_embed.py`` (``AutoModelForCausalLM.from_config``): the
  Gaussian inputs' scalar mean and std are those of the raw ``embed_tokens.weight`` of a freshly
  initialised model of the base's architecture, fed as ``inputs_embeds`` (`gaussian_inputs`).

The test (`released_variant`), as the code does it, in float32 (their features are float32):

1. the base's bottom-k dimensions of its *raw* mean response (``torch.topk(avg, k, largest=False)``);
   ``"coset"``: intersected with the suspect's bottom-k (sorted); ``"base"``: the base's alone;
2. ``softmax_T10``, a row softmax at temperature 10 over the *selected columns only*, each model;
3. Kendall's τ-b (``scipy.stats.kendalltau``) per selected column, τ̄ their mean over k;
4. z = τ̄ / (τ_std(n) / √k), τ_std(n) = √(2(2n+5) / (9n(n−1))); p = min(1, 2·(1 − Φ(z))).

Undefined τ's (a constant column): ``run_test`` averages them in, so τ̄ is NaN and its p is
``min(1.0, nan)`` = 1.0 (Python's ``min`` keeps its first argument) — `Rule.undefined` "void";
``test_lineage`` drops them and uses the k that is left — "drop". An empty selection gives p = 1
in both. The k rules (`RULES`, which claim uses which: docs/topics.md's SeedPrint section) are
the scripts' 400 dims on the width they ran at, in proportion at ours, and LeaFBench's 10%.

One departure, numerical only: p = 2·sf(z) where the code writes 2·(1 − Φ(z)); the same number
down to ~1e-16, below which the code's reads 0 (z > 8.3) and ours keeps the tail. The verdict at
α is the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy import stats
from torch import nn

from repro.ground.runtime import ReproError, derive_seed, generator

ALPHA = 0.01  # 001 §6.1.1 "We declare significance at p < 0.01"; the code's verdict reads p the same way
TEMPERATURE = 10.0  # the code's normalisation "softmax_T10"
CODE_REPO = "YnezT0311/SeedPrints"
CODE_COMMIT = "4a39abc4fd566b714f3529fe20b8fc82fe293fc2"
UNDEFINED = ("void", "drop")
IDENTITY_MODES = ("coset", "base")


@dataclass(frozen=True)
class Rule:
    """One way the authors' code runs the test: its dimension selection, its k at a width, and what
    it does with an undefined τ. `k_of(d)`: `buffer_k` dims at `width` (the source's models), in
    proportion at width d; or `ratio` · d, truncated as ``int()`` does."""

    name: str
    identity_mode: str
    undefined: str
    where: str
    buffer_k: int | None = None
    width: int | None = None
    ratio: float | None = None

    def k_of(self, d: int) -> int:
        if self.ratio is not None:
            return min(d, int(self.ratio * d))
        return min(d, max(1, round(self.buffer_k * d / self.width)))


RULES: dict[str, Rule] = {
    # run_table1–4.sh → test_toy_models.py → run_test: the llama-160M toy models, hidden_size 768
    # (test_toy_models.py's LlamaConfig), buffer_k 400: 400 of 768 dims
    "tables": Rule(
        "tables",
        "coset",
        "void",
        "run_table1.sh … run_table4.sh (Tables 4a–4c, 5): seedprint.run_test, coset, 400 of 768 dims",
        buffer_k=400,
        width=768,
    ),
    # run_table5.sh → test_foundation_models.py → run_test: Llama-2-7B and its fine-tunes, 4096 wide
    "table6": Rule(
        "table6",
        "coset",
        "void",
        "run_table5.sh (Table 6): seedprint.run_test on Llama-2-7B, coset, 400 of 4096 dims",
        buffer_k=400,
        width=4096,
    ),
    "leafbench": Rule(
        "leafbench",
        "base",
        "drop",
        "LeaFBench seed.py + correlation_test.test_lineage: the base's bottom int(0.1·D), undefined τ's dropped",
        ratio=0.1,
    ),
}
DEFAULT_RULE = "tables"
RULE_NAMES = ("tables", "table6", "leafbench")  # RULES' keys, readable without importing torch (the CLI's choices)


def tau_std(n: int) -> float:
    """Standard deviation of Kendall's τ between two independent samples of size n (no ties):
    √(2(2n+5) / (9n(n−1))) (the code's ``_kendall_tau_null_std``; App B.3)."""
    if n < 2:
        raise ReproError(f"tau_std needs n ≥ 2 (got {n})")
    return math.sqrt(2.0 * (2 * n + 5) / (9.0 * n * (n - 1)))


def bottom_k(mean: torch.Tensor, k: int) -> list[int]:
    """The k dimensions of smallest mean (``torch.topk(mean, k, largest=False)``), as a list."""
    return torch.topk(mean, k, largest=False).indices.tolist()


def select(fa: torch.Tensor, fb: torch.Tensor, k: int, identity_mode: str) -> list[int]:
    """Step 1: the base's bottom-k of its raw mean, ∩ the suspect's under "coset"; sorted."""
    if identity_mode not in IDENTITY_MODES:
        raise ReproError(f"unknown identity mode {identity_mode!r}; choose one of {', '.join(IDENTITY_MODES)}")
    ids = set(bottom_k(fa.mean(0), k))
    if identity_mode == "coset":
        ids &= set(bottom_k(fb.mean(0), k))
    return sorted(ids)


def z_and_p(taus: np.ndarray, n: int, undefined: str) -> tuple[float, float, int]:
    """Steps 3–4 on the selected columns' τ's: (z, p, k used). "void": an undefined τ (NaN) makes
    τ̄ NaN and p = 1 (the code's ``run_test``); "drop": undefined τ's leave, k shrinks
    (``test_lineage``). No τ left: z NaN, p = 1."""
    if undefined not in UNDEFINED:
        raise ReproError(f"unknown undefined-τ policy {undefined!r}; choose one of {', '.join(UNDEFINED)}")
    kept = taus[np.isfinite(taus)] if undefined == "drop" else taus
    k = len(kept)
    if k == 0 or not np.all(np.isfinite(kept)):
        return float("nan"), 1.0, k
    z = float(kept.mean()) / (tau_std(n) / math.sqrt(k))
    return z, min(1.0, 2.0 * float(stats.norm.sf(z))), k


@dataclass
class ReleasedResult:
    """The authors' released test on one (base, suspect) pair."""

    p: float
    z: float
    mean_tau: float  # over the τ's that entered z (NaN when none did)
    dims: list[int]  # the selected dimensions
    taus: np.ndarray  # τ per selected dimension (NaN where undefined)
    k: int  # the τ's that entered z
    rule: str
    alpha: float = ALPHA

    @property
    def same_lineage(self) -> bool:
        return self.p < self.alpha

    def summary(self) -> dict[str, Any]:
        return dict(
            p=self.p,
            z=self.z,
            mean_tau=self.mean_tau,
            k=self.k,
            selected=len(self.dims),
            undefined_taus=int(np.sum(~np.isfinite(self.taus))),
            rule=self.rule,
            code=f"{CODE_REPO}@{CODE_COMMIT[:12]}",
            same_lineage=self.same_lineage,
        )


def released_variant(
    fa: torch.Tensor,
    fb: torch.Tensor,
    *,
    rule: str = DEFAULT_RULE,
    k: int | None = None,
    temperature: float = TEMPERATURE,
    alpha: float = ALPHA,
) -> ReleasedResult:
    """The authors' test (module docstring) on two n × d responses (rows: the same inputs).
    `rule`: one of `RULES` (selection, k at this width, undefined τ's); `k` overrides its k."""
    if fa.shape != fb.shape or fa.dim() != 2:
        raise ReproError(
            f"SeedPrint needs two n × d responses of one shape, got {tuple(fa.shape)} "
            f"and {tuple(fb.shape)} (models of different widths cannot be compared)"
        )
    if rule not in RULES:
        raise ReproError(f"unknown released-test rule {rule!r}; choose one of {', '.join(RULES)}")
    r = RULES[rule]
    fa, fb = (torch.as_tensor(x).detach().cpu().float() for x in (fa, fb))
    if r.undefined == "drop":  # test_lineage: rows with a NaN in either model leave
        valid = ~(fa.isnan().any(1) | fb.isnan().any(1))
        fa, fb = fa[valid], fb[valid]
    n, d = fa.shape
    kk = r.k_of(d) if k is None else int(k)
    if not 0 <= kk <= d:
        raise ReproError(f"released test: k = {kk} dims of a {d}-wide response (needs 0 ≤ k ≤ {d})")
    dims = select(fa, fb, kk, r.identity_mode)
    sa = torch.softmax(fa[:, dims] / temperature, dim=1).numpy()
    sb = torch.softmax(fb[:, dims] / temperature, dim=1).numpy()
    taus = np.array([stats.kendalltau(sa[:, j], sb[:, j]).statistic for j in range(len(dims))], dtype=float)
    z, p, used = z_and_p(taus, n, r.undefined)
    finite = taus[np.isfinite(taus)] if r.undefined == "drop" else taus
    mean_tau = float(finite.mean()) if used else float("nan")
    return ReleasedResult(p, z, mean_tau, dims, taus, used, rule, alpha)


def gaussian_inputs(base: nn.Module, n: int, length: int, seed: int) -> torch.Tensor:
    """(n, length, d) Gaussian input embeddings as the authors draw them: N(μ, σ) with μ, σ the
    scalar mean and std of the raw token-embedding weight of a freshly initialised model of the
    base's architecture (no embedding scale: ``inputs_embeds`` bypass it in their code too)."""
    from repro.core import lens
    from repro.core.models.hf import random_init_twin

    twin = random_init_twin(base, seed=derive_seed("seedprint-released-init", seed))
    w = lens.resolve(twin, lens.arch_map(twin).embed).weight.detach().float()
    mean, std = float(w.mean()), float(w.std())
    del twin
    g = generator(derive_seed("seedprint-released-inputs", seed))
    return torch.randn(n, length, w.shape[1], generator=g) * std + mean
