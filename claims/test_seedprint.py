"""001 §5–6.1 SeedPrint: initialisation biases persist through training and fingerprint a lineage.

One module-scoped "zoo" trains (or loads from the checkpoint cache) the source's lineage at our
scale — LLaMA-style models with seeds 42, 123, 1000, 2000 pre-trained on the run's corpus
(`--corpus`, Brown by default, under the Brown BPE) with one data order, a distractor (seed 123,
another data order), and continual training of seed 1000 and of the distractor on the
standard-library code corpus (the shift, fixed whatever `--corpus` says) — and reads every model's responses to
the same random token sequences once. The tests then apply both SeedPrint variants
(`repro.seedprint.algorithm`: Algorithm 1 as written, and the authors' released variant) to the pairs of
Tables 4a/4b/4c/5, and the four baselines of App B.3.2 where the source reports them.

Verdicts are asserted for Algorithm 1 (the published method; its t and U tests both, at the
source's α = 0.01), each pair through `claim.check` with a pair of the opposite lineage as its
negative control; a family of unrelated pairs ("no pair matches", SP-1, SP-3) is decided at
family-wise α with Holm's adjustment (the pairs share models), its raw p's recorded. The released variant is measured and tabled on every pair but not asserted:
it is a different method, and the tables show where it disagrees.

Algorithm 1's Gaussian null is validated by the source on independent *inits* (App B.3.1,
SP-6); Tables 4c and 5 apply it to *trained* models. `calibration` measures its false-positive
rate on every pair of the zoo's models of different seeds (trained × trained, init × trained),
and the verdicts that rest on such pairs (SP-3, SP-4, SP-5) record what it found.

The experiments (the zoo, the calibration, the fine-tunes, the null pairs, Fig 11's persistence)
are in `repro.seedprint.study`; the fixtures here call it with the profile's sizes and `--device`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from repro.core import data, stats
from repro.harness import catalogue
from repro.seedprint import algorithm as sp
from repro.seedprint import figures, study
from repro.seedprint import fingerprint_baselines as fb
from repro.seedprint.lineage import Lineage, LineageConfig, weight_change
from repro.seedprint.study import Calibration

ALPHA = sp.ALPHA
WHY_SAME = "001 §6.1.1: same lineage iff p < 0.01"
WHY_DIFFERENT = "001 §6.1.1: p ≥ 0.01 — not declared one lineage"
TESTS = study.TESTS  # (result key, label) of Algorithm 1's t and U tests
CAL_LEVEL = study.CAL_LEVEL  # the level of the binomial test of a false-positive rate against α
# the shifted corpus of Table 5 (The Stack) and Table 6 (the fine-tunes) at our scale: part of the
# claims, so fixed whatever --corpus says (which sets what the lineage pre-trains on)
SHIFT = study.SHIFT

# the source's p (t-test, U-test) per pair: 001 Tables 4a, 4b, 4c and Table 5's The Stack rows
TABLE4A = catalogue.number("SP-1", "table4a")  # (seed a, seed b): s_a vs s_b at init
TABLE4B = catalogue.number("SP-2", "table4b")  # seed: s_init vs s_base
# Table 4c's pairs, init → the other seed's trained model: SP-2's negative controls
TABLE4C = catalogue.number("SP-3", "table4c")
TABLE5 = catalogue.number("SP-4", "table5")  # "the_stack (1000)": the true descendant, "(123)": the distractor
SOURCE_BASELINES_WRONG = catalogue.number("SP-4", "baselines_wrong")  # Table 5: all four err on The Stack

# (claim, profile) → why the claim does not hold at that profile, decided from earlier runs; the
# run's own numbers are appended (Claim.not_reproduced_if)
NOT_REPRODUCED: dict[tuple[str, str], str] = {
    ("SP-4 baselines", "ci"): (
        "not every baseline errs on the code shift: our continual training leaves the true descendant nearer its base "
        "than the source's The Stack run (PCS 0.585 in Table 5), so the weight-cosine baseline (PCS) still attributes "
        "the pair correctly while the others misattribute. The source does not give its continual training's length, "
        "so whether a shift of its size makes every baseline err is decided only where ours reaches its distance "
        "(the paper profile: 5,000 steps of 32 × 1024 tokens)."
    ),
    ("SP-5 real null", "ci"): (
        "the real null of Table 6 — an unrelated *trained* model of the original's config — is not built at ci: "
        "training a 135M-parameter model far enough to carry learned features costs hours on 2 CPU cores (the fine-tune's "
        "5,120 tokens take about a minute). Against a random-init model (recorded) the match is never in doubt, and "
        "the lineage zoo's calibration shows unrelated trained pairs are flagged more often than inits, so the match "
        "is not asserted against it."
    ),
    ("SP-5 at Table 6's distance", "ci"): (
        "our fine-tunes match their originals, but they trained on far fewer tokens than any descendant in Table 6 "
        "(the smallest, Llama-2-finance-7B, on 5M): at ci budgets a fine-tune that still improves held-out code "
        "barely moves the weights (a larger learning rate breaks the model, measured on SmolLM2: lr 1e-3 moved it "
        "1.6% but raised its code NLL by 0.67 nats), so whether SeedPrint still matches at the source's distance is "
        "not tested here."
    ),
}


# --------------------------------------------------------------------------- shared experiment


@pytest.fixture(scope="module")
def sizes(profile):
    return profile.sizes("seedprint")


@pytest.fixture(scope="module")
def lab(sizes, corpus_name, device, train_procs):
    return Lineage(LineageConfig.from_sizes(sizes["lineage"]), corpus=corpus_name, device=device, procs=train_procs)


@pytest.fixture(scope="module")
def spcfg(sizes):
    return sp.SeedPrintConfig(n=sizes["n"], length=sizes["length"], m=sizes["m"], inputs="tokens", seed=0)


@pytest.fixture(scope="module")
def zoo(lab, sizes, spcfg):
    return study.build_zoo(lab, sizes["seeds"], spcfg)


@pytest.fixture(scope="module")
def same_lineage(zoo):
    return zoo.same_lineage_pairs()


@pytest.fixture(scope="module")
def reef_inputs(lab):
    """REEF's "same samples" for both models: 64 validation windows of the pre-training corpus."""
    return study.reef_windows(lab)


