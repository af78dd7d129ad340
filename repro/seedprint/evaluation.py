"""What `repro seedprint` answers are worth: an operating table of detection and
false-alarm rates per mode, on true descendants, on function-preserving rewrites of them, and on
unrelated pairs — each rate with its Wilson interval and its number of pairs.

Pairs (all built by `repro.seedprint.lineage`, cached; sizes: the profile's "seedprint" row):

- descendants: init → trained on Brown; trained → continued on code; init → continued;
  pretrained embedded model → fine-tuned on code (`--pretrained`);
- rewritten descendants: trained → (continued, then rewritten by one function-preserving
  transform of `repro.seedprint.transforms`: the residual basis permuted, MLP units permuted, heads
  permuted, per-dimension scales folded into a norm) — same function, other weights;
- unrelated: untrained inits of different seeds; trained models of different seeds with the same
  data order (001 Table 4c) and with different data orders.

Modes: Algorithm 1 on the final hidden state (the tool's default), Algorithm 1 on the logits,
the authors' released test (`repro.seedprint.released`, rule "tables": coset bottom-k, 400 of
768 dims in proportion, softmax over the selected columns), and Algorithm 1 after a
*cross-fitted alignment* of hidden dimensions (`aligned`): the suspect's dimensions are matched
to the base's by the assignment that maximises |Pearson correlation| over the first half of the
random inputs (Hungarian algorithm), and the test runs on the second half only, so the alignment
cannot manufacture a match on the data it is tested on; its false-alarm rate on unrelated pairs
is measured like the others; and
the matched test (`matched`, `algorithm.matched_test`: whitened responses, the same matching,
a null of random rotations of the suspect through the same pipeline), the CLI's default.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from repro.core import stats
from repro.ground import progress
from repro.ground.cache import atomic_write_text
from repro.ground.runtime import ReproError, atomic_write_json, generator
from repro.seedprint import algorithm as sp
from repro.seedprint import transforms as tf
from repro.seedprint.algorithm import aligned_algorithm_one, logits_m
from repro.seedprint.study import CAL_LEVEL

MODES = ("alg1-hidden", "alg1-logits", "released-hidden", "aligned-hidden", "matched-hidden")
TRANSFORMS: dict[str, Callable[[nn.Module, torch.Generator], nn.Module]] = {
    "residual basis permuted": lambda m, g: tf.permute_residual(m, torch.randperm(tf._d(m), generator=g)),
    "MLP units permuted (every block)": lambda m, g: _every_block(m, g, "mlp"),
    "heads permuted (every block)": lambda m, g: _every_block(m, g, "heads"),
    "norm scales folded (block 0)": lambda m, g: tf.scale_into_norm(
        m, 0, torch.exp(torch.randn(tf._d(m), generator=g))
    ),
}


# rotations of matched_test's null: p ≥ 1/100, so a verdict at α = 0.01 needs the observed
# statistic above every one of them
MATCHED_ROTATIONS = 99


def _every_block(m: nn.Module, g: torch.Generator, what: str) -> nn.Module:
    c = m.config
    for layer in range(int(c.num_hidden_layers)):
        if what == "mlp":
            tf.permute_mlp_hidden(m, layer, torch.randperm(int(c.intermediate_size), generator=g))
        else:
            groups = int(getattr(c, "num_key_value_heads", None) or c.num_attention_heads)
            if groups > 1:
                tf.permute_heads(m, layer, torch.randperm(groups, generator=g))
    return m


@dataclass
class Row:
    group: str  # "descendant" | "rewritten descendant" | "unrelated"
    kind: str
    detected: dict[str, list[bool]] = field(default_factory=dict)  # mode → per pair
    matched: list[tuple[float, float]] = field(default_factory=list)  # matched-hidden: (statistic, null max) per pair

    def rate(self, mode: str) -> dict[str, Any]:
        d = self.detected.get(mode, [])
        k, n = int(sum(d)), len(d)
        ci = stats.binomial_ci(k, n) if n else None
        return {
            "k": k,
            "n": n,
            "rate": k / n if n else float("nan"),
            "wilson95": [ci.low, ci.high] if ci is not None else None,
        }


def _verdicts(fa: dict[str, torch.Tensor], fb: dict[str, torch.Tensor], cfg: sp.SeedPrintConfig) -> dict[str, bool]:
    kw = dict(m=cfg.m, null_trials=cfg.null_trials, seed=cfg.seed)
    kw_logits = {**kw, "m": logits_m(cfg.m, fa["hidden"].shape[1], fa["logits"].shape[1])}
    return {
        "alg1-hidden": sp.algorithm_one(fa["hidden"], fb["hidden"], alpha=cfg.alpha, **kw).same_lineage,
        "alg1-logits": sp.algorithm_one(fa["logits"], fb["logits"], alpha=cfg.alpha, **kw_logits).same_lineage,
        "released-hidden": sp.released_variant(
            fa["hidden"], fb["hidden"], rule=cfg.released_rule, k=cfg.k, alpha=cfg.alpha
        ).same_lineage,
        "aligned-hidden": aligned_algorithm_one(fa["hidden"], fb["hidden"], alpha=cfg.alpha, **kw).same_lineage,
        "matched-hidden": sp.matched_test(
            fa["hidden"], fb["hidden"], rotations=MATCHED_ROTATIONS, seed=cfg.seed, alpha=cfg.alpha
        ),
    }


def operating_table(
    sizes: dict[str, Any],
    *,
    n_untrained: int = 12,
    n_trained: int = 0,
    pretrained: bool = False,
    corpus: str = "brown",
    finetune: dict[str, Any] | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Build every pair, run every mode, and return the table (see the module docstring).
    `n_trained`: lineage bases of further seeds, trained with the same data order as the profile's
    seeds, so that "trained, different seeds, same data order" holds every pair of the
    len(seeds) + n_trained trained models (28 models: 378 pairs, enough for a false-alarm rate of
    0 to bound it by 1% — Wilson 95% upper limit 0.010). `corpus`: what the lineage pre-trains
    on (Brown: the SP claims' default, so their cached checkpoints are reused); the code
    continuations and fine-tunes stay on stdlib code. `finetune`: overrides of the profile's
    pretrained fine-tune (`finetune_steps`, `finetune_lr`); how far each fine-tune moved its model
    is in the table's "pretrained_movement"."""
    import copy

    from repro.seedprint.lineage import Lineage, LineageConfig

    cfg_l = LineageConfig.from_sizes(sizes["lineage"])  # the SP claims' models (cache hits); snapshots include 0
    if 0 not in cfg_l.snapshot_steps:
        raise ReproError("the seedprint lineage row must keep a snapshot at step 0 (the init)")
    lin = Lineage(cfg_l, corpus=corpus)
    seeds = list(sizes["seeds"])
    spc = sp.SeedPrintConfig(n=sizes["n"], length=sizes["length"], m=sizes["m"])
    g = generator(0)
    inputs = None
    cache: dict[str, dict[str, torch.Tensor]] = {}
    # a line on repro.progress at most every 30 s while the pairs are read (≈ 7.5 min silent on 2
    # cores after the models trained): pairs done of those below (the pretrained rows add more)
    n, t = len(seeds), len(TRANSFORMS)
    n_pairs = n * (3 + t) + math.comb(n + n_trained, 2) + math.comb(n, 2) + math.comb(n_untrained, 2)
    beat = progress.Heartbeat(
        "seedprint-eval", None if pretrained else n_pairs, unit="pairs read", every_s=progress.EVERY_S
    )

    def resp(name: str, model: nn.Module) -> dict[str, torch.Tensor]:
        nonlocal inputs
        if name not in cache:
            model.eval()
            inputs = sp.random_inputs(model, spc) if inputs is None else inputs
            cache[name] = {
                f: sp.responses(model, inputs, feature=f, batch_size=spc.batch_size) for f in ("hidden", "logits")
            }
            beat.tick(beat.done, f"responses of {name}")
        return cache[name]

    rows: dict[str, Row] = {}

    def add(group: str, kind: str, a: str, b: str) -> None:
        row = rows.setdefault(kind, Row(group, kind))
        for mode, hit in _verdicts(cache[a], cache[b], spc).items():
            if isinstance(hit, sp.MatchedResult):
                row.matched.append((hit.statistic, float(hit.null.max())))
                hit = hit.same_lineage
            row.detected.setdefault(mode, []).append(bool(hit))
        beat.advance(1, kind)

    more = [5000 + i for i in range(n_trained)]
    # every model of the lineage side by side first, where the CPU has cores to spare
    lin.pretrain([lin.base_job(s, data_seed=d) for s in seeds for d in (0, 1)] + [lin.base_job(s) for s in more])
    lin.pretrain([lin.continual_job(lin.base(s), seed=s) for s in seeds])
    for s in seeds:
        log(f"lineage seed {s}")
        base = lin.base(s)
        resp(f"init{s}", lin.snapshot(base, 0, s))
        resp(f"trained{s}", base.model)
        cont = lin.continual(base, seed=s)
        resp(f"continued{s}", cont.model)
        resp(f"trained{s}-order1", lin.base(s, data_seed=1).model)
        for t, fn in TRANSFORMS.items():
            resp(f"continued{s}:{t}", fn(copy.deepcopy(cont.model), g))
    for s in seeds:
        add("descendant", "init → trained", f"init{s}", f"trained{s}")
        add("descendant", "trained → continued on code", f"trained{s}", f"continued{s}")
        add("descendant", "init → continued on code", f"init{s}", f"continued{s}")
        for t in TRANSFORMS:
            add("rewritten descendant", f"trained → continued, {t}", f"trained{s}", f"continued{s}:{t}")
    for s in more:
        resp(f"trained{s}", lin.base(s).model)
    for a, b in itertools.combinations(seeds + more, 2):
        add("unrelated", "trained, different seeds, same data order", f"trained{a}", f"trained{b}")
    for a, b in itertools.combinations(seeds, 2):
        add("unrelated", "trained, different seeds, other data order", f"trained{a}", f"trained{b}-order1")
    extra = [1000 + i for i in range(n_untrained)]
    for s in extra:
        resp(f"init{s}", lin.init(s))
    for a, b in itertools.combinations(extra, 2):
        add("unrelated", "untrained inits, different seeds", f"init{a}", f"init{b}")
    moved: dict[str, dict[str, Any]] = {}
    if pretrained:
        _pretrained_rows({**sizes["pretrained"], **(finetune or {})}, add, resp, g, log, moved)
    table = {
        "sizes": {
            "lineage": cfg_l.as_dict(),
            "n": spc.n,
            "length": spc.length,
            "m": spc.m,
            "m_logits": logits_m(spc.m, cfg_l.d_model, cfg_l.vocab_size),
            "untrained_models": n_untrained,
            "trained_models": len(seeds) + n_trained,
            "matched_rotations": MATCHED_ROTATIONS,
            "alpha": spc.alpha,
        },
        "modes": list(MODES),
        "rows": [
            {
                "group": r.group,
                "kind": r.kind,
                **{m: r.rate(m) for m in MODES},
                "matched_statistic": _spread([x for x, _ in r.matched]),
                "matched_null_max": _spread([y for _, y in r.matched]),
            }
            for r in rows.values()
        ],
    }
    if moved:
        table["pretrained_movement"] = moved
    return table


