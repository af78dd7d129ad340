"""Spectral filters and dark signals (SF).

Reproduces 003 (Cancedda, "Spectral Filters, Dark Signals, and Attention Sinks") §3–7 and
App C–F — singular spectra and eq. (1) projections, the spectral filters of eq. 2–3 and their
NLL, the dark sink vector of token 0, shavings swaps, repetition under filtering, the HMLV
metrics of eqs. 4–5, App D's head ratios — for `claims/test_spectral_filters.py`.

- `spectral`: the 20 singular-vector bands of W_u and W_e (norm gains folded), the filters
  Φ, Ψ, Ω and random controls, eq. (1) dark shares, udr / kdp / HMLV, forward-hook
  interventions (`filtered`), cached-prefix NLL sweeps (`Sweep`), filtered generation.
- `figures`: the builders of 003's figures (Figs 3–5, 7–9, 11, 13, 15–16, 19, 21–22) and of
  Tables 2, 4, 5 as bars.
"""