def _row(r: dict, source: tuple | None = None) -> list:
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


COLUMNS = ["pair", "lineage", "Alg.1 p (t)", "Alg.1 p (U)", "|S|", "mean τ on S", "released p"]


def _check_pair(claim, r: dict, *, control: dict | None = None, source: tuple | None = None) -> None:
    """Algorithm 1's verdict on one pair, once per test (t, U): p < α for a same-lineage pair,
    p ≥ α otherwise. `control`: a pair of the opposite lineage, through the same comparison (it
    must be rejected); `source`: the source's (t, U) p for this pair."""
    for j, (key, label) in enumerate(TESTS):
        kw = (
            {}
            if control is None
            else dict(
                control=control[key],
                control_name=f"{control['pair']} ({'same' if control['same'] else 'different'} lineage)",
            )
        )
        claim.check(
            f"{r['pair']}: Alg. 1 {label} p",
            r[key],
            ALPHA,
            compare="le" if r["same"] else "ge",
            why=WHY_SAME if r["same"] else WHY_DIFFERENT,
            source=None if source is None else source[j],
            **kw,
        )


def _record_released(claim, rows) -> None:
    for r in rows:
        claim.record(f"{r['pair']}: released-variant p (not asserted)", r["p_released"], compare="none")


def _check_no_false_positive(claim, rows: list[dict], controls: list[dict], source: list | None = None) -> None:
    """Algorithm 1's verdict on a family of unrelated pairs (each pair's t and U tests): no pair is
    declared one lineage at family-wise level α, Holm over the family's 2·len(rows) p's (valid
    however the pairs depend on one another: they share models). Each raw p is recorded beside
    its adjusted p. `controls[i]`: a same-lineage pair put in place of pair i, through the same
    Holm adjustment (it must be flagged); `source[i]`: the source's (t, U) p for pair i."""
    ps = [r[key] for r in rows for key, _ in TESTS]
    adjusted = stats.holm(ps)
    for i, (r, ctl) in enumerate(zip(rows, controls)):
        for j, (key, label) in enumerate(TESTS):
            at = 2 * i + j
            swapped = list(ps)
            swapped[at] = ctl[key]
            claim.record(
                f"{r['pair']}: Alg. 1 {label} p, raw (Holm-adjusted below)",
                r[key],
                compare="none",
                source=None if source is None else source[i][j],
            )
            claim.check(
                f"{r['pair']}: Alg. 1 {label} p, Holm over {len(ps)} tests",
                float(adjusted[at]),
                ALPHA,
                compare="ge",
                why=f"{WHY_DIFFERENT}, family-wise over the {len(rows)} pairs × 2 tests (Holm)",
                control=float(stats.holm(swapped)[at]),
                control_name=f"{ctl['pair']} (same lineage) in its place",
            )


def _power_no_false_positive(claim, n_pairs: int, what: str, basis: str) -> None:
    """Power of "no pair flagged at family-wise α" when the claim holds (the pairs are unrelated
    and each test keeps its level α): Holm keeps the family-wise error ≤ α under any dependence,
    so the power is ≥ 1 − α and the size of reading the claim as contradicted ≤ α."""
    claim.power(
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
        decide="any number of pairs (the family-wise size is fixed at α; the power does not grow with n, length or m)",
    )


# --------------------------------------------------------------------------- null calibration


@pytest.fixture(scope="module")
def null_responses(lab, sizes, zoo):
    """Responses of `n_null_models` independent inits on the zoo's inputs."""
    return study.null_responses(lab, sizes["n_null_models"], zoo.inputs)


@pytest.fixture(scope="module")
def calibration(zoo, null_responses, spcfg, sizes) -> dict[str, Calibration]:
    """Alg. 1's false positives on the zoo's trained × trained and init × trained pairs of different seeds."""
    return study.calibrate(zoo, null_responses, spcfg, sizes["calibration_null_inits"])


