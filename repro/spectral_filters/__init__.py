"""Spectral filters and dark signals (SF).

Reproduces 003 (Cancedda, "Spectral Filters, Dark Signals, and Attention Sinks") §3–7 and
App C–F — singular spectra and eq. (1) projections, the spectral filters of eq. 2–3 and their
NLL, the dark sink vector of token 0, shavings swaps, repetition under filtering, the HMLV
metrics of eqs. 4–5, App D's head ratios — for `claims/test_spectral_filters.py`.

- `spectral`: the 20 singular-vector bands of W_u and W_e (norm gains folded), the filters
  Φ, Ψ, Ω and random controls, eq. (1) dark shares, forward-hook interventions (`filtered`),
  cached-prefix NLL sweeps (`Sweep`), filtered generation.
- `dark_signals`: eq. (4)–(5) udr / kdp, §7's HMLV tokens and their random-token control, per-head
  keys and App D's value–output ratios, token 0's sink profile (§5, Fig 9).
- `study`: the per-model `Study` every SF claim reads, SF-8's continuations, §7's HMLV statistics.
- `readings`: what each claim reads off a study, with its negative controls (SF-1's spectrum,
  SF-2's dark shares, SF-3/5/6's NLL steps against random filters, SF-4's sink vector, SF-7's
  sink-preserving filter, SF-10's value–output ratios).
- `context`: what each claim records beside its checks (context `Reading`s, in the claim's order).
- `power`: the sampled claims' powers (SF-3, 5–9) at their declared effects, each a `Power` saying
  which checks it covers, its edge and how its nuisance sds were taken.
- `noise_free`: the powers of the checks on noise-free quantities (SF-1, 2, 4, 10).
- `verdicts`: `NOT_REPRODUCED`, the embedded models' known departures from the source.
- `figures`: the builders of 003's figures (Figs 3–5, 7–9, 11, 13, 15–16, 19, 21–22) and of
  Tables 2, 4, 5 as bars.
- `catalogue`, `sizes`: the claims' statements and source numbers, the sizes per profile.
"""

from repro.ground.topic import Topic

TOPIC = Topic(package="spectral_filters", order=6)
