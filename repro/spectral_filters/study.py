"""One spectral-filter study per model (003): the state every SF claim reads, built once.

`build_study` holds the spectral filters (`spectral.filters`), prompts cut from the run's corpus
that all start with the model's <bos> (003 §5 needs token 0 alike in every prompt), one
float32 forward pass with every residual state, sub-layer contribution and attention map,
token 0's sink profile, and an NLL `Sweep` (in the dtype policy's choice for
`sizes["nll_dtype"]`) whose per-prompt results are memoised, so the heat maps that several
claims read are computed once, and the spread over prompts is every NLL claim's noise.
`hmlv_statistics` is §7's high-mean-low-variance token analysis on prompts of the source's
length. Layers named in the source are mapped by what they do: the source's L12 of 40 (SF-7,
Fig 13) is the block at the same relative depth (`Study.sf7_layer`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from repro.core import activations, data, lens
from repro.ground.errors import NotApplicable
from repro.ground.runtime import ReproError, dtype_name, generator, resolve_dtype
from repro.spectral_filters import catalogue, dark_signals, spectral

SOURCE_SF7 = catalogue.number("SF-7", "fig13")  # 003 Fig 13: Ω_{u,14} after L12 of 40: NLL 2.47 → 2.74
RANDOM_DRAWS = 16  # random selections averaged for SF-9's negative control
# the source's prompts for Tables 2, 4 and 5 (003 §6.1, App E): SF-8's continuations
PROMPTS = (
    "Tuatara are lizard-like reptiles that can be traced back to the time of the dinosaurs. For the first "
    "time in 200 years, researchers have discovered a baby tuatara on mainland New Zealand.",
    "If you're interested in Grizzly Bear viewing in and around the northern Gulf of Alaska, consider a "
    "chartered flight with Trygg Air Alaska based out of King Salmon with service to and from Anchorage.",
)
# a user's model without an attention sink (token 0 no more than this many times the median
# token's norm) is not what 003 §4–7 speak of: SF-3 … SF-10 read "not applicable" there. Massive
# activations are orders of magnitude (003 Fig 9); a random init sits near 1.
SINK_MIN_RATIO = 3.0
# SF-4's 'large': token 0's norm at its peak an order of magnitude above the median other token's
# (§5 gives no ratio; SINK_MIN_RATIO only says a sink is there)
SINK_LARGE = 10.0


@dataclass
class Study:
    name: str
    model: torch.nn.Module  # float32, as loaded
    tok: Any
    sizes: dict
    F: spectral.Filters
    ids: torch.Tensor  # (n, T), column 0 = <bos>
    cap: activations.Capture
    sink: dark_signals.SinkProfile
    sweep: spectral.Sweep  # on a copy in `dtype` (the policy's choice for sizes["nll_dtype"])
    base_f32: float
    dtype: str
    corpus: str = "brown"  # where the prompts (and SF-1's token counts) come from: --corpus
    memo: dict = field(default_factory=dict)

    @property
    def L(self) -> int:
        return self.sweep.L

    @property
    def sf7_layer(self) -> int:
        return min(self.L - 1, round(SOURCE_SF7[0] * self.L))

    @property
    def rows(self) -> list[int]:
        """`step_rows` and SF-7's layer (the heat-map rows of SF-7's Ω grid)."""
        return sorted(set(self.step_rows) | {self.sf7_layer})

    @property
    def step_rows(self) -> list[int]:
        """The rows of the figures of the claims about the residual after ℓ* (SF-3, SF-5, SF-6):
        ℓ* and the profile's `layers` (ci: none, so [ℓ*]; paper: every layer). `rows` adds SF-7's
        layer, which only SF-7 asserts on: at ci those cells were figure-only."""
        spec = self.sizes["layers"]
        if spec == "all":
            return list(range(self.L))
        return sorted({min(self.L - 1, round(f * self.L)) for f in spec} | {self.sink.layer})

    @property
    def sink_ratio(self) -> float:
        """Token 0's residual norm at its peak layer over the median other token's there: the
        attention sink the §4–7 claims are about shows as a norm far above the others' (003 Fig 9);
        a model without one (a random init) sits near 1."""
        peak = int(self.sink.norm.argmax())
        return float(self.sink.norm[peak] / self.cap.residual[:, peak, 1:].norm(dim=-1).median())

    @property
    def cols(self) -> list[int]:
        return list(self.sizes["bands"]) + [spectral.N_BANDS]

    @property
    def base_prompts(self) -> np.ndarray:
        return self.sweep.base_prompts.numpy()

    def filter(self, family: str, bands: int, seed: int = 0) -> torch.Tensor | None:
        """The family's filter retaining `bands` bands (Ω_{u,k} retains k + 1); None at 20."""
        if bands >= spectral.N_BANDS:
            return None
        k = bands - 1 if family == "omega" else bands
        return self.F.family(family, k, seed)

    def prompt_nll(
        self,
        layer: int,
        family: str,
        bands: int,
        *,
        seed: int = 0,
        where: str = "resid",
        tokens: str = "all",
        swap: bool = False,
        swap_shift: int = 0,
    ) -> np.ndarray:
        """(n,) NLL per prompt with the filter after `layer` (memoised)."""
        key = (layer, family, bands, seed, where, tokens, swap, swap_shift)
        if key not in self.memo:
            P = self.filter(family, bands, seed)
            v = (
                self.sweep.base_prompts
                if P is None
                else self.sweep.prompt_nll(layer, P, where=where, tokens=tokens, swap=swap, swap_shift=swap_shift)
            )
            self.memo[key] = v.numpy()
        return self.memo[key]

    def nll(self, layer: int, family: str, bands: int, **kw: Any) -> float:
        """Mean NLL over prompts (all prompts have the same length: the mean over tokens)."""
        return float(self.prompt_nll(layer, family, bands, **kw).mean())

    def grid(self, family: str, rows: list[int] | None = None, **kw: Any) -> np.ndarray:
        """(rows, cols) NLL heat map (003 Fig 8/11) over `rows` (default `self.rows`; see
        `step_rows`). One cell costs a pass through the rest of the model and the head (Gemma:
        3.1 s in float32 on 2 CPU cores)."""
        return np.array(
            [[self.nll(r, family, c, **kw) for c in self.cols] for r in (self.rows if rows is None else rows)]
        )