def _record_calibration(claim, cal: Calibration, depends: str) -> None:
    """What SP-6's calibration found on the kind of pair this verdict rests on."""
    claim.record(f"null calibration on {cal.kind} (SP-6): false positives", cal.summary(), compare="none")
    bad = [label for key, label in TESTS if cal.miscalibrated(key)]
    if bad:
        claim.record(
            "caveat: Alg. 1's Gaussian null is miscalibrated on these pairs",
            f"the {' and '.join(bad)} flag(s) unrelated {cal.kind.split(',')[0]} pairs more often than α "
            f"(model-level bootstrap p < {CAL_LEVEL}, not corrected for the family): {depends}",
            compare="none",
        )


# --------------------------------------------------------------------------- SP-1 (Table 4a)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-1")
def test_different_seeds_do_not_match(claim, zoo, lab, spcfg):
    claim.corpus(lab.base_corpus)  # the controls' trained models
    source = TABLE4A
    rows = [zoo.compare(f"init{a}", f"init{b}", same=False) for a, b in source]
    _record_released(claim, rows)
    # §6.1.1 also states Algorithm 1 with Gaussian input embeddings. Measured here on the same
    # init pair: both models pass the shared input straight through the residual stream, so two
    # unrelated inits correlate on every dimension. Recorded, not asserted (tokens are the default).
    gcfg = sp.SeedPrintConfig(**{**spcfg.__dict__, "inputs": "gaussian"})
    g = sp.seedprint(zoo.models["init42"], zoo.models["init123"], gcfg)
    claim.record(
        "init42 vs init123 with Gaussian inputs: Alg. 1 t-test p (independent inits!)", g.paper.p_t, compare="none"
    )
    claim.record("init42 vs init123 with Gaussian inputs: mean τ on S", float(np.mean(g.paper.taus)), compare="none")
    claim.table(
        "Table 4a: different init seeds (tokens inputs); source p (t, U) in the last columns",
        COLUMNS + ["source p (t)", "source p (U)"],
        [_row(r, s) for r, s in zip(rows, source.values())]
        + [
            [
                "init42 vs init123, Gaussian inputs",
                "different",
                f"{g.paper.p_t:.3g}",
                f"{g.paper.p_u:.3g}",
                len(g.paper.dims),
                f"{np.mean(g.paper.taus):.4f}",
                f"{g.released.p:.3g}",
                "—",
                "—",
            ]
        ],
    )
    claim.figure(figures.seedprint_pvalues(rows, "Table 4a: different seeds (should not match)"), "table4a")
    _power_no_false_positive(
        claim,
        len(rows),
        "Table 4a's init pairs",
        "source: Table 4a (different seeds, all p > 0.01) and §6.1.1's α = 0.01",
    )
    # negative control: init a against its own trained model, where a match must show
    _check_no_false_positive(
        claim, rows, [zoo.compare(f"init{a}", f"base{a}", same=True) for a, _ in source], list(source.values())
    )


# --------------------------------------------------------------------------- SP-2 (Table 4b, Table 8)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-2")
def test_trained_model_matches_its_init(claim, zoo, sizes, reef_inputs):
    claim.corpus(zoo.lab.base_corpus)
    # SP-2 is not a strict xfail at any profile, so no power is recorded: the source gives p's
    # only (no τ's, no |S|), after ≈10B tokens of training where ours trains 300 steps, so its
    # effect size cannot be carried to our sizes.
    source = TABLE4B
    other = {a: b for a, b in TABLE4C}
    rows, table = [], []
    for s in sizes["seeds"]:
        r = zoo.compare(f"init{s}", f"base{s}", same=True)
        rows.append(r)
        base = fb.all_baselines(zoo.models[f"init{s}"], zoo.models[f"base{s}"], reef_inputs)
        for name, b in base.items():
            claim.record(f"{r['pair']}: {name} similarity (baseline, threshold 0.8)", b.similarity, compare="none")
        table.append(_row(r, source.get(s, ("—", "—"))) + [f"{base[k].similarity:.3f}" for k in fb.METHODS])
        claim.record(f"base{s} val loss (nats/token)", zoo.results[f"base{s}"].final_val_loss, compare="none")
    _record_released(claim, rows)
    claim.table(
        "Table 4b (+ Table 8 baselines): init vs its own trained model",
        COLUMNS + ["source p (t)", "source p (U)", "Intrinsic", "REEF", "PCS", "ICS"],
        table,
    )
    claim.figure(figures.seedprint_pvalues(rows, "Table 4b: init vs trained descendant (should match)"), "table4b")
    for s, r in zip(sizes["seeds"], rows):
        # negative control: the same init against another seed's trained model (Table 4c's pair)
        ctl = zoo.compare(f"init{s}", f"base{other[s]}", same=False) if s in other else None
        _check_pair(claim, r, control=ctl, source=source.get(s))