def _spread(xs: list[float]) -> dict[str, float] | None:
    """min / median / max of a row's per-pair values (the matched test's margin at a glance)."""
    if not xs:
        return None
    import statistics

    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def _pretrained_rows(q: dict[str, Any], add, resp, g, log, moved: dict[str, dict[str, Any]]) -> None:
    """Each embedded model → its code fine-tune (`study.finetune_measured`, the SP-5 fine-tune at
    the profile's sizes: the same cached checkpoint), and the fine-tune rewritten by each
    transform; `moved[name]`: how far the fine-tune moved the model."""
    import copy

    from repro.core.models.embedded import EMBEDDED_MODELS
    from repro.core.models.pretrained import load_pretrained
    from repro.seedprint.study import finetune_measured

    for name in EMBEDDED_MODELS:
        log(f"pretrained {name}")
        m, tok = load_pretrained(name)
        resp(f"{name}", m)
        ft, mv = finetune_measured(m, tok, name=name, ps=q, device="cpu")
        drop, lo, hi = mv.nll_drop()
        moved[name] = {
            "finetune_steps": q["finetune_steps"],
            "finetune_lr": q["finetune_lr"],
            "tokens": mv.tokens,
            "heldout_windows": len(mv.nll_before),
            "heldout_nll_before": float(mv.nll_before.mean()),
            "heldout_nll_after": float(mv.nll_after.mean()),
            "nll_drop": drop,
            "nll_drop_95": [lo, hi],
            "rel_weight_change": mv.rel_change,
        }
        resp(f"{name}-ft", ft)
        add("descendant", "pretrained → fine-tuned on code", name, f"{name}-ft")
        for t, fn in TRANSFORMS.items():
            resp(f"{name}-ft:{t}", fn(copy.deepcopy(ft), g))
            add("rewritten descendant", f"pretrained → fine-tuned, {t}", name, f"{name}-ft:{t}")


