"""How the SP claims (and BB-7) record, table and decide what `study` measured (001 §6.1, App B.3).

Nothing here touches the harness's `claim`: each function hands the claim file `Steps`, the
`repro.core.readings` values in the order the claim file applies them (a `Reading` it records, a
`(Reading, Control | None)` pair it asserts through `claim.check`, a `Power` it states), or a table
(title, columns, rows):

- a pair's verdict (`check_pair`: Algorithm 1's t and U tests at α = 0.01, §6.1.1) and the released
  variant's p's, recorded and not asserted (`released_ps`);
- a family of unrelated pairs, "no pair matches" at family-wise α with Holm's adjustment
  (`check_no_false_positive`, its power `power_no_false_positive`: Table 4a), or by the source's
  per-pair rule (`check_pair` on each, its power `power_each_pair`: Table 4c, SP-3);
- Table 5's baselines (`table5`, `baselines_wrong`, `power_baselines`: App B.3.2), Table 6's
  descendants (`descendant_readings`, `table6`, `power_table6`, `descendant_ps`, `check_descendant`,
  `power_finetune_tokens`), Fig 11's checkpoints (`persistence_taus`, `check_persistence`);
- the tables' rows (`row`, `baseline_cells`, under `COLUMNS`), and what §6.1.1's
  Gaussian inputs give (`gaussian_taus`, SP-1).

`NOT_REPRODUCED`: the claims (and profiles) where an earlier run decided the claim does not hold,
with why (read by the claim file's `claim.not_reproduced_if`). The null calibration's records and
SP-6's rate tests are in `null_verdicts`.
"""

from __future__ import annotations

import numpy as np

from repro.core import stats
from repro.core.readings import Control, Power, Reading
from repro.seedprint import algorithm, catalogue
from repro.seedprint import fingerprint_baselines as fb
from repro.seedprint.study import TESTS, Descendant, Persistence

ALPHA = algorithm.ALPHA
#: what a function hands the claim file, in order: a record, an asserted check (with its control), a power
Step = Reading | tuple[Reading, Control | None] | Power
Steps = list[Step]
#: a table for `claim.table`: title, columns, rows
Table = tuple[str, list[str], list[list]]
WHY_SAME = "001 §6.1.1: same lineage iff p < 0.01"
WHY_DIFFERENT = "001 §6.1.1: p ≥ 0.01 — not declared one lineage"

# Table 5, the_stack (1000): the true descendant's PCS at the source's code shift — how far its
# continual training moved the weights (the source does not give the run's length)
SOURCE_STACK_PCS = catalogue.number("SP-4", "stack_pcs")
SOURCE_BASELINES_WRONG = catalogue.number("SP-4", "baselines_wrong")  # Table 5: all four err on The Stack
# 001 Table 6: Llama-2-7B's fine-tunes, all matched (U-test p ≤ 2.0e-3). How far a descendant is
# from its original is read in tokens: PCS resolves only two of them from 1.0000 (finance 0.9979,
# Vicuna 0.9985) and WizardMath (1.8B tokens) and Meditron (48B) read PCS 1.0000, so 1 − PCS is no
# measure of the distance the claim covers. The smallest descendant, Llama-2-finance-7B, trained on 5M.
TABLE6_PCS = catalogue.number("SP-5", "table6_pcs")


# --------------------------------------------------------------------------- table rows


COLUMNS = ["pair", "lineage", "Alg.1 p (t)", "Alg.1 p (U)", "|S|", "mean τ on S", "released p"]


def row(r: dict, source: tuple | None = None) -> list:
    """A pair's row under `COLUMNS`, with the source's (t, U) p appended where given."""
    out = [
        r["pair"],
        "same" if r["same"] else "different",
        f"{r['p_t']:.3g}",
        f"{r['p_u']:.3g}",
        r["n_dims"],
        f"{r['mean_tau']:.4f}",
        f"{r['p_released']:.3g}",
    ]
    return out + (list(source) if source is not None else [])


def baseline_cells(r: dict) -> list[str]:
    """The four baselines' similarities of a row that carries them (`study.with_baselines`), in `fb.METHODS` order."""
    return [f"{r['baselines'][k].similarity:.3f}" for k in fb.METHODS]


