"""The experiments `claims/test_residual_stream.py` reads (002), one call per fixture.

- `read_texts` / `Text`: each pretrained model's residual stream on held-out windows of the run's
  corpus (and, for the tuned-lens models, on training windows): 002 "Residual Stream
  Decomposition", "Logit Lens" and its tuned-lens caveat read from it.
- `random_init_models`: HF GPT-2 and Llama at random init with perturbed norm gains (001 App B.1), and
  windows of the corpus under the Brown BPE to feed them (002 RS-1, RS-2, RS-4).
- `decompose_all`: 002 "Residual Stream Decomposition" of every model on one window.
- `gradients` / `Gradients`: 002 "Pre-Norm vs Post-Norm" (gradient flow at the source's init);
  `post_norm_power`, the post-norm check's power (a `Power`; the claim file records the rows).
- `residual_norm_curves`: 002 "no normalization on the residual stream itself" (norm growth),
  with a post-norm stack as its control.
- `ffn_rewrite` / `FFNRewrite`: 002 "FFN as Key-Value Memory", checked against Higham's bound.
- `rank_curve`, `twin_rank_curve`: 002 "Logit Lens" (rank of the next token per layer).
- `lens_comparison` / `LensComparison`: the tuned-lens caveat (RS-8: tuned against logit lens,
  and a state-independent lens as the control), `lens_power` its power (a `Power`).
- `induction_study` / `InductionStudy`: 002 "Attention Head Composition" (RS-7's runs).
- `one_sided_tau_p`, `gmean`: the statistics the claims assert with.

Every model and tensor built here goes on `device` (the run's `--device`; CPU by default). Models
are initialised on the CPU from their seeded generators, then moved, so a seed gives the same
weights on every device; the device itself is in no checkpoint key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from repro.core import activations, data, lens, stats
from repro.core.models.hf import build_model, random_init_twin
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.core.readings import Power
from repro.ground.progress import Heartbeat
from repro.ground.runtime import ReproError, generator
from repro.residual_stream import decomposition as rs
from repro.residual_stream import induction

GRAD_V = 4096  # RS-3's Brown BPE vocabulary
RELU = "tiny ReLU (the source's form)"  # RS-5's model in the source's own form (ReLU, no biases)


# --------------------------------------------------------------------------- statistics


def one_sided_tau_p(values, direction: str) -> tuple[float, float]:
    """Kendall τ(layer, values) and its one-sided p for the stated direction ("up": τ > 0): the
    depth trends of 002 read by RS-4 (residual norm growth) and RS-6 ("Logit Lens" rank)."""
    tau, p = stats.kendall_tau(np.arange(len(values)), values)
    toward = tau > 0 if direction == "up" else tau < 0
    return float(tau), float(p / 2 if toward else 1 - p / 2)


def gmean(values) -> float:
    """Geometric mean (of RS-3's per-seed weight-gradient ratios: multiplicative noise)."""
    return float(np.exp(np.mean(np.log(values))))


# --------------------------------------------------------------------------- text read by the pretrained models


@dataclass
class Text:
    """One model's reading of the corpus: held-out windows (n, T+1) from the test split and their
    pre-norm residual states (n, L+1, T, d); for the tuned-lens models also training windows
    from the validation split (else None)."""

    name: str
    model: torch.nn.Module
    ids: torch.Tensor
    resid: torch.Tensor
    train_ids: torch.Tensor | None = None
    train_resid: torch.Tensor | None = None


def lens_models(names: list[str], sizes) -> list[str]:
    """RS-8's models: the first `lens.models` of the run's models (all when None)."""
    k = sizes["lens"]["models"]
    return list(names)[:k] if k else list(names)


def read_texts(
    model_names: Iterable[str], load: Callable, sizes, *, corpus: str = "brown", device: torch.device | str = "cpu"
) -> dict[str, Text]:
    """name → Text for every model `load(name)` gives as (model, tokenizer): the residual stream
    (002 "Residual Stream Decomposition", read by the logit and tuned lens of 002 "Logit Lens")
    on windows of T+1 tokens of `corpus` (--corpus), evenly spaced through each split's stream,
    on `device`. Every window is read whole: position 0, the attention sink, is left out by the
    measures, not here."""
    model_names = list(model_names)
    T = sizes["text"]["seq_len"]
    out = {}
    for name in model_names:
        model, tok = load(name)
        if tok is None:
            raise ReproError(
                f"--model {name}: the residual-stream claims read text, which needs the "
                "model's tokenizer; this checkpoint has none (pass a directory saved with one)"
            )
        ids = data.windows(tok, "test", sizes["text"]["test_seqs"], T + 1, corpus=corpus).to(device)
        # logits_to_keep=1: the claims read logits through the lens, not the model's own head
        text = Text(name, model, ids, activations.capture(model, ids[:, :-1], modules=[], logits_to_keep=1).residual)
        if name in lens_models(model_names, sizes):
            text.train_ids = data.windows(tok, "validation", sizes["lens"]["train_seqs"], T + 1, corpus=corpus).to(
                device
            )
            text.train_resid = activations.capture(model, text.train_ids[:, :-1], modules=[], logits_to_keep=1).residual
        out[name] = text
    return out


def random_init_models(s, *, corpus: str = "brown", device: torch.device | str = "cpu"):
    """HF GPT-2 and Llama at random init (001 App B.1) with norm gains 1 + 0.3·N(0,1) and
    biases 0.3·N(0,1) (`s`: the profile's `random_init` row), and windows of `corpus` under the
    Brown BPE to feed them: (arch → model, ids (n_seq, seq_len + 1)), on `device`."""
    models = {
        arch: build_model(
            arch,
            n_layer=s["n_layer"],
            n_head=s["n_head"],
            d_model=s["d_model"],
            vocab_size=s["vocab_size"],
            seed=0,
            perturb_norms=s["perturb_norms"],
        ).to(device)
        for arch in s["archs"]
    }
    tok = data.brown_tokenizer(s["vocab_size"])
    ids = data.windows(tok, "test", s["n_seq"], s["seq_len"] + 1, corpus=corpus).to(device)
    return models, ids


# --------------------------------------------------------------------------- RS-1, RS-2


def decompose_all(texts: dict[str, Text], random_init, dla_len: int) -> dict:
    """name → (model, ids (1, dla_len + 1), Decomposition of ids[:, :-1]) (002 "Residual Stream
    Decomposition"): the embedded models on held-out text, the random-init ones on the same text
    under the Brown BPE; shared by RS-1 and RS-2 ("Direct Logit Attribution")."""
    n = dla_len + 1
    out = {name: (t.model, t.ids[:1, :n]) for name, t in texts.items()}
    out.update({f"random-init {arch}": (m, random_init[1][:1, :n]) for arch, m in random_init[0].items()})
    return {name: (model, ids, rs.decompose(model, ids[:, :-1])) for name, (model, ids) in out.items()}


# --------------------------------------------------------------------------- RS-3


@dataclass
class Gradients:
    """RS-3's measurements. rows: pre- and post-norm TinyDecoders (LayerNorm, RoPE, GELU) at
    each depth and seed at the source's init (`rs.xavier_init_`, embeddings read ×√d); no_skip:
    the pre-norm stacks at the deepest depth without their skip connections (the control of the
    identity path); b1: the post-norm stack at the deepest depth at 001 App B.1's init (std
    0.02, residual projections damped by 1/√(2L)), one seed (context: the old reading)."""

    rows: list[dict]
    no_skip: dict
    b1: dict


def flow_row(
    ids,
    s,
    position: str,
    depth: int,
    seeds,
    *,
    residual: bool = True,
    source_init: bool = True,
    device: torch.device | str = "cpu",
    beat: Heartbeat | None = None,
) -> dict:
    """002 "Pre-Norm Gradient Flow" for one stack (`position`-norm, `depth` layers) over `seeds`:
    `rs.gradient_flow` of each seed's TinyDecoder on `ids`, on `device`. The source's init
    (`rs.xavier_init_`) is drawn there, from a generator of that device: on the CPU the numbers
    of a CPU run; on a GPU other draws of the same distribution, made in milliseconds where the
    CPU spent ≈ 150 s of a paper run's host time on 2,436 layers of width 768 (on an H200 host).
    App B.1's init (`source_init=False`, one stack) is drawn on the CPU and moved. `beat`: a
    progress line per seed's stack (`repro.ground.progress`)."""
    cfg = TinyConfig(
        vocab_size=GRAD_V,
        d_model=s["d_model"],
        n_layer=depth,
        n_head=s["n_head"],
        max_len=s["seq_len"],
        norm_position=position,
        final_norm=position == "pre",
        residual=residual,
    )
    flows = []
    for seed in seeds:
        if source_init:
            model = rs.xavier_init_(TinyDecoder(cfg, init=False).to(device), generator(seed, device=device))
        else:
            model = TinyDecoder(cfg, generator(seed)).to(device)
        flows.append(rs.gradient_flow(model.train(), ids, embed_scale=math.sqrt(s["d_model"]) if source_init else 1.0))
        if beat is not None:
            beat.advance(note=f"{position}-norm, {depth} layers, seed {seed}")
    return dict(
        position=position,
        depth=depth,
        seeds=list(seeds),
        ratio=[f.ratio for f in flows],
        param_ratio=[f.param_ratio for f in flows],
        share=[f.identity_share for f in flows],
    )


def gradients(s, *, corpus: str = "brown", device: torch.device | str = "cpu") -> Gradients:
    """All fed one batch of windows of `corpus` (--corpus) under the Brown BPE (`s`: the
    profile's `grad` row)."""
    ids = data.windows(data.brown_tokenizer(GRAD_V), "train", s["batch_size"], s["seq_len"] + 1, corpus=corpus).to(
        device
    )
    n_stacks = (2 * len(s["depths"]) + 1) * len(s["seeds"]) + 1
    beat = Heartbeat("RS-3 gradient flow", n_stacks, unit="stacks")
    rows = [
        flow_row(ids, s, position, depth, s["seeds"], device=device, beat=beat)
        for position in ("pre", "post")
        for depth in s["depths"]
    ]
    deepest = max(s["depths"])
    return Gradients(
        rows,
        flow_row(ids, s, "pre", deepest, s["seeds"], residual=False, device=device, beat=beat),
        flow_row(ids, s, "post", deepest, s["seeds"][:1], source_init=False, device=device, beat=beat),
    )


def post_norm_power(deep: dict) -> Power | None:
    """The power of RS-3's post-norm check at the deepest stack (`deep`: its row of
    `Gradients.rows`). The source gives no number; its "lose gradient" is read as the first block
    getting at most a quarter of the last block's weight gradient (a factor 4, twice our bar of 2).
    Noise: the seeds' spread of log(ratio) (multiplicative noise), taken at its 95% upper bound
    (`stats.sd_upper_bound`): from a few seeds the plug-in sd is optimistic, and this power can
    make the test read contradicted. The factor 4 is our reading of "lose gradient", so the claim's
    edge as we read it (the bar of 2 leaves a margin): size 1 − power. None with fewer than two
    seeds or no spread."""
    logs = np.log(deep["param_ratio"])
    n = len(logs)
    sd = float(np.std(logs, ddof=1)) if n > 1 else float("nan")
    effect, bar = math.log(0.25), math.log(0.5)
    if not (np.isfinite(sd) and sd > 0):
        return None
    sd_hi = stats.sd_upper_bound(sd, n)

    def at(k: int) -> float:
        return stats.power_threshold(effect, bar, sd_hi / math.sqrt(k), "le")

    n80 = stats.n_for_power(at)
    return Power(
        at(n),
        covers=("‖∇W block 1‖ / ‖∇W block L‖",),
        edge=0.0,
        sd="upper bound",
        effect=f"first/last block weight-gradient ratio 0.25 at L={deep['depth']}",
        effect_value=0.25,
        basis="interest: the source gives no number; 'lose gradient' read as a factor 4 (twice our bar of 2)",
        test="geometric mean over seeds of the first/last weight-gradient ratio ≤ 0.5",
        sample=f"{n} seeds at L={deep['depth']}",
        method=f"closed form: normal approximation on the mean log ratio; nuisance: the sd of log ratio over the "
        f"{n} seeds at its 95% upper bound {sd_hi:.3f} (sample sd {sd:.3f})",
        decide=f"{n80} seeds" if n80 else "more than 100,000 seeds",
        decide_either=stats.either_way(at, "seeds"),
        direction_p=stats.one_sample_t(logs, 0.0, alternative="less").p,
    )


# --------------------------------------------------------------------------- RS-4


def residual_norm_curves(
    texts: dict[str, Text], random_init, s, *, device: torch.device | str = "cpu"
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Median ‖x^(l)‖ per layer (`rs.residual_norms`) of every pretrained and random-init model,
    and of the negative control: a post-norm stack of the random-init models' size (`s`: the
    profile's `random_init` row) on the same windows — the stream itself is normalised after
    every block ("no normalization on the residual stream itself" is the source's reason for
    the growth). Returns (name → curve, the control's curve)."""
    curves = {n: rs.residual_norms(t.resid).cpu().numpy() for n, t in texts.items()}
    models, ids = random_init
    for arch, model in models.items():
        cap = activations.capture(model, ids[:, :-1], modules=[], logits_to_keep=1)
        curves[f"random-init {arch}"] = rs.residual_norms(cap.residual).cpu().numpy()
    post = TinyDecoder(
        TinyConfig(
            vocab_size=s["vocab_size"],
            d_model=s["d_model"],
            n_layer=s["n_layer"],
            n_head=s["n_head"],
            max_len=s["seq_len"],
            norm_position="post",
            final_norm=False,
        ),
        generator(0),
    ).to(device)
    with torch.no_grad():
        post_resid = torch.stack(post(ids[:, :-1], output_hidden_states=True).hidden_states, dim=1)
    return curves, rs.residual_norms(post_resid).cpu().numpy()


# --------------------------------------------------------------------------- RS-5


@dataclass
class FFNRewrite:
    """RS-5's measurements. ratios / dropped: model → per layer, max |Σ_i c_i v_i − FFN(x)| over
    Higham's float32 bound F·u·Σ|c_i||v_i| (+ u·|b|), and the same for the sum without the
    median key (the control); relu_literal: the tiny ReLU model's coefficients equal max(w1_i·x, 0)
    bit for bit; relu_active: its share of active keys (c_i > 0)."""

    ratios: dict[str, list[float]]
    dropped: dict[str, list[float]]
    relu_literal: bool
    relu_active: float


def ffn_rewrite(texts: dict[str, Text], dla_len: int, *, device: torch.device | str = "cpu") -> FFNRewrite:
    """002 "FFN as Key-Value Memory" on every pretrained model (its first held-out window's first
    `dla_len` tokens) and on a tiny ReLU TinyDecoder without biases (the source's form; random
    tokens), on `device`."""
    relu = TinyDecoder(
        TinyConfig(vocab_size=512, d_model=128, n_layer=2, n_head=4, activation="relu", bias=False), generator(0)
    ).to(device)
    models = {**{n: t.model for n, t in texts.items()}, RELU: relu}
    ratios_by, dropped_by = {}, {}
    for name, model in models.items():
        ids = (
            texts[name].ids[:1, :dla_len]
            if name in texts
            else torch.randint(0, 512, (1, dla_len), generator=generator(1)).to(device)
        )
        amap = lens.arch_map(model)
        cap = activations.capture(model, ids, modules=["mlp_in"], logits_to_keep=1)
        ratios, dropped = [], []
        for l, block in enumerate(amap.blocks(model)):
            mlp = lens.resolve(block, amap.mlp)
            x = cap.modules["mlp_in"][l]
            with torch.no_grad():
                y = mlp(x).double()
            kv = rs.ffn_key_value(mlp, x)
            F = kv.coeffs.shape[-1]
            # Higham's bound for the module's float32 down-projection (same coefficients):
            # |error| ≤ F·u·Σ_i |c_i||v_i| per output coordinate.
            bound = F * rs.F32_U * (kv.coeffs.double().abs() @ kv.values.double().abs())
            if kv.bias is not None:
                bound = bound + rs.F32_U * kv.bias.double().abs()
            sum_kv = kv.output()
            ratios.append(float(((sum_kv - y).abs() / bound.clamp_min(1e-30)).max()))
            # negative control: the sum with one key–value pair left out, the key of median total
            # contribution Σ_t |c_i(t)|·max|v_i| (a typical key, neither dead nor dominant)
            contrib = kv.coeffs.double().abs().flatten(0, -2).sum(0) * kv.values.double().abs().amax(-1)
            i = int(contrib.argsort()[F // 2])
            term = kv.coeffs[..., i : i + 1].double() * kv.values[i].double()
            dropped.append(float(((sum_kv - term - y).abs() / bound.clamp_min(1e-30)).max()))
        ratios_by[name], dropped_by[name] = ratios, dropped
    # the ReLU model's coefficients are literally max(w1_i·x, 0)
    x = torch.randn(16, 128, generator=generator(2)).to(device)
    kv = rs.ffn_key_value(relu.blocks[0].mlp, x)
    literal = (x @ relu.blocks[0].mlp.up_proj.weight.detach().T).clamp_min(0)
    return FFNRewrite(
        ratios_by, dropped_by, bool(torch.equal(kv.coeffs, literal)), float((kv.coeffs > 0).float().mean())
    )


# --------------------------------------------------------------------------- RS-6


def rank_curve(model, resid, ids):
    """Median (and quartiles) of the logit-lens rank of the next token per layer; token count."""
    ranks = lens.logit_lens_ranks(model, resid[:, :, 1:], ids[:, 2:]).flatten(1).double()  # (L+1, N)
    q = torch.quantile(ranks, torch.tensor([0.25, 0.5, 0.75], dtype=torch.double, device=ranks.device), dim=1)
    q = q.cpu()
    return q[1].numpy(), q[0].numpy(), q[2].numpy(), int(ranks.shape[1])


def twin_rank_curve(text: Text, n_tokens: int) -> np.ndarray:
    """The median rank curve of a random-init twin of `text.model` (same architecture, tied
    embeddings stay tied; `random_init_twin`, on the model's device) on the first held-out
    window's first `n_tokens` tokens: RS-6's negative control."""
    twin = random_init_twin(text.model, 0)
    twin_ids = text.ids[:1, : n_tokens + 1]
    twin_resid = activations.capture(twin, twin_ids[:, :-1], modules=[], logits_to_keep=1).residual
    twin_med = rank_curve(twin, twin_resid, twin_ids)[0]
    del twin, twin_resid
    return twin_med


# --------------------------------------------------------------------------- RS-7


@dataclass
class InductionStudy:
    """RS-7's runs: (n_layer, seed) → InductionRun for 1 and 2 layers, with the references the
    claim states: the loss of copying a random earlier token and ln V."""

    cfg: induction.InductionConfig
    seeds: list
    runs: dict
    copy_loss: float
    uniform: float


def induction_study(s, *, device: torch.device | str = "cpu", procs: int = 1) -> InductionStudy:
    """Train (or load) the one- and two-layer attention-only models of every seed on `device`
    (`s`: the profile's `induction` row; `procs` > 1: each first on that many processes under
    torchrun, --train-procs) and score the copy baseline on the held-out sequences."""
    cfg = induction.InductionConfig(**s["config"])
    models = [(n_layer, seed) for n_layer in (1, 2) for seed in s["seeds"]]
    from repro.core import launch

    # on a CPU side by side, one torch thread each (repro.core.launch.train_jobs → pool): a
    # 64-wide model does not use a second core (one 2-layer model: 12.0 s on 2 threads, 15.7 s on
    # 1; float32, on a 2-core CPU)
    launch.train_jobs([induction.train_job(cfg, n_layer, seed) for n_layer, seed in models], procs, device)
    runs = {(n_layer, seed): induction.train_induction(cfg, n_layer, seed, device=device) for n_layer, seed in models}
    held_out = induction.eval_data(cfg)
    copy_loss, uniform = induction.context_copy_loss(held_out), float(np.log(cfg.vocab_size))
    return InductionStudy(cfg, list(s["seeds"]), runs, copy_loss, uniform)


# --------------------------------------------------------------------------- RS-8


@dataclass(frozen=True)
class LensComparison:
    """RS-8 on one model (002 "Logit Lens", its tuned-lens caveat): per layer and held-out token,
    the KL to the model's final distribution of the logit lens (`kl_logit`, (L, N)) and of a tuned
    lens trained on the training windows until its KL on held-out training windows stopped
    improving (`kl_tuned`; `fit`, its training curve and stop); the negative control, a lens that
    reads nothing from the layer — the model's final next-token distribution averaged over the
    training tokens (`kl_const`, (N,), the same at every layer); the one-sided Wilcoxon
    signed-rank p per layer over held-out tokens: tuned < logit (`ps`), constant < logit
    (`ps_const`), tuned < constant (`ps_tuned_const`), logit < constant (`ps_logit_const`)."""

    kl_logit: torch.Tensor
    kl_tuned: torch.Tensor
    kl_const: torch.Tensor
    ps: list[float]
    ps_const: list[float]
    ps_tuned_const: list[float]
    ps_logit_const: list[float]
    n_test: int
    n_train: int
    n_held: int
    fit: lens.StoppedLens

    @property
    def layers(self) -> int:
        return self.kl_logit.shape[0]

    @property
    def tuned_wins(self) -> int:
        """Layers where the tuned lens's mean KL is below the logit lens's."""
        return int((self.kl_tuned.mean(1) < self.kl_logit.mean(1)).sum())

    @property
    def control_wins(self) -> int:
        """Layers where the state-independent lens's mean KL is below the logit lens's."""
        return int((self.kl_const.mean() < self.kl_logit.mean(1)).sum())

    @property
    def tuned_const_wins(self) -> int:  # layers where the tuned lens's mean KL is below the constant's
        return int((self.kl_tuned.mean(1) < self.kl_const.mean()).sum())

    @property
    def logit_const_wins(self) -> int:  # layers where the logit lens's mean KL is below the constant's
        return int((self.kl_logit.mean(1) < self.kl_const.mean()).sum())

    def curves(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean KL per layer of the logit and the tuned lens (Fig: KL by layer)."""
        return self.kl_logit.mean(1).cpu().numpy(), self.kl_tuned.mean(1).cpu().numpy()


def _one_sided(a: torch.Tensor, b: torch.Tensor) -> float:  # Wilcoxon signed-rank p of a < b, paired tokens
    return stats.wilcoxon_signed_rank(a.cpu().numpy(), b.cpu().numpy(), alternative="less").p


def lens_comparison(t: Text, s) -> LensComparison:
    """`LensComparison` of one model's text (`s`: the profile's `lens` row: the training windows,
    how many of them are held out for the stop, the step cap, batch tokens, lr, the evaluation
    interval, patience and least relative gain of the stop rule, and the ridge grid of the start).
    The held-out windows for the stop are the last `held_seqs` training windows (whole windows:
    tokens of one window are not independent); the test windows stay unseen. Position 0 of every
    window is left out (the sink token); the KLs are moved to the CPU (the state-independent one
    stayed on CUDA once, and a GPU paper run failed on the mixed devices)."""
    flat = lambda r: r[:, :, 1:].permute(0, 2, 1, 3).reshape(-1, r.shape[1], r.shape[-1])  # noqa: E731
    k = s["held_seqs"]
    if not 0 < k < t.train_resid.shape[0]:
        raise ReproError(f"RS-8: held_seqs = {k} must leave training windows of the {t.train_resid.shape[0]}")
    train, held, test = flat(t.train_resid[:-k]), flat(t.train_resid[-k:]), flat(t.resid)
    fit = lens.fit_tuned_lens_stopped(
        t.model,
        train,
        held,
        max_steps=s["steps"],
        batch_tokens=s["batch_tokens"],
        lr=s["lr"],
        eval_every=s["eval_every"],
        patience=s["patience"],
        min_gain=s["min_gain"],
        ridges=tuple(s["ridges"]),
        seed=0,
    )
    kl_logit, kl_tuned = lens.lens_kl(t.model, test).cpu(), lens.lens_kl(t.model, test, fit.lens).cpu()  # (L, N)
    kl_const = rs.mean_distribution_kl(t.model, train[:, -1], test[:, -1]).cpu()  # (N,)
    L = kl_logit.shape[0]
    const = kl_const.expand(L, -1)
    return LensComparison(
        kl_logit,
        kl_tuned,
        kl_const,
        [_one_sided(kl_tuned[l], kl_logit[l]) for l in range(L)],
        [_one_sided(const[l], kl_logit[l]) for l in range(L)],
        [_one_sided(kl_tuned[l], const[l]) for l in range(L)],
        [_one_sided(kl_logit[l], const[l]) for l in range(L)],
        test.shape[0],
        train.shape[0],
        held.shape[0],
        fit,
    )


# a smallest effect of interest for RS-8's power: the tuned lens's mean KL a tenth below the other
# lens's at every layer (the other lens's mean KL at that layer sets the scale: the logit lens's
# runs from ≈ 114 nats at layer 0 to ≈ 1.8 at L−1 on SmolLM2, the constant lens's ≈ 3.8)
LENS_EFFECT = 0.1


def lens_power(c: LensComparison, effect: float = LENS_EFFECT, name: str = "") -> Power:
    """RS-8's power at the declared relative `effect` against the logit and the constant lens:
    2L one-sided tests at α = 0.01/L, each with the 95% upper bound of its per-token differences'
    sd (tokens as independent; a paired t for the Wilcoxon test, whose efficiency against it is
    ≥ 0.86), all passing (the product). `name`: the model's, as the checks it covers start with
    (the wins and the largest p against either lens; a test whose p is below α/L at every layer has
    its mean difference in the claimed direction there). The declared effect is the smallest gain
    worth a probe, the claim's edge as we read it: size 1 − power."""
    L, n = c.layers, c.n_test
    alpha = 0.01 / L
    tests = [
        (effect * float(ref.mean()), stats.sd_upper_bound(float((c.kl_tuned[l] - ref).std()), n))
        for l in range(L)
        for ref in (c.kl_logit[l], c.kl_const)
    ]

    def power_at(m: int) -> float:
        return float(np.prod([stats.power_paired_t(e, sd, m, alpha) for e, sd in tests]))

    n80 = stats.n_for_power(power_at)
    pre = f"{name}: " if name else ""
    return Power(
        power_at(n),
        covers=(f"{pre}layers where mean tuned KL <", f"{pre}largest per-layer Wilcoxon p"),
        edge=0.0,
        sd="upper bound",
        effect=f"the tuned lens's mean KL {effect:.0%} below the logit and the constant lens's at every layer",
        effect_value=effect,
        basis="interest: a tenth of the other lens's KL at each layer, the smallest gain worth a probe",
        test=f"2 × {L} one-sided Wilcoxon signed-rank tests at α = 0.01/{L}, all passing",
        sample=f"{n} held-out tokens ({c.n_train} training, {c.n_held} held out for the stop)",
        method="one-sided paired t (noncentral t) per test, sd at its 95% upper bound, product over tests",
        decide=f"{n80} held-out tokens" if n80 else "beyond 100,000 held-out tokens",
        decide_either=stats.either_way(power_at, "held-out tokens"),
    )