# --------------------------------------------------------------------------- SP-3 (Table 4c)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-3")
def test_same_data_order_does_not_make_seeds_match(claim, zoo, calibration):
    claim.corpus(zoo.lab.base_corpus, shift=SHIFT)  # the calibration's trained models include the code descendants
    rows = [zoo.compare(f"init{a}", f"base{b}", same=False) for a, b in TABLE4C]
    _record_released(claim, rows)
    _record_calibration(claim, calibration["init"], "a pass here is weaker evidence than α promises")
    claim.table(
        "Table 4c: same data, same order, different init seeds (init_i vs base_j)",
        COLUMNS + ["source p (t)", "source p (U)"],
        [_row(r, s) for r, s in zip(rows, TABLE4C.values())],
    )
    claim.figure(figures.seedprint_pvalues(rows, "Table 4c: init_i vs base_j, same data order"), "table4c")
    _power_no_false_positive(
        claim,
        len(rows),
        "Table 4c's init_i vs base_j pairs",
        "source: Table 4c (same data and order, different seeds: all p > 0.01) at α = 0.01",
    )
    # negative control: init a against its own trained model (same data order, same lineage)
    _check_no_false_positive(
        claim, rows, [zoo.compare(f"init{a}", f"base{a}", same=True) for a, _ in TABLE4C], list(TABLE4C.values())
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-3")
def test_trained_models_with_one_data_order_do_not_match(claim, zoo, sizes, profile, calibration):
    """Stronger than the source's pairs: two *trained* models that saw the same batches in the
    same order, every pair of the four seeds; each test (t and U) must keep p ≥ α."""
    claim.corpus(zoo.lab.base_corpus, shift=SHIFT)
    rows = [zoo.compare(f"base{a}", f"base{b}", same=False) for a, b in itertools.combinations(sizes["seeds"], 2)]
    _record_released(claim, rows)
    _record_calibration(
        claim,
        calibration["trained"],
        "a flagged pair here is what the miscalibrated null does on unrelated trained models, "
        "not evidence that one data order makes seeds converge",
    )
    claim.table("Table 4c extended: base_i vs base_j (same data, same order)", COLUMNS, [_row(r) for r in rows])
    claim.figure(figures.seedprint_pvalues(rows, "base_i vs base_j, same data order"), "table4c_trained")
    _power_no_false_positive(
        claim,
        len(rows),
        "trained models of different seeds",
        "source: Table 4c (same data and order do not make seeds match, p > 0.01) at α = 0.01",
    )
    flagged = [f"{r['pair']} (t {r['p_t']:.2g}, U {r['p_u']:.2g})" for r in rows if min(r["p_t"], r["p_u"]) < ALPHA]
    claim.record("pairs with a raw p < α (before Holm)", ", ".join(flagged) or "none", compare="none")
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SP-3 trained pairs", profile.name),
        f"raw p < α: {', '.join(flagged) or 'none'} of {len(rows)} pairs",
    )
    control = zoo.compare("base1000", "base1000+code", same=True)  # a trained pair of one lineage
    _check_no_false_positive(claim, rows, [control] * len(rows))


# --------------------------------------------------------------------------- SP-4 (Table 5)


@pytest.fixture(scope="module")
def table5(zoo, reef_inputs):
    return study.table5_pairs(zoo, reef_inputs)


def _table5(claim, rows) -> None:
    claim.table(
        "Table 5 (code shift only): base seed 1000 vs continual-trained suspects; source: "
        "the_stack (1000) p 0 / 3.1e-69, Intrinsic 0.489, REEF 0.557, PCS 0.585, ICS 0.123; "
        "the_stack (123) 0.732 / 0.831, 0.445, 0.580, 0.301, 0.026",
        COLUMNS + ["Intrinsic", "REEF", "PCS", "ICS", "suspect code val loss"],
        [
            _row(r) + [f"{r['baselines'][k].similarity:.3f}" for k in fb.METHODS] + [f"{r['val_loss']:.3f}"]
            for r in rows
        ],
    )


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-4")
def test_lineage_survives_continual_training_on_code(claim, zoo, table5, calibration):
    claim.corpus(zoo.lab.base_corpus, shift=SHIFT)
    true, distractor = table5
    _record_released(claim, table5)
    claim.record(
        f"base1000 val loss on {data.corpus_title(zoo.lab.base_corpus)} before the code shift",
        zoo.results["base1000"].final_val_loss,
        compare="none",
    )
    claim.record(
        "code shift: relative weight change base1000 → base1000+code (‖Δθ‖/‖θ‖)",
        weight_change(zoo.models["base1000"], zoo.models["base1000+code"]),
        compare="none",
    )
    cal = calibration["trained"]
    _record_calibration(
        claim,
        cal,
        "the distractor's rejection stands (a too liberal null makes it harder, not "
        "easier); the true descendant's match is set against the unrelated trained "
        "pairs' p's below",
    )
    for key, label in TESTS:
        lowest = min(r[key] for r in cal.rows)
        claim.record(
            f"true descendant's {label} p / the smallest of {cal.n} unrelated trained pairs' (empirical null)",
            true[key] / lowest if lowest > 0 else float("nan"),
            compare="none",
        )
    _table5(claim, table5)
    claim.figure(figures.seedprint_pvalues(table5, "Table 5: continual training on stdlib code"), "table5")
    # each suspect is the other's negative control: the distractor must not pass the descendant's
    # check, the true descendant must not pass the distractor's
    _check_pair(claim, true, control=distractor, source=TABLE5["the_stack (1000)"])
    _check_pair(claim, distractor, control=true, source=TABLE5["the_stack (123)"])


# Table 5, the_stack (1000): the true descendant's PCS at the source's code shift — how far its
# continual training moved the weights (the source does not give the run's length)
SOURCE_STACK_PCS = catalogue.number("SP-4", "stack_pcs")