def markdown(table: dict[str, Any]) -> str:
    modes = table["modes"]
    head = "| pairs | kind | " + " | ".join(modes) + " |"
    lines = [head, "|" + "---|" * (len(modes) + 2)]
    for r in table["rows"]:
        cells = []
        for m in modes:
            x = r[m]
            lo, hi = x["wilson95"] or (float("nan"), float("nan"))
            cells.append(f"{x['k']}/{x['n']} = {x['rate']:.2f} [{lo:.2f}, {hi:.2f}]")
        lines.append(f"| {r['group']} | {r['kind']} | " + " | ".join(cells) + " |")
    s = table["sizes"]
    lines += [
        "",
        f"Rate of 'same lineage' at α = {s['alpha']} with its 95% Wilson interval: on descendants the "
        "detection rate, on unrelated pairs the false-alarm rate. Lineage models: "
        f"{s['lineage']['n_layer']} layers × {s['lineage']['d_model']}, {s['lineage']['steps']} steps; "
        f"n = {s['n']} random inputs of length {s['length']}, m = {s['m']}.",
    ]
    for name, mv in table.get("pretrained_movement", {}).items():
        lines.append(
            f"{name}'s fine-tune ({mv['finetune_steps']} steps, lr {mv['finetune_lr']:g}, {mv['tokens']:,} "
            f"code tokens, token embedding frozen) moved it: held-out code NLL {mv['heldout_nll_before']:.3f} "
            f"→ {mv['heldout_nll_after']:.3f} (drop {mv['nll_drop']:.3f}, 95% CI [{mv['nll_drop_95'][0]:.3f}, "
            f"{mv['nll_drop_95'][1]:.3f}] over {mv['heldout_windows']} windows), ‖Δθ‖/‖θ‖ = "
            f"{mv['rel_weight_change']:.4f}."
        )
    return "\n".join(lines) + "\n"


