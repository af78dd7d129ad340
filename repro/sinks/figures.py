"""Figure builders of the attention-sink claims (001 §6.2): Fig 12, the sink rate against
sequence length (of the trained trio, and with a pretrained model as the reference). Fig 9
(positional std, eq. 2) is shared with Born biased and lives in `repro.core.plotting`; SK-1
draws it with §6.2.1's variants beside the baseline."""

from __future__ import annotations

from repro.core import data
from repro.core.plotting import fig9_positional_std, plt, training_curves
from repro.sinks.experiments import EPSILON, SCALINGS


def sink_rate_by_length(series: dict, title: str) -> plt.Figure:
    """001 Fig 12: sink rate against sequence length, one line per model; `series` maps a
    label to (lengths, rates)."""
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    for label, (lengths, rates) in series.items():
        ax.plot(lengths, rates, marker="o", ms=4, label=label)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="sequence length T", ylabel="sink rate (share of heads with α¹ > ε)", ylim=(-0.02, 1.02), title=title)
    ax.title.set_fontsize(8)
    ax.legend(fontsize=7)
    return fig


def init_std_variants(profiles: dict) -> plt.Figure:
    """SK-1: 001 Fig 9 of the baseline at init with amplification (√i) and attenuation (√(i/T))
    beside it; `profiles`: `experiments.init_std_profiles`' output."""
    variants = {
        f"{k} (√i)" if k == "amplification" else f"{k} (√(i/T))": profiles[k] for k in ("amplification", "attenuation")
    }
    return fig9_positional_std(profiles["baseline"], variants)


def trio_sink_rates(trio, deviation, form: str, n_seq: int) -> plt.Figure:
    """SK-2: 001 Fig 12 of the trained trio (metric `form`, `n_seq` held-out sequences per
    length), with the deviation's trio beside it where the profile trains one (None: not)."""
    lengths = trio.curves["baseline"].lengths
    series = {k: (lengths, trio.curves[k].row(form)) for k in SCALINGS}
    if deviation is not None:
        series.update(
            {f"{k}, lr {deviation.cfg.lr:g} (deviation)": (lengths, deviation.curves[k].row(form)) for k in SCALINGS}
        )
    return sink_rate_by_length(
        series,
        f"001 Fig 12: sink rate (ε = {EPSILON[form]}) on held-out "
        f"{data.corpus_title(trio.corpus)}, "
        f"{n_seq} sequences per length",
    )


def trio_training(trio) -> plt.Figure:
    """SK-2: the trio's training-loss curves (same data order)."""
    return training_curves(
        {k: r.losses for k, r in trio.results.items()}, "SK-2: training loss of the three variants (same data order)"
    )


def reference_sink_rates(trio, curve, model_name: str, corpus: str) -> plt.Figure:
    """SK-4: 001 Fig 12 of the trained trio with a pretrained model's `curve` (read on `corpus`)
    as the real-model reference, source form."""
    series = {k: (trio.curves[k].lengths, trio.curves[k].row("source")) for k in SCALINGS}
    series[model_name] = (curve.lengths, curve.row("source"))
    return sink_rate_by_length(
        series,
        f"001 Fig 12 with {model_name} as the real-model reference "
        f"(ε = {EPSILON['source']}, {data.corpus_title(corpus)})",
    )