def _power_baselines(claim, true: dict) -> None:
    """The baselines' similarities are deterministic functions of the two models' weights (no
    sampling noise): at the source's effect — every baseline errs, Table 5 — the count check passes
    with probability 1 (`stats.deterministic_power`). The source states that effect at its own
    code shift, which left the true descendant at PCS 0.585; a shorter shift is not the source's
    condition, so the size of reading a failure as contradicted is 0 only where ours moved the
    descendant at least that far, and has no bound below 1 otherwise."""
    pcs = true["baselines"]["pcs"].similarity
    far = pcs <= SOURCE_STACK_PCS
    claim.power(
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


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-4")
def test_baselines_fail_on_the_code_shift(claim, table5, profile, lab):
    claim.corpus(lab.base_corpus, shift=SHIFT)
    true, distractor = table5
    wrong = {}
    for k in fb.METHODS:
        t, d = true["baselines"][k], distractor["baselines"][k]
        claim.record(f"{k}: similarity, true code descendant (threshold 0.8)", t.similarity, compare="none")
        claim.record(f"{k}: similarity, code distractor (threshold 0.8)", d.similarity, compare="none")
        wrong[k] = (not t.same_lineage) or d.same_lineage
    _table5(claim, table5)
    claim.figure(figures.baseline_bars(table5, fb.THRESHOLD), "table5_baselines")
    _power_baselines(claim, true)
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SP-4 baselines", profile.name),
        "; ".join(
            f"{k} {true['baselines'][k].similarity:.2f} / {distractor['baselines'][k].similarity:.2f}"
            f" ({'errs' if wrong[k] else 'correct'})"
            for k in fb.METHODS
        ),
    )
    claim.check(
        "baselines misattributing the code pair",
        sum(wrong.values()),
        4,
        compare="ge",
        source=SOURCE_BASELINES_WRONG,
        why="Table 5: every baseline errs on The Stack (a baseline errs if it misses the true descendant "
        "or accepts the distractor at similarity 0.8)",
    )


# --------------------------------------------------------------------------- BB-7 (Fig 11)


@pytest.mark.policy_dtype
@pytest.mark.claim("BB-7")
def test_bias_persists_through_training(claim, zoo, lab, spcfg, sizes):
    """τ between init 42 and each checkpoint of its own training on init 42's top-m mean dims,
    against checkpoints of seed 123's training (the different-seed baseline)."""
    claim.corpus(lab.base_corpus)
    m = spcfg.m
    fig11 = study.persistence(zoo, lab, m)
    steps, lineage, baseline = fig11.steps, fig11.lineage, fig11.baseline
    for step, own, other in zip(steps, lineage, baseline):
        claim.record(f"step {step}: mean τ, same init (top-{m} dims)", float(own.mean()), compare="none")
        claim.record(f"step {step}: mean τ, other-seed baseline", float(other.mean()), compare="none")
    claim.figure(figures.fig11_persistence(steps, lineage, baseline, m), "fig11")
    # negative control at the last checkpoint: another unrelated trained model (seed 2000) in place
    # of seed 42's own — the "shifted upward" comparison must not hold between two other seeds
    last = steps[-1]
    p_ctl = fig11.p_control
    for step, p in zip(steps, fig11.ps):
        if step == 0:
            continue
        kw = dict(control=p_ctl, control_name="seed 2000's trained model in place of seed 42's") if step == last else {}
        claim.check(
            f"step {step}: Mann–Whitney p (lineage > baseline), Bonferroni",
            p,
            ALPHA,
            compare="le",
            why="shifted upward at every checkpoint; α = 0.01 after Bonferroni",
            **kw,
        )


# --------------------------------------------------------------------------- SP-5 (Table 6)

# 001 Table 6: Llama-2-7B's fine-tunes, all matched (U-test p ≤ 2.0e-3). How far a descendant is
# from its original is read in tokens: PCS resolves only two of them from 1.0000 (finance 0.9979,
# Vicuna 0.9985) and WizardMath (1.8B tokens) and Meditron (48B) read PCS 1.0000, so 1 − PCS is no
# measure of the distance the claim covers. The smallest descendant, Llama-2-finance-7B, trained on 5M.
TABLE6_PCS = catalogue.number("SP-5", "table6_pcs")
TABLE6_TOKENS = catalogue.number("SP-5", "table6_tokens")


@pytest.fixture(scope="module")
def finetunes(pretrained, model_names, sizes, device, train_procs):
    """(SeedPrint config, name → Descendant): Table 6's code fine-tunes of the embedded models."""
    ps = sizes["pretrained"]
    return study.finetune_descendants(pretrained, model_names[: ps["finetune_models"]], ps, device, train_procs)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-5")