def gaussian_taus(rows: list[dict], control: dict) -> Steps:
    """What §6.1.1's Gaussian inputs give (SP-1's second half): the mean τ on S of the unrelated
    pairs beside the same-lineage pair's, context. Inputs that separate lineages put the unrelated
    pairs' τ near 0 and the related pair's above them."""
    return [
        Reading(
            "Gaussian inputs: mean τ on S over the unrelated init pairs", float(np.mean([r["mean_tau"] for r in rows]))
        ),
        Reading(f"mean τ on S, {control['pair']} (same lineage)", control["mean_tau"]),
    ]


# --------------------------------------------------------------------------- one pair, a family of pairs


def check_pair(r: dict, *, control: dict | None = None, source: tuple | None = None) -> Steps:
    """Algorithm 1's verdict on one pair, once per test (t, U): p < α for a same-lineage pair,
    p ≥ α otherwise. `control`: a pair of the opposite lineage, through the same comparison (it
    must be rejected); `source`: the source's (t, U) p for this pair."""
    out: Steps = []
    for j, (key, label) in enumerate(TESTS):
        ctl = (
            None
            if control is None
            else Control(f"{control['pair']} ({'same' if control['same'] else 'different'} lineage)", control[key])
        )
        check = Reading(
            f"{r['pair']}: Alg. 1 {label} p",
            r[key],
            ALPHA,
            compare="le" if r["same"] else "ge",
            why=WHY_SAME if r["same"] else WHY_DIFFERENT,
            source=None if source is None else source[j],
        )
        out.append((check, ctl))
    return out


def released_ps(rows) -> Steps:
    """The released variant's p of each pair: measured and tabled, not asserted (a different method)."""
    return [Reading(f"{r['pair']}: released-variant p (not asserted)", r["p_released"]) for r in rows]


def check_no_false_positive(rows: list[dict], controls: list[dict], source: list | None = None) -> Steps:
    """Algorithm 1's verdict on a family of unrelated pairs (each pair's t and U tests): no pair is
    declared one lineage at family-wise level α, Holm over the family's 2·len(rows) p's (valid
    however the pairs depend on one another: they share models). Each raw p is recorded beside
    its adjusted p. `controls[i]`: a same-lineage pair put in place of pair i, through the same
    Holm adjustment (it must be flagged); `source[i]`: the source's (t, U) p for pair i."""
    ps = [r[key] for r in rows for key, _ in TESTS]
    adjusted = stats.holm(ps)
    out: Steps = []
    for i, (r, ctl) in enumerate(zip(rows, controls)):
        for j, (key, label) in enumerate(TESTS):
            at = 2 * i + j
            swapped = list(ps)
            swapped[at] = ctl[key]
            out.append(
                Reading(
                    f"{r['pair']}: Alg. 1 {label} p, raw (Holm-adjusted below)",
                    r[key],
                    source=None if source is None else source[i][j],
                )
            )
            check = Reading(
                f"{r['pair']}: Alg. 1 {label} p, Holm over {len(ps)} tests",
                float(adjusted[at]),
                ALPHA,
                compare="ge",
                why=f"{WHY_DIFFERENT}, family-wise over the {len(rows)} pairs × 2 tests (Holm)",
            )
            out.append((check, Control(f"{ctl['pair']} (same lineage) in its place", float(stats.holm(swapped)[at]))))
    return out


def power_no_false_positive(n_pairs: int, what: str, basis: str) -> Power:
    """Power of "no pair flagged at family-wise α" when the claim holds (the pairs are unrelated
    and each test keeps its level α): Holm keeps the family-wise error ≤ α under any dependence,
    so the power is ≥ 1 − α and the size of reading the claim as contradicted ≤ α."""
    return Power(
        1.0 - ALPHA,
        effect=f"{what} are unrelated, so each of Alg. 1's two tests flags a pair with probability ≤ α = 0.01",
        basis=basis,
        test=f"Alg. 1's one-sided t and U tests, Holm-adjusted p ≥ α = 0.01 over {2 * n_pairs} tests",
        sample=f"{n_pairs} pairs × 2 tests (pairs share models)",
        method="closed form: Holm's strong family-wise control, P(any adjusted p < α) ≤ α under any "
        "dependence; a lower bound",
        size=ALPHA,
        size_method=f"Holm over the {2 * n_pairs} tests at family-wise α = 0.01: a true claim is "
        "read as not reproduced with probability ≤ 0.01",
        size_at="every pair unrelated, each test at its level α (the claim's edge)",
        covers=("Holm over",),
        edge=0.0,
        decide="any number of pairs (the family-wise size is fixed at α; the power does not grow with n, length or m)",
    )