# The committed operating table that `repro seedprint` quotes (rates measured by `repro
# seedprint-eval --save` on the lineage models — its `pretrained` provenance says whether the
# embedded models' rows are in it; the committed one's are not — with the provenance it was
# measured under).
OPERATING_TABLE = Path(__file__).with_name("operating_table.json")
GROUPS = {
    "descendant": "detected on true descendants",
    "rewritten descendant": "detected on function-preserving rewrites of descendants",
    "unrelated": "false alarms on unrelated pairs",
}


def cli_mode(variant: str, feature: str, aligned: bool = False, matched: bool = False) -> str:
    """The operating table's mode for what `repro seedprint` ran (variant "paper" is Algorithm 1)."""
    if aligned:
        return "aligned-hidden"
    if matched:
        return "matched-hidden"
    return f"{'alg1' if variant == 'paper' else 'released'}-{feature}"


def calibration(mode: str, table: dict[str, Any] | None = None, path: Path = OPERATING_TABLE) -> dict[str, Any] | None:
    """What the answer of `mode` is worth, from the committed operating table: per group
    (descendants, rewritten descendants, unrelated pairs) the pooled rate with its Wilson 95%
    interval and pair count, and every row of the group; None when no table has this mode."""
    if table is None:
        if not path.exists():
            return None
        import json

        table = json.loads(path.read_text())
    if mode not in table.get("modes", []):
        return None
    prov = table.get("provenance", {})
    out: dict[str, Any] = {
        "mode": mode,
        # a mode re-measured on its own (its column replaced) carries its own provenance
        "provenance": {**prov, **prov.get("per_mode", {}).get(mode, {})},
        "sizes": table.get("sizes", {}),
        "groups": {},
    }
    for group in GROUPS:
        rows = [r for r in table["rows"] if r["group"] == group]
        if not rows:
            continue
        k, n = sum(r[mode]["k"] for r in rows), sum(r[mode]["n"] for r in rows)
        ci = stats.binomial_ci(k, n) if n else None
        out["groups"][group] = {
            "k": k,
            "n": n,
            "rate": k / n if n else float("nan"),
            "wilson95": [ci.low, ci.high] if ci is not None else None,
            "rows": {r["kind"]: r[mode] for r in rows},
        }
    return out


