"""One table of sizes per experiment per profile.

`ci`: every claim on 2 CPU cores, offline, within the issue budgets (the whole claims run
≤ 40 min cold). `paper`: the source's own sizes (001: 12 layers, 768 wide, N = 2,000–10,000,
T up to 1024), meant for a GPU. Claim tests read their sizes with `profile.sizes("bb_6")`
and record the sizes they used, so a report always says at what scale a number was measured.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from repro.runtime import ReproError

# experiment -> {profile -> sizes}. Keys name the claim or figure they serve.
SIZES: dict[str, dict[str, dict[str, Any]]] = {
    # 001 Prop 2 / Fig 5: stacked MLP0 blocks (ReLU vs tanh), Gaussian inputs.
    # The source's width (768); 6 independent models give the Monte-Carlo standard error
    # across inits (weight drawing dominates the cost: ~4 s per model and variant on 2 cores).
    "bb_4": {
        "ci": dict(d_model=768, d_ff=3072, n_layer=12, n_seq=512, seeds=(0, 1, 2, 3, 4, 5)),
        "paper": dict(d_model=768, d_ff=3072, n_layer=12, n_seq=2000, seeds=tuple(range(16))),
    },
    # 001 Table 3 / Prop 4: MLP0, MLP0∘MLP0, Attn0∘MLP0 at several T.
    "bb_4_2": {
        "ci": dict(d_model=512, d_ff=2048, n_seq=256, T=(16, 128), seeds=(0, 1, 2, 3, 4, 5, 6, 7)),
        "paper": dict(d_model=768, d_ff=3072, n_seq=2000, T=(16, 128, 512), seeds=tuple(range(16))),
    },
    # 001 Eq 2 / Fig 9: per-position output std after value aggregation, T = 32.
    "bb_6": {
        "ci": dict(d_model=768, n_head=12, T=32, n_seq=2000, seeds=(0, 1, 2, 3)),
        "paper": dict(d_model=768, n_head=12, T=32, n_seq=2000, seeds=tuple(range(16))),
    },
}


@dataclass(frozen=True)
class Profile:
    name: str
    table: dict[str, dict[str, dict[str, Any]]] = field(default_factory=lambda: SIZES, repr=False)

    def sizes(self, experiment: str) -> dict[str, Any]:
        try:
            per_profile = self.table[experiment]
        except KeyError:
            raise ReproError(
                f"no sizes for experiment {experiment!r} in repro/profiles.py; add a row for it"
            ) from None
        return dict(per_profile[self.name])

    def as_dict(self) -> dict[str, Any]:
        return {exp: sizes[self.name] for exp, sizes in self.table.items()}


PROFILES = ("ci", "paper")


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ReproError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}")
    return Profile(name)