def build_study(model_name: str, m: torch.nn.Module, tok: Any, sizes: dict, corpus: str = "brown") -> Study:
    """The study of one model (see the module docstring); `sizes`: the profile's "spectral" row."""
    if tok is None:
        raise ReproError(f"--model {model_name}: the spectral claims read text, which needs the model's tokenizer")
    bos = tok.bos_token_id
    if bos is None:
        raise NotApplicable(
            f"--model {model_name}: its tokenizer has no <bos>; 003 §5 needs every prompt to start alike"
        )
    F = spectral.filters(m)
    ids = data.windows(tok, "test", sizes["n_prompts"], sizes["prompt_len"], lead=bos, corpus=corpus).to(
        next(m.parameters()).device
    )
    cap = activations.capture(m, ids, modules=["mlp_out", "attn_out", "attn_in"], attentions=True, logits_to_keep=1)
    sink = dark_signals.sink_profile(
        cap.residual[0, :, 0],
        torch.stack([x[0, 0] for x in cap.modules["mlp_out"]]),
        torch.stack([x[0, 0] for x in cap.modules["attn_out"]]),
        F.dark("u"),
    )
    dtype = resolve_dtype(sizes["nll_dtype"], next(m.parameters()).device)
    work = m if dtype == torch.float32 else copy.deepcopy(m).to(dtype)
    with torch.no_grad():
        normed = lens.final_norm(m)(cap.residual[:, -1])
        base_f32 = float(spectral.nll_per_token(m, normed[:, :-1], ids[:, 1:]).mean())
    return Study(
        model_name,
        m,
        tok,
        sizes,
        F,
        ids,
        cap,
        sink,
        spectral.Sweep(work, ids),
        base_f32,
        dtype_name(dtype),
        corpus=corpus,
    )


def generations(s: Study, prompts: tuple[str, ...]) -> tuple[list[int], dict[str, list[float]], list[list]]:
    """SF-8 (003 §6.1, Tables 2/4/5): greedy continuations of `prompts` (led by <bos>), unfiltered
    and with Ψ, a random filter and Ω_u at 80% retained after each layer at the `gen` row's relative
    depths, on the sweep's model. Returns (layers, rep-3 per family — the unfiltered value once per
    layer, so every family has one value per (prompt, layer) — and the table rows)."""
    F, g = s.F, s.sizes["gen"]
    layers = sorted({min(s.L - 1, round(f * s.L)) for f in g["layers"]})
    work = s.sweep.model
    fams = {"Ψ (80%)": F.psi(16), "Rnd (80%)": F.random(16, s.sizes["random_seeds"][0]), "Ω_u (80%)": F.omega(15)}
    reps: dict[str, list[float]] = {"none": [], **{k: [] for k in fams}}
    rows = []
    for text in prompts:
        prompt = torch.tensor([[s.tok.bos_token_id] + s.tok(text, add_special_tokens=False)["input_ids"]])
        plain = spectral.generate(work, prompt, g["new_tokens"])
        reps["none"] += [spectral.rep_n(plain)] * len(layers)
        rows.append([text[:40] + "…", "-", "none", round(spectral.rep_n(plain), 2), s.tok.decode(plain)])
        for layer in layers:
            for name, P in fams.items():
                out = spectral.generate(work, prompt, g["new_tokens"], layer=layer, P=P)
                reps[name].append(spectral.rep_n(out))
                rows.append([text[:40] + "…", layer, name, round(spectral.rep_n(out), 2), s.tok.decode(out)])
    return layers, reps, rows