# the level at which a row's false alarms count as above α: SP-6's calibration test (one-sided
# exact binomial test of k false alarms in n pairs against α), one constant for both
ALARM_LEVEL = CAL_LEVEL


def calibration_lines(cal: dict[str, Any] | None) -> list[str]:
    """`repro seedprint`'s account of what its verdict is worth (see `calibration`)."""
    if cal is None:
        return ["what this answer is worth: no operating table for this mode (repro seedprint-eval measures one)"]
    prov = cal["provenance"]
    sz = cal["sizes"]
    lines = [
        f"what this answer is worth ({cal['mode']}; measured by repro seedprint-eval at {prov.get('git_commit', '?')}"
        f", {prov.get('date', '?')}, on {sz.get('lineage', {}).get('n_layer', '?')}-layer lineage models"
        f"{' and the embedded pretrained ones' if prov.get('pretrained') else ''}; rates at α = "
        f"{sz.get('alpha', '?')} with 95% Wilson intervals):"
    ]
    if prov.get("note"):
        lines.append(f"  ({prov['note']})")
    for group, label in GROUPS.items():
        g = cal["groups"].get(group)
        if g is None:
            continue
        lo, hi = g["wilson95"] or (float("nan"), float("nan"))
        lines.append(f"  {label}: {g['k']}/{g['n']} = {g['rate']:.2f} [{lo:.2f}, {hi:.2f}]")
        for kind, x in g["rows"].items():
            lo, hi = x["wilson95"] or (float("nan"), float("nan"))
            lines.append(f"    {kind}: {x['k']}/{x['n']} [{lo:.2f}, {hi:.2f}]")
    alpha = sz.get("alpha", 0.01)
    blind = [
        k.split(", ", 1)[-1]
        for k, x in cal["groups"].get("rewritten descendant", {}).get("rows", {}).items()
        if x["n"] and x["rate"] < 0.5
    ]
    # above α means more false alarms than a level-α test plausibly gives: the one-sided exact
    # binomial test of k in n pairs against α rejects at ALARM_LEVEL (SP-6's calibration test). A
    # rate a little over α by chance is not a defect: an exact test is at α on average, so its
    # measured rate exceeds α on about half the tables (matched test: 3/378 in the bf16 table, 5/378
    # = 0.013, binomial p 0.33, in a float32 run).
    alarms = []
    for k, x in cal["groups"].get("unrelated", {}).get("rows", {}).items():
        p = stats.binomial_tail(x["k"], x["n"], alpha) if x["n"] else 1.0
        if p < ALARM_LEVEL:
            alarms.append(f"{k} ({x['k']}/{x['n']}, binomial p {p:.2g} against α)")
    if blind:
        lines.append(f"  cannot see through: {'; '.join(blind)} (a descendant changed so is called unrelated)")
    if alarms:
        lines.append(f"  false alarms above α on: {'; '.join(alarms)} — a 'same lineage' here is not evidence")
    return lines