def power_each_pair(n_pairs: int, what: str, basis: str) -> Power:
    """Power of the source's per-pair rule on a family of unrelated pairs (each pair's t and U p
    ≥ α, `check_pair`; 001 §6.1.1 reads every pair on its own, p < 0.01 ⇒ same lineage): when the
    claim holds each of the 2·n tests flags with probability ≤ α, so no test flags with probability
    ≥ 1 − 2nα under any dependence (Bonferroni), and a true claim fails with at most 2nα — no
    adjustment hides a flagged pair, and the size grows with the family."""
    m = 2 * n_pairs
    return Power(
        max(0.0, 1.0 - m * ALPHA),
        effect=f"{what} are unrelated, so each of Alg. 1's two tests flags a pair with probability ≤ α = 0.01",
        basis=basis,
        test=f"each pair's one-sided t and U p ≥ α = 0.01 on its own (the source's rule), {m} tests",
        sample=f"{n_pairs} pairs × 2 tests (pairs share models)",
        method=f"closed form: Bonferroni, P(no test of {m} flags) ≥ 1 − {m}α under any dependence; a lower bound",
        size=min(1.0, m * ALPHA),
        size_method=f"Bonferroni: a true claim fails one of the {m} per-pair tests with probability ≤ {m}α",
        size_at="every pair unrelated, each test at its level α (the claim's edge)",
        covers=("Alg. 1",),
        edge=0.0,
        decide=f"no number of pairs reads a miss as contradicted at 0.05 once 2n·α > 0.05 (here {m}α = "
        f"{m * ALPHA:.2f}): a flagged pair is a miss, read inconclusive",
    )


def flagged_pairs(rows: list[dict]) -> str:
    """The pairs whose raw t or U p is below α (before Holm), with their p's; "none" if none."""
    flagged = [f"{r['pair']} (t {r['p_t']:.2g}, U {r['p_u']:.2g})" for r in rows if min(r["p_t"], r["p_u"]) < ALPHA]
    return ", ".join(flagged) or "none"


# --------------------------------------------------------------------------- Table 5's baselines (SP-4)


def table5(rows) -> Table:
    """Table 5 at our scale: both suspects' rows with the four baselines and their code val loss."""
    return (
        "Table 5 (code shift only): base seed 1000 vs continual-trained suspects; source: "
        "the_stack (1000) p 0 / 3.1e-69, Intrinsic 0.489, REEF 0.557, PCS 0.585, ICS 0.123; "
        "the_stack (123) 0.732 / 0.831, 0.445, 0.580, 0.301, 0.026",
        COLUMNS + ["Intrinsic", "REEF", "PCS", "ICS", "suspect code val loss"],
        [row(r) + baseline_cells(r) + [f"{r['val_loss']:.3f}"] for r in rows],
    )


def baselines_wrong(true: dict, distractor: dict) -> tuple[Steps, dict[str, bool]]:
    """Each baseline's similarities on Table 5's two suspects (to record); whether it errs (misses
    the true descendant or accepts the distractor at `fb.THRESHOLD`), per method."""
    wrong, out = {}, []
    for k in fb.METHODS:
        t, d = true["baselines"][k], distractor["baselines"][k]
        out.append(Reading(f"{k}: similarity, true code descendant (threshold 0.8)", t.similarity))
        out.append(Reading(f"{k}: similarity, code distractor (threshold 0.8)", d.similarity))
        wrong[k] = (not t.same_lineage) or d.same_lineage
    return out, wrong