def test_finetuned_pretrained_models_match(claim, finetunes, calibration, sizes, lab, profile):
    """001 §6.1.2, Table 6: a fine-tune of a pretrained model matches it (p < 0.01), against the
    real null: an unrelated *trained* model of the same config (the random-init twin trained on
    the shift corpus), which Algorithm 1 could flag — the zoo's calibration shows unrelated trained
    pairs are flagged more often than inits. A random-init model of the config is recorded, not used
    as the control: an init is never mistaken for a trained model's relative (SP-6's init × trained)."""
    claim.corpus(lab.base_corpus, shift=SHIFT)  # the fine-tunes read the shift; the calibration, the zoo's corpus
    cfg, out = finetunes
    ps = sizes["pretrained"]
    rows = [r for d in out.values() for r in (d.pair, d.null, d.trained_null) if r is not None]
    for d in out.values():
        drop, lo, hi = d.nll_drop()
        claim.record(
            f"{d.name}: fine-tune tokens (stdlib code, token embedding frozen, lr {ps['finetune_lr']:g})",
            d.tokens,
            compare="none",
        )
        claim.record(
            f"{d.name}: held-out code NLL before → after ({len(d.nll_before)} windows × "
            f"{ps['finetune_seq_len']} tokens)",
            f"{d.nll_before.mean():.3f} → {d.nll_after.mean():.3f}",
            compare="none",
        )
        claim.record(
            f"{d.name}: held-out code NLL drop, 95% t-interval over windows",
            f"{drop:.3f} [{lo:.3f}, {hi:.3f}]",
            compare="none",
        )
        claim.record(
            f"{d.name}: relative weight change ‖Δθ‖/‖θ‖ of the fine-tuned parameters", d.rel_change, compare="none"
        )
        claim.record(
            f"{d.name}: 1 − PCS between original and fine-tune (fine-tuned parameters)",
            d.one_minus_pcs,
            compare="none",
            why="Table 6 resolves PCS from 1.0000 for two descendants only (finance "
            f"{1.0 - TABLE6_PCS['Llama-2-finance-7B']:.1e}, Vicuna {1.0 - TABLE6_PCS['Vicuna-1.5-7B']:.1e}); "
            "context",
        )
        for key, label in TESTS:
            claim.record(
                f"{d.name} vs a random-init model of its config: Alg. 1 {label} p (recorded, not the control)",
                d.null[key],
                compare="none",
            )
        claim.record(
            f"{d.name}: unrelated trained model of its config (the real null): tokens trained",
            d.null_tokens,
            compare="none",
        )
    _record_released(claim, rows)
    _record_calibration(
        claim,
        calibration["trained"],
        "measured on the lineage zoo's small models, a proxy for this pretrained pair's real null",
    )
    claim.table(
        f"Table 6 at our scale: embedded models vs code fine-tunes, vs a random-init model and vs an unrelated "
        f"trained model of the same config (n={cfg.n}, length={cfg.length}, m={cfg.m}); source: Llama-2-7B "
        f"descendants, U-test p 1.3e-41 … 2.0e-3",
        COLUMNS,
        [_row(r) for r in rows],
    )
    claim.figure(figures.seedprint_pvalues(rows, "Table 6: pretrained models vs fine-tunes"), "table6")
    # power: the source's descendants are matched at p ≤ 2.0e-3 (CodeLlama, 500B tokens) to 1e-100;
    # at its smallest descendant's p (1.3e-41) each test passes with probability ≈ 1, given the real
    # null is there to test against
    built = all(d.trained_null is not None for d in out.values())
    claim.power(
        float(built),
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
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SP-5 real null", profile.name),
        "; ".join(
            f"{d.name}: descendant p (t, U) {d.pair['p_t']:.2g}, {d.pair['p_u']:.2g}; "
            f"random-init null {d.null['p_t']:.2g}, {d.null['p_u']:.2g}"
            for d in out.values()
        ),
    )
    for d in out.values():
        # the fine-tune must have moved the model before its match means anything
        claim.check(
            f"{d.name}: held-out code NLL drop, lower 95% bound (nats/token)",
            d.nll_drop()[1],
            0.0,
            compare="ge",
            why="the descendant measurably learned the shift corpus",
        )
        claim.check(
            f"{d.name}: an unrelated trained model of its config was built (the real null)",
            built,
            compare="true",
            why="Table 6's match means something only against a null that could pass",
        )
        _check_pair(claim, d.pair, control=d.trained_null)
        _check_pair(claim, d.trained_null, control=d.pair)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-5")
