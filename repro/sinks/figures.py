"""Figure builders of the attention-sink claims (001 §6.2): Fig 12, the sink rate against
sequence length. Fig 9 (positional std, eq. 2) is shared with Born biased and lives in
`repro.core.plotting`."""

from __future__ import annotations

from repro.core.plotting import plt


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