def power_baselines(true: dict) -> Power:
    """The baselines' similarities are deterministic functions of the two models' weights (no
    sampling noise): at the source's effect — every baseline errs, Table 5 — the count check passes
    with probability 1 (`stats.deterministic_power`). The source states that effect at its own
    code shift, which left the true descendant at PCS 0.585; a shorter shift is not the source's
    condition, so the size of reading a failure as contradicted is 0 only where ours moved the
    descendant at least that far, and has no bound below 1 otherwise."""
    pcs = true["baselines"]["pcs"].similarity
    far = pcs <= SOURCE_STACK_PCS
    return Power(
        stats.deterministic_power(SOURCE_BASELINES_WRONG, len(fb.METHODS), "ge"),
        effect=f"all {SOURCE_BASELINES_WRONG} baselines misattribute the code pair at the source's shift",
        effect_value=SOURCE_BASELINES_WRONG,
        basis="source: Table 5, the_stack rows (Intrinsic 0.489, REEF 0.557, PCS 0.585, ICS 0.123 for the true "
        "descendant; every baseline marked ×)",
        test="count of baselines that miss the true descendant or accept the distractor at similarity 0.8, "
        f"≥ {len(fb.METHODS)}",
        sample="one base, its code descendant and the distractor (deterministic scores of fixed weights)",
        method="stats.deterministic_power: no sampling noise, so the declared effect is seen with probability 1",
        size=0.0 if far else 1.0,
        size_at="the source's code shift (every baseline errs, Table 5)",
        covers=("baselines misattributing the code pair",),
        size_method=(
            f"the descendant moved as far as the source's (PCS {pcs:.3f} ≤ {SOURCE_STACK_PCS}): a "
            "deterministic check fails a true claim with probability 0"
            if far
            else f"our code shift left the descendant at PCS {pcs:.3f} > the source's {SOURCE_STACK_PCS}: "
            "the source's effect is stated at a longer shift than ours, so a true claim may fail "
            "here; no bound below 1"
        ),
        decide=f"a continual training that moves the true descendant to PCS ≤ {SOURCE_STACK_PCS} (Table 5; the "
        "paper profile's 5,000 steps of 32 × 1024 tokens)",
    )


# --------------------------------------------------------------------------- Fig 11's persistence (BB-7)


def persistence_taus(fig11: Persistence, m: int) -> Steps:
    """Mean τ per checkpoint, own lineage and the other-seed baseline (context)."""
    out: Steps = []
    for step, own, other in zip(fig11.steps, fig11.lineage, fig11.baseline):
        out.append(Reading(f"step {step}: mean τ, same init (top-{m} dims)", float(own.mean())))
        out.append(Reading(f"step {step}: mean τ, other-seed baseline", float(other.mean())))
    return out


def check_persistence(fig11: Persistence) -> Steps:
    """Shifted upward at every checkpoint after init (Bonferroni-corrected Mann–Whitney p ≤ α), with
    the negative control at the last checkpoint: another unrelated trained model (seed 2000) in place
    of seed 42's own — the "shifted upward" comparison must not hold between two other seeds."""
    steps = fig11.steps
    last = steps[-1]
    control = Control("seed 2000's trained model in place of seed 42's", fig11.p_control)
    out: Steps = []
    for step, p in zip(steps, fig11.ps):
        if step == 0:
            continue
        check = Reading(
            f"step {step}: Mann–Whitney p (lineage > baseline), Bonferroni",
            p,
            ALPHA,
            compare="le",
            why="shifted upward at every checkpoint; α = 0.01 after Bonferroni",
        )
        out.append((check, control if step == last else None))
    return out


# --------------------------------------------------------------------------- Table 6's descendants (SP-5)


def descendant_readings(d: Descendant, ps: dict) -> Steps:
    """How far a fine-tune moved (tokens, held-out code NLL, weight change, 1 − PCS), its p's against
    a random-init model of its config (recorded, not the control) and the real null's tokens.
    `ps`: the profile's "pretrained" row."""
    drop, lo, hi = d.nll_drop()
    out: Steps = [
        Reading(
            f"{d.name}: fine-tune tokens (stdlib code, token embedding frozen, lr {ps['finetune_lr']:g})", d.tokens
        ),
        Reading(
            f"{d.name}: held-out code NLL before → after ({len(d.nll_before)} windows × "
            f"{ps['finetune_seq_len']} tokens)",
            f"{d.nll_before.mean():.3f} → {d.nll_after.mean():.3f}",
        ),
        Reading(f"{d.name}: held-out code NLL drop, 95% t-interval over windows", f"{drop:.3f} [{lo:.3f}, {hi:.3f}]"),
        Reading(f"{d.name}: relative weight change ‖Δθ‖/‖θ‖ of the fine-tuned parameters", d.rel_change),
        Reading(
            f"{d.name}: 1 − PCS between original and fine-tune (fine-tuned parameters)",
            d.one_minus_pcs,
            why="Table 6 resolves PCS from 1.0000 for two descendants only (finance "
            f"{1.0 - TABLE6_PCS['Llama-2-finance-7B']:.1e}, Vicuna {1.0 - TABLE6_PCS['Vicuna-1.5-7B']:.1e}); "
            "context",
        ),
    ]
    for key, label in TESTS:
        out.append(
            Reading(
                f"{d.name} vs a random-init model of its config: Alg. 1 {label} p (recorded, not the control)",
                d.null[key],
            )
        )
    out.append(
        Reading(f"{d.name}: unrelated trained model of its config (the real null): tokens trained", d.null_tokens)
    )
    return out