def write(table: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    j, md = out_dir / "seedprint_operating_table.json", out_dir / "seedprint_operating_table.md"
    atomic_write_json(j, table)
    atomic_write_text(md, markdown(table))
    return j, md


# `repro seedprint-eval --quick`: toy lineage models (2 layers × 32, 12 steps) and 64 inputs of 8
# tokens — every row and mode of the table in seconds, for the tests; the rates say nothing.
QUICK = dict(
    lineage=dict(
        d_model=32,
        n_layer=2,
        n_head=2,
        vocab_size=4096,
        steps=12,
        continual_steps=6,
        batch_size=4,
        seq_len=16,
        lr=3e-3,
        warmup_steps=2,
        snapshot_steps=(0, 12),
    ),
    seeds=(7, 8),
    n=64,
    length=8,
    m=8,
)  # the logits use m × 4096 / 32 (logits_m)


def main_table(
    profile: str = "ci",
    *,
    pretrained: bool = False,
    n_untrained: int = 12,
    n_trained: int = 24,
    out: str = "artifacts",
    save: bool = False,
    finetune_steps: int | None = None,
    finetune_lr: float | None = None,
    quick: bool = False,
) -> tuple[Path, Path]:
    """The operating table at `profile`'s seedprint sizes (`quick`: QUICK's toy sizes, never saved
    as the committed table), written under `out`; `save` also writes OPERATING_TABLE."""
    from repro.ground.sizes import profile as sizes_profile
    from repro.seedprint.sizes import OVERRIDES, SIZES

    if quick and (save or pretrained or profile != "ci"):
        raise ReproError(
            "--quick builds toy models at its own sizes: it takes no --profile, cannot --save the "
            "committed table, and cannot add --pretrained"
        )
    sizes = QUICK if quick else sizes_profile(profile, SIZES, OVERRIDES).sizes("seedprint")
    if n_untrained < 2:
        raise ReproError("--untrained must be at least 2 (pairs of inits)")
    t0 = time.perf_counter()
    if n_trained < 0:
        raise ReproError("--trained must be at least 0 (further trained lineage bases)")
    finetune = {k: v for k, v in (("finetune_steps", finetune_steps), ("finetune_lr", finetune_lr)) if v is not None}
    if finetune and not pretrained:
        raise ReproError("--finetune-steps / --finetune-lr set the pretrained models' fine-tune: add --pretrained")
    if finetune.get("finetune_steps", 1) < 1 or finetune.get("finetune_lr", 1.0) <= 0:
        raise ReproError("--finetune-steps must be at least 1 and --finetune-lr positive")
    table = operating_table(
        sizes,
        n_untrained=n_untrained,
        n_trained=n_trained,
        pretrained=pretrained,
        finetune=finetune,
        log=lambda s: print(s, flush=True),
    )
    table["profile"] = "quick" if quick else profile
    table["provenance"] = _provenance(time.perf_counter() - t0, pretrained)
    paths = write(table, Path(out))
    if save:
        atomic_write_json(OPERATING_TABLE, table)
    return paths


def _provenance(wall_s: float, pretrained: bool) -> dict[str, Any]:
    """Where the table was measured: commit, date, torch, dtype policy and CPU, wall time."""
    import datetime as dt
    import subprocess

    from repro.ground.runtime import cpu_capability, dtype_name, resolve_dtype

    root = Path(__file__).resolve().parents[2]
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "git_commit": commit,
        "date": dt.date.today().isoformat(),
        "torch": torch.__version__,
        "dtype": dtype_name(resolve_dtype("auto")),
        "cpu": cpu_capability(),
        "wall_s": round(wall_s, 1),
        "pretrained": pretrained,
    }
