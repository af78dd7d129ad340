"""repro.seedprint.released: the authors' released SeedPrint test, pinned on hand-made fingerprints.

The specification (YnezT0311/SeedPrints @ 4a39abc4, `seedprint.run_test` and LeaFBench's
`test_lineage`; the module docstring cites each line): bottom-k of the *raw* mean, the suspect's
bottom-k intersected ("coset"), a softmax at T = 10 over the *selected columns only*, τ-b per
column, z = τ̄ / (τ_std(n)/√k), p = min(1, 2·sf(z)); undefined τ's void the test (run_test) or
leave it (test_lineage); the k rules; Gaussian inputs from a fresh init's embedding statistics.

The fingerprints are small integer matrices, exact in float32, built so that every quantity is
known by hand: with two selected columns the softmax of column 0 is σ((x₀ − x₁)/10), monotone in
x₀ − x₁, and column 1 is 1 minus it, so both columns' τ is the τ of those differences — a count of
discordant pairs. Each case also shows that the alternative reading (softmax over all columns,
selection on the softmaxed mean, base-only selection) gives another answer, so the test can fail.
Tolerance 1e-12: the hand values are closed forms, the code's float32 softmax keeps the ranks exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from repro.core.models.hf import build_model
from repro.ground.runtime import ReproError
from repro.seedprint import released as rel

N = 8
ROWS = torch.arange(1, N + 1, dtype=torch.float32)  # base's column 0: 1..8
SWAPPED = torch.tensor([2, 1, 3, 4, 5, 6, 8, 7], dtype=torch.float32)  # two adjacent swaps: 2 discordant pairs


def fingerprint(col0: torch.Tensor, col1: float, col2: torch.Tensor | float) -> torch.Tensor:
    """(N, 3): column 0 varies, column 1 constant, column 2 (large: never among the bottom 2)."""
    return torch.stack([col0, torch.full((N,), col1), torch.as_tensor(col2, dtype=torch.float32).expand(N)], 1)


BASE = fingerprint(ROWS, 0.0, 100.0)
# the suspect's column 2 alternates 100 / 60: outside the selection it must not matter; inside a
# softmax over all columns it would scramble column 0's ranks (e^{±4} against steps of e^{0.1})
SUSPECT = fingerprint(SWAPPED, 0.0, torch.tensor([100.0, 60.0] * (N // 2)))


def hand_z(tau: float, n: int, k: int) -> float:
    return tau / (math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1))) / math.sqrt(k))


def test_tau_z_and_p_by_hand():
    res = rel.released_variant(BASE, SUSPECT, k=2)
    # C = 26, D = 2 of 28 pairs: τ = 24/28 = 6/7 on both columns; τ_std(8) = √(1/12), k = 2:
    # z = (6/7)·√24, p = 2·sf(z)
    assert res.dims == [0, 1] and res.k == 2
    assert res.taus == pytest.approx([6 / 7, 6 / 7], abs=1e-12)
    assert res.z == pytest.approx(6 / 7 * math.sqrt(24), abs=1e-12)
    assert res.z == pytest.approx(hand_z(6 / 7, N, 2), abs=1e-12)
    assert res.p == pytest.approx(2 * stats.norm.sf(6 / 7 * math.sqrt(24)), rel=1e-12)
    assert 1e-5 < res.p < 1e-4 and res.same_lineage  # ≈ 2.7e-5
    assert res.summary()["code"].startswith("YnezT0311/SeedPrints@4a39abc4fd56")


def test_softmax_reads_the_selected_columns_only():
    everything = torch.softmax(SUSPECT / 10, dim=1)[:, 0].numpy()  # the other reading
    tau_all = stats.kendalltau(torch.softmax(BASE / 10, dim=1)[:, 0].numpy(), everything).statistic
    assert tau_all == pytest.approx(4 / 7, abs=1e-12)  # column 2 scrambles the ranks: C = 22, D = 6, not 26 / 2
    assert rel.released_variant(BASE, SUSPECT, k=2).taus[0] == pytest.approx(6 / 7, abs=1e-12)


def test_selection_is_on_the_raw_mean():
    # column 0 swings ±30 (raw mean 0), column 1 is 1 throughout: raw bottom-1 is column 0; the
    # mean of a row softmax at T = 10 over all columns would pick column 1 (e^{±3} averages high)
    x = torch.tensor([[-30.0, 1.0, 50.0], [30.0, 1.0, 50.0]] * 4)
    assert rel.select(x, x, 1, "base") == [0]
    assert int(torch.softmax(x / 10, dim=1).mean(0).argmin()) == 1


def test_coset_keeps_only_dims_in_both_bottom_k():
    # the suspect's bottom 2 are {0, 2}: the coset is {0}, one column, whose softmax is 1.0 in
    # every row, so its τ is undefined: run_test's mean is NaN and its p min(1.0, nan) = 1.0
    other = fingerprint(SWAPPED, 50.0, -5.0)
    tables = rel.released_variant(BASE, other, k=2)
    assert tables.dims == [0] and np.isnan(tables.taus).all()
    assert tables.p == 1.0 and math.isnan(tables.z) and not tables.same_lineage
    # LeaFBench's test_lineage keeps the base's bottom 2 ({0, 1}): column 0's softmax is
    # σ((x₀ − 50)/10), monotone in x₀ — the same τ = 6/7, the same z as the hand case
    leaf = rel.released_variant(BASE, other, rule="leafbench", k=2)
    assert leaf.dims == [0, 1] and leaf.z == pytest.approx(6 / 7 * math.sqrt(24), abs=1e-12)


def test_undefined_taus_void_or_drop():
    taus = np.array([0.5, np.nan, 0.3])
    z, p, k = rel.z_and_p(taus, N, "void")  # run_test: the NaN poisons τ̄
    assert math.isnan(z) and p == 1.0 and k == 3
    z, p, k = rel.z_and_p(taus, N, "drop")  # test_lineage: k shrinks to the defined τ's
    assert k == 2 and z == pytest.approx(hand_z(0.4, N, 2), abs=1e-12)
    assert p == pytest.approx(2 * stats.norm.sf(hand_z(0.4, N, 2)), rel=1e-12)
    assert rel.z_and_p(np.array([np.nan]), N, "drop")[1:] == (1.0, 0)
    assert rel.z_and_p(np.array([]), N, "void")[1] == 1.0  # an empty coset
    assert rel.z_and_p(np.array([-0.5, -0.5]), N, "void")[1] == 1.0  # negative z: clamped at 1
    with pytest.raises(ReproError, match="undefined-τ policy 'zero'"):
        rel.z_and_p(taus, N, "zero")


def test_k_rules_are_the_scripts_at_their_widths():
    tables, table6, leaf = (rel.RULES[r] for r in ("tables", "table6", "leafbench"))
    assert tables.k_of(768) == 400 and tables.k_of(128) == 67  # run_table1–4: 400 of the 768-wide toy models
    assert table6.k_of(4096) == 400 and table6.k_of(576) == 56  # run_table5: 400 of Llama-2-7B's 4096
    assert leaf.k_of(768) == 76 and leaf.k_of(4096) == 409 and leaf.k_of(9) == 0  # int(0.1·D)
    assert (tables.identity_mode, tables.undefined, leaf.identity_mode, leaf.undefined) == (
        "coset",
        "void",
        "base",
        "drop",
    )
    res = rel.released_variant(torch.randn(20, 128), torch.randn(20, 128))
    assert res.rule == "tables" and len(res.dims) <= 67
    assert rel.released_variant(torch.randn(20, 9), torch.randn(20, 9), rule="leafbench").p == 1.0  # k = 0


def test_bad_input_is_one_message():
    with pytest.raises(ReproError, match="k = 4 dims of a 3-wide response"):
        rel.released_variant(BASE, SUSPECT, k=4)
    with pytest.raises(ReproError, match="unknown released-test rule 'paper'"):
        rel.released_variant(BASE, SUSPECT, rule="paper")
    with pytest.raises(ReproError, match="responses of one shape"):
        rel.released_variant(BASE, SUSPECT[:, :2])


def test_gaussian_inputs_read_a_fresh_init_not_the_base():
    base = build_model("llama", seed=1, n_layer=1, n_head=2, d_model=32, vocab_size=64)
    with torch.no_grad():
        base.get_input_embeddings().weight.mul_(10.0).add_(1.0)  # a "trained" base: other statistics
    x = rel.gaussian_inputs(base, 200, 4, seed=0)
    fresh = build_model("llama", seed=2, n_layer=1, n_head=2, d_model=32, vocab_size=64)
    init = fresh.get_input_embeddings().weight.detach()
    # 25,600 draws: the sample mean within 4 standard errors of the init's; the std within 2%
    assert x.shape == (200, 4, 32)
    assert abs(float(x.mean()) - float(init.mean())) < 4 * float(init.std()) / math.sqrt(x.numel()) + 1e-3
    assert float(x.std()) == pytest.approx(float(init.std()), rel=0.02)
    assert torch.equal(x, rel.gaussian_inputs(base, 200, 4, seed=0))  # deterministic


def test_rule_names_are_the_rules():
    """The CLI reads RULE_NAMES from the source without importing torch: it must name RULES' keys."""
    assert rel.RULE_NAMES == tuple(rel.RULES) and rel.DEFAULT_RULE in rel.RULES
    from repro.seedprint import algorithm

    assert rel.ALPHA == algorithm.ALPHA == algorithm.SeedPrintConfig().alpha  # one α for both tests