def table6(cfg: algorithm.SeedPrintConfig, rows: list[dict]) -> Table:
    """Table 6 at our scale: each original against its fine-tune, a random-init and an unrelated trained model."""
    return (
        f"Table 6 at our scale: embedded models vs code fine-tunes, vs a random-init model and vs an unrelated "
        f"trained model of the same config (n={cfg.n}, length={cfg.length}, m={cfg.m}); source: Llama-2-7B "
        f"descendants, U-test p 1.3e-41 … 2.0e-3",
        COLUMNS,
        [row(r) for r in rows],
    )


def power_table6(cfg: algorithm.SeedPrintConfig, out: dict[str, Descendant]) -> tuple[Power, bool]:
    """The source's descendants are matched at p ≤ 2.0e-3 (CodeLlama, 500B tokens) to 1e-100; at its
    smallest descendant's p (1.3e-41) each test passes with probability ≈ 1, given the real null is
    there to test against. Also returns whether every descendant's real null was built."""
    built = all(d.trained_null is not None for d in out.values())
    power = Power(
        float(built),
        covers=(),
        effect="fine-tunes match their original at the source's p (Table 6: U-test p 1.3e-41 for the "
        "smallest descendant) and an unrelated trained model of the config does not",
        basis="source: Table 6 (every Llama-2-7B descendant matched, U-test p ≤ 2.0e-3)",
        test="Alg. 1's one-sided t and U tests at α = 0.01, the descendant p < α with the unrelated trained "
        "model (p ≥ α) as control",
        sample=f"{len(out)} model(s), n = {cfg.n} inputs of {cfg.length} tokens, m = {cfg.m}",
        method="deterministic: the test can pass only where the profile trains the real null "
        "(pretrained.null_train_steps); at the source's p the descendant's tests pass with probability ≈ 1",
        decide="an unrelated model of the original's config trained far enough to carry learned features "
        "(the paper profile's null_train_steps, on a GPU)",
    )
    return power, built


def descendant_ps(out: dict[str, Descendant]) -> str:
    """Each descendant's (t, U) p against its original and the random-init null's, in one line."""
    return "; ".join(
        f"{d.name}: descendant p (t, U) {d.pair['p_t']:.2g}, {d.pair['p_u']:.2g}; "
        f"random-init null {d.null['p_t']:.2g}, {d.null['p_u']:.2g}"
        for d in out.values()
    )


def check_descendant(d: Descendant, built: bool) -> Steps:
    """Table 6's match of one descendant: the fine-tune must have moved the model before its match
    means anything, the real null must be there (`built`: every descendant's), and the pair and
    the real null are each other's negative control."""
    learned = Reading(
        f"{d.name}: held-out code NLL drop, lower 95% bound (nats/token)",
        d.nll_drop()[1],
        0.0,
        compare="ge",
        why="the descendant measurably learned the shift corpus",
    )
    null_built = Reading(
        f"{d.name}: an unrelated trained model of its config was built (the real null)",
        built,
        compare="true",
        why="Table 6's match means something only against a null that could pass",
    )
    if d.trained_null is None:  # the null check fails first: there is no pair to test against it
        return [(learned, None), (null_built, None)]
    return [
        (learned, None),
        (null_built, None),
        *check_pair(d.pair, control=d.trained_null),
        *check_pair(d.trained_null, control=d.pair),
    ]


def power_finetune_tokens(ps: dict, bar: float) -> Power:
    """Whether the profile's fine-tune reaches Table 6's smallest descendant's `bar` tokens:
    deterministic (the profile's planned tokens, not a measurement). `ps`: the "pretrained" row."""
    planned = ps["finetune_steps"] * ps["finetune_batch"] * ps["finetune_seq_len"]  # the profile's, not a measurement
    return Power(
        stats.deterministic_power(planned, bar, "ge"),
        covers=(),
        effect=f"descendants fine-tuned on ≥ {bar:.0e} tokens still match (Table 6: Llama-2-finance-7B, 5M "
        "tokens, U-test p 1.3e-41)",
        basis="source: Table 6 (the smallest descendant's fine-tuning tokens)",
        test=f"fine-tune tokens ≥ {bar:.0e}, with the match asserted by the test above",
        sample=f"the profile's fine-tune: {ps['finetune_steps']} steps × {ps['finetune_batch']} × "
        f"{ps['finetune_seq_len']} tokens",
        method="deterministic: the profile's token budget either reaches the source's smallest descendant "
        "or not (no sampling noise)",
        decide=f"finetune_steps × finetune_batch × finetune_seq_len ≥ {bar:.0e} (e.g. 153 steps of 32 × 1024 "
        "tokens; the paper profile's 500 steps reach 16M), on a GPU",
    )