def hmlv_statistics(s: Study, draws: int = RANDOM_DRAWS) -> dict[str, Any]:
    """§7 on prompts of the source's length (`dark_signals.HMLV_PROMPT_LEN` = 33 tokens, <bos> first), where
    its thresholds (mean > 0.018, var < 0.01) mean what they meant: a token's mean received
    attention scales like 1/T, so on the study's longer prompts the same thresholds would select
    other tokens. As many prompts as the study's token budget gives (ci: 6 × 128 → 23 × 33): one
    more forward pass, with attention maps. The layers are those where token 0's sink is in place
    (token 0's stream is the same in every prompt). HMLV: variance below the source's τ_σ and mean
    above τ_μ = `dark_signals.hmlv_mean_threshold`, the threshold that marks the source's share of
    pairs (3.0%) on this model; the share the source's own τ_μ = 0.018 marks is returned too. Per
    layer: the figure's means (HMLV vs all); per prompt, summed over layers: the HMLV tokens'
    contrast with the prompt's other tokens in population sds (`dark_signals.hmlv_contrast`), and
    the same for random tokens of the same count (`dark_signals.matched_random_mask`, averaged
    over `draws` draws): the negative control."""
    T = dark_signals.HMLV_PROMPT_LEN
    if s.ids.shape[1] == T:
        ids, cap = s.ids, s.cap
    else:
        n = max(s.ids.shape[0], round(s.ids.numel() / T))
        ids = data.windows(s.tok, "test", n, T, lead=s.tok.bos_token_id, corpus=s.corpus).to(s.ids.device)
        cap = activations.capture(s.model, ids, modules=["attn_in"], attentions=True, logits_to_keep=1)
    D = s.F.dark("u")
    blocks = lens.arch_map(s.model).blocks(s.model)
    g = generator(0)
    B = ids.shape[0]
    per_layer = {k: [] for k in ("layer", "n", "n_all", "udr_h", "udr_all", "kdp_h", "kdp_all")}
    acc = {k: torch.zeros(B, dtype=torch.float64) for k in ("udr", "kdp", "udr_rnd", "kdp_rnd", "n")}
    received = {}
    for layer in s.sink.in_place:
        mean, var = dark_signals.received_attention(cap.attentions[layer])
        valid = ~torch.isnan(mean)
        valid[:, 0] = False
        received[layer] = (mean.cpu(), var.cpu(), valid.cpu())
    source_share = float(
        sum(int(dark_signals.hmlv(m, v)[ok].sum()) for m, v, ok in received.values())
        / max(1, sum(int(ok.sum()) for _, _, ok in received.values()))
    )
    tau_mean = dark_signals.hmlv_mean_threshold(*(torch.stack([r[i] for r in received.values()]) for i in range(3)))
    for layer, (mean, var, valid) in received.items():
        mask = dark_signals.hmlv(mean, var, tau_mean) & valid
        with torch.no_grad():
            u = dark_signals.udr(cap.residual[:, layer], D)
            attn = lens.resolve(blocks[layer], lens.arch_map(s.model).attn)
            kdp = dark_signals.key_dot_products(dark_signals.head_keys(attn, cap.modules["attn_in"][layer]))
        u, kdp = u.cpu(), kdp.float().cpu()
        random_masks = [dark_signals.matched_random_mask(mask, valid, g) for _ in range(draws)]
        for key, x in (("udr", u), ("kdp", kdp)):
            acc[key] += dark_signals.hmlv_contrast(x, mask, valid)[0]
            for r in random_masks:
                acc[f"{key}_rnd"] += dark_signals.hmlv_contrast(x, r, valid)[0] / draws
        acc["n"] += mask.sum(1).double()
        if int(mask.sum()) == 0:
            continue
        for k, v in (
            ("layer", layer),
            ("n", int(mask.sum())),
            ("n_all", int(valid.sum())),
            ("udr_h", float(u[mask].mean())),
            ("udr_all", float(u[valid].mean())),
            ("kdp_h", float(kdp[mask].mean())),
            ("kdp_all", float(kdp[valid].mean())),
        ):
            per_layer[k].append(v)
    has = acc["n"] > 0
    prompts = {k: (acc[k][has] / acc["n"][has]).numpy() for k in ("udr", "kdp", "udr_rnd", "kdp_rnd")}
    return {
        "layers": {k: np.array(v) for k, v in per_layer.items()},
        "prompts": prompts,
        "shape": tuple(ids.shape),
        "n_prompts_with": int(has.sum()),
        "tau_mean": tau_mean,
        "source_thresholds_share": source_share,
        "pairs": (int(acc["n"].sum()), sum(int(ok.sum()) for _, _, ok in received.values())),
    }