def test_finetunes_match_at_table6_distance(claim, finetunes, lab, sizes, profile):
    """Table 6's descendants are real fine-tunes: the smallest, Llama-2-finance-7B, trained on 5M
    tokens (the others 370M … 500B; WizardMath and Meditron read PCS 1.0000 and were matched, so
    the distance is read in tokens, not 1 − PCS). SP-5 is reproduced at the source's distance only
    when the matched descendants (the test above) trained on at least that many tokens."""
    claim.corpus(lab.base_corpus, shift=SHIFT)
    _, out = finetunes
    ps = sizes["pretrained"]
    bar = min(TABLE6_TOKENS.values())
    planned = ps["finetune_steps"] * ps["finetune_batch"] * ps["finetune_seq_len"]  # the profile's, not a measurement
    claim.power(
        stats.deterministic_power(planned, bar, "ge"),
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
    tokens = {d.name: d.tokens for d in out.values()}
    claim.not_reproduced_if(
        NOT_REPRODUCED,
        ("SP-5 at Table 6's distance", profile.name),
        "; ".join(f"{k}: {v} tokens against {bar:.0e}" for k, v in tokens.items()),
    )
    for name, n_tokens in tokens.items():
        claim.check(
            f"{name}: tokens of its matched fine-tune",
            n_tokens,
            bar,
            compare="ge",
            source=bar,
            why="Table 6's smallest descendant (Llama-2-finance-7B, 5M tokens)",
        )


# --------------------------------------------------------------------------- SP-6 (App B.3.1, Fig 13)


@pytest.fixture(scope="module")
def null_pairs(null_responses, spcfg):
    """(rows of p's, pooled τ's, disjoint pairs' τ's, model count) over all pairs of the independent inits."""
    return study.null_pairs(null_responses, spcfg)


def _fpr_rows(claim, cal: Calibration) -> list:
    out = []
    for key, label in (*TESTS, ("p_released", "released variant")):
        ci = cal.ci(key)
        claim.record(
            f"{cal.kind}, {label}: false-positive rate over {cal.n} pairs of {len(cal.models)} models, "
            f"Wilson 95% {ci.low:.4f}–{ci.high:.4f}",
            cal.k(key) / cal.n,
            compare="none",
        )
        out.append(
            [
                cal.kind,
                label,
                cal.k(key),
                cal.n,
                len(cal.models),
                f"{cal.k(key) / cal.n:.4f}",
                f"{ci.low:.4f}–{ci.high:.4f}",
                f"{cal.binom_p(key):.3g}",
                f"{cal.binom_p_below(key):.3g}",
                f"{cal.boot_p(key):.3g}",
            ]
        )
    return out


FPR_COLUMNS = [
    "pairs",
    "test",
    "false positives",
    "pairs",
    "models",
    "rate",
    "Wilson 95% CI",
    "binomial p (rate ≤ α), as if independent",
    "binomial p (rate ≥ α), as if independent",
    f"model-level bootstrap p (rate ≤ α), {study.BOOT_REPLICATES} replicates",
]
WHY_FPR = (
    f"a sound null flags unrelated pairs at rate ≤ α: one-sided model-level bootstrap test of the rate against α "
    f"(pairs share models), Holm over the family at {CAL_LEVEL}"
)


def _check_fpr(claim, cals: list[Calibration], control: Calibration) -> None:
    """The family of rate tests (each kind of pair × Alg. 1's t and U tests), Holm at CAL_LEVEL;
    the control (same-lineage pairs, all of which should be flagged) takes each test's place in
    the family in turn."""
    family = [(c, key, label) for c in cals for key, label in TESTS]
    ps = [c.boot_p(key) for c, key, _ in family]
    adjusted = stats.holm(ps)
    for i, (c, key, label) in enumerate(family):
        swapped = list(ps)
        swapped[i] = control.boot_p(key)
        claim.check(
            f"{c.kind}, {label}: model-level bootstrap p of the false positives against α, Holm over {len(ps)}",
            float(adjusted[i]),
            CAL_LEVEL,
            compare="ge",
            why=WHY_FPR,
            control=float(stats.holm(swapped)[i]),
            control_name=f"{control.kind} in its place (the lineage is there: every pair should be flagged)",
        )


def _record_below_alpha(claim, cal: Calibration) -> None:
    """The lower side, recorded and not asserted: Algorithm 1's p is the mean of the p's against 10
    Gaussian null draws (001 §6.1.2), and a mean of p's is not uniform under the null — its rate at α
    sits below α when the draws disagree (at most 2α in the worst case) — so the source's procedure
    is conservative by construction. "Sound" (App B.3.1) is about an excess of false positives; a
    rate below α costs power, which SP-1…5's same-lineage controls measure."""
    for key, label in TESTS:
        claim.record(
            f"{cal.kind}, {label}: binomial p of so few false positives if the rate were α (lower side, "
            "as if independent; context)",
            cal.binom_p_below(key),
            compare="none",
        )


def _power_fpr(claim, cals: list[Calibration]) -> None:
    m = len(cals) * len(TESTS)
    claim.power(
        1.0 - CAL_LEVEL,
        effect="Alg. 1's false-positive rate at α = 0.01 is α: each unrelated pair is flagged "
        "with probability 0.01 (the source's null, App B.3.1)",
        effect_value=ALPHA,
        basis="source: App B.3.1 and §6.1.1 (the Gaussian null stands for unrelated models; α = 0.01)",
        test=f"one-sided model-level bootstrap test of each rate against α ({study.BOOT_REPLICATES} "
        f"replicates), Holm over the {m} tests at {CAL_LEVEL}",
        sample="; ".join(f"{c.kind}: {c.n} pairs of {len(c.models)} models" for c in cals),
        method=f"closed form: Holm keeps the family-wise error ≤ {CAL_LEVEL} under any dependence, each "
        "bootstrap test at its nominal level (approximate with few models)",
        size=CAL_LEVEL,
        size_method=f"Holm over the {m} rate tests at family-wise {CAL_LEVEL} (nominal: the "
        "percentile bootstrap over few models holds its level approximately)",
        decide="any number of pairs (the family-wise size is fixed; more models bring the bootstrap's level "
        "nearer its nominal value)",
    )


@pytest.mark.claim("SP-6")
def test_null_false_positive_rate(claim, null_pairs, same_lineage, lab):
    """App B.3.1: sound means the rate is not above α. The false positives over all pairs of
    independent inits, tested against α with the inits resampled (the pairs share them), one-sided;
    the lower side is recorded, not asserted (`_record_below_alpha`: Algorithm 1's p is a mean of 10
    p's, conservative by construction)."""
    claim.corpus(lab.base_corpus, shift=SHIFT)  # the control: the zoo's same-lineage pairs
    ps, _, _, n_models = null_pairs
    cal = Calibration(f"pairs of {n_models} independent inits", ps)
    ctl = Calibration("same-lineage pairs of the zoo", same_lineage)
    claim.table(
        "SP-6: false-positive rate at α = 0.01 (pairs share models: the binomial columns are optimistic, the "
        "bootstrap resamples models)",
        FPR_COLUMNS,
        _fpr_rows(claim, cal),
    )
    _record_below_alpha(claim, cal)
    _power_fpr(claim, [cal])
    _check_fpr(claim, [cal], ctl)


@pytest.mark.policy_dtype
@pytest.mark.claim("SP-6")
def test_null_false_positive_rate_on_trained_pairs(claim, calibration, same_lineage, profile, lab):
    """The source validates the Gaussian null on independent inits only, then applies it to
    trained models (Tables 4c, 5). Here: every pair of the zoo's trained models of different
    seeds, and every init against every trained model of another seed."""
    claim.corpus(lab.base_corpus, shift=SHIFT)
    cals = [calibration["init"], calibration["trained"]]
    ctl = Calibration("same-lineage pairs of the zoo", same_lineage)
    claim.table(
        "SP-6 on trained models: false-positive rate at α = 0.01 (pairs share models: the binomial columns "
        "are optimistic, the bootstrap resamples models)",
        FPR_COLUMNS,
        [row for c in cals for row in _fpr_rows(claim, c)],
    )
    tt = calibration["trained"]
    claim.table("trained × trained pairs of different seeds", COLUMNS, [_row(r) for r in tt.rows])
    _power_fpr(claim, cals)
    claim.not_reproduced_if(NOT_REPRODUCED, ("SP-6 trained pairs", profile.name), "; ".join(c.summary() for c in cals))
    _check_fpr(claim, cals, ctl)


@pytest.mark.claim("SP-6")
def test_null_correlations_are_gaussian_around_zero(claim, null_pairs, spcfg, same_lineage, lab):
    """Asserted on the τ's of disjoint pairs (each init in one pair), which are independent
    samples; the τ's pooled over all pairs (every model in many pairs) are context only."""
    claim.corpus(lab.base_corpus, shift=SHIFT)  # the control: the zoo's same-lineage pairs
    _, pooled, disjoint, n_models = null_pairs
    sigma = sp.tau_std(spcfg.n)
    mean, sem = stats.mean_sem(disjoint)
    normal_p = stats.normality_p(disjoint)
    claim.record(f"τ's of {n_models // 2} disjoint init pairs (identity dims)", len(disjoint), compare="none")
    claim.record(
        "std of τ / τ_std(n) of independent samples (disjoint pairs)",
        float(disjoint.std(ddof=1) / sigma),
        compare="none",
    )
    claim.record(
        "excess kurtosis of the disjoint pairs' τ's (Gaussian: 0)", stats.excess_kurtosis(disjoint), compare="none"
    )
    claim.record(
        f"all {len(pooled)} pooled τ's (pairs share models, not independent): mean",
        float(pooled.mean()),
        compare="none",
    )
    claim.record(
        "all pooled τ's: D'Agostino–Pearson normality p (not independent samples)",
        stats.normality_p(pooled),
        compare="none",
    )
    claim.figure(figures.fig13_null(pooled, sigma, spcfg.n), "fig13")
    # under the source's Gaussian null around 0 the normality test passes with probability 1 − α
    # and the mean test with P(|Z| ≤ 4) (independent samples)
    claim.power(
        (1 - ALPHA) * (1 - 2 * stats.normal_sf(4)),
        effect="τ's of independent inits are Gaussian around 0 (Fig 13): mean 0, normal",
        basis="source: Fig 13 / App B.3.1",
        test="|mean| ≤ 4 standard errors, and D'Agostino–Pearson normality p ≥ 0.01",
        sample=f"the τ's of {n_models // 2} disjoint init pairs (independent samples)",
        method="closed form: the two checks' sizes under that null, (1 − 0.01)·P(|Z| ≤ 4)",
        decide="any size (the checks keep their level)",
    )
    same_taus = np.concatenate([r["taus"] for r in same_lineage])
    m_ctl, s_ctl = stats.mean_sem(same_taus)
    claim.check(
        "mean τ over identity dims of independent pairs, in standard errors",
        abs(mean) / sem,
        4.0,
        compare="le",
        why="centred at 0: within 4 standard errors of the mean",
        control=abs(m_ctl) / s_ctl,
        control_name="the same for the zoo's same-lineage pairs",
    )
    claim.check(
        "D'Agostino–Pearson normality p of the disjoint pairs' τ's",
        normal_p,
        ALPHA,
        compare="ge",
        why="'closely follows a Gaussian': normality not rejected at 0.01",
    )