# --------------------------------------------------------------------------- what earlier runs decided

# (claim, profile) → why the claim does not hold at that profile, decided from earlier runs; the
# run's own numbers are appended (Claim.not_reproduced_if)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SP-1 Gaussian inputs", "ci"): (
        "Algorithm 1 with the Gaussian inputs §6.1.1 states flags every pair of independent inits. Both models "
        "see the same Gaussian vectors, which enter the residual stream as they are (no embedding table of "
        "either model is read), and the final hidden state at the last position keeps a share of its own input "
        "in both: the two responses correlate dimension by dimension whatever the seeds — more than an init "
        "with its own trained model does. The Gaussian null (two independent matrices) has no shared input, so "
        "these inputs do not separate related from unrelated pairs. Random token sequences, which each model "
        "embeds with its own table, do (the test above)."
    ),
    ("SP-4 baselines", "ci"): (
        "not every baseline errs on the code shift: our continual training leaves the true descendant nearer its base "
        "than the source's The Stack run (PCS 0.585 in Table 5), so the weight-cosine baseline (PCS) still attributes "
        "the pair correctly while the others misattribute. The source does not give its continual training's length, "
        "so whether a shift of its size makes every baseline err is decided only where ours reaches its distance "
        "(the paper profile: 5,000 steps of 32 × 1024 tokens)."
    ),
    ("SP-5 real null", "ci"): (
        "the real null of Table 6 — an unrelated *trained* model of the original's config — is not built at ci: "
        "training a 135M-parameter model far enough to carry learned features costs hours on 2 CPU cores (the "
        "fine-tune's 5,120 tokens take about a minute). Against a random-init model (recorded) the match is never "
        "in doubt, and the lineage zoo's calibration shows unrelated trained pairs are flagged more often than "
        "inits, so the match is not asserted against it. The paper profile builds the null (the random-init twin "
        "trained on 500 steps of 32 × 1024 code tokens, as many as its fine-tune)."
    ),
    ("SP-5 at Table 6's distance", "ci"): (
        "our fine-tunes match their originals, but they trained on far fewer tokens than any descendant in Table 6 "
        "(the smallest, Llama-2-finance-7B, on 5M): at ci budgets a fine-tune that still improves held-out code "
        "barely moves the weights (a larger learning rate breaks the model, measured on SmolLM2: lr 1e-3 moved it "
        "1.6% but raised its code NLL by 0.67 nats), so whether SeedPrint still matches at the source's distance is "
        "not tested here."
    ),
}
for _profile in ("ci", "long"):  # long runs ci's sizes here
    NOT_REPRODUCED[("SP-3 trained pairs", _profile)] = (
        "one unrelated pair of trained models with one data order is flagged by the source's per-pair rule "
        "(p < 0.01 ⇒ same lineage; base1000 vs base2000, U p 0.0036 in the ci runs of 2026-11-28): a miss. "
        "Algorithm 1's Gaussian null over-flags unrelated trained models (the operating table: 17 of 378 such "
        "pairs, 4.5α), and 12 tests at α each fail a true claim with probability up to 12α = 0.12, so a miss "
        "here is no contradiction either (inconclusive)."
    )
for _profile in ("ci", "long"):  # long runs ci's sizes here; paper and decide-sp-null pair 700 inits
    NOT_REPRODUCED[("SP-6 bound", _profile)] = (
        "too few independent pairs to bound the false-positive rate near α: 16 disjoint pairs of 32 inits "
        "give a one-sided 95% upper bound of 0.17 even with no false positive, against the 0.03 that "
        "'≈ 1%' asks; ≈ 350 disjoint pairs reach 80% power at a rate of α (--profile decide-sp-null)."
    )
NOT_REPRODUCED[("SP-1 Gaussian inputs", "long")] = NOT_REPRODUCED[
    ("SP-1 Gaussian inputs", "ci")
]  # long runs ci's sizes here
