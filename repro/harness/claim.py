"""The `claim` fixture's object: what a claim test records (numbers, checks, its power, figures,
tables, the text it read) and how it marks a verdict it knows in advance.

Everything a test records goes onto its item's `user_properties` under the `PROP_*` names, so it
travels with pytest's test reports (serialised over xdist's channel from a worker) to the process
that writes the report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from repro.core.readings import ALL_CHECKS, Control, Power, Reading
from repro.ground.cache import atomic_path
from repro.ground.runtime import dtype_name, resolve_device, resolve_dtype
from repro.harness import report as reporting
from repro.harness.collection import claim_ids
from repro.harness.options import decide_chunk, users_model

PROP_CLAIMS = "repro_claims"
PROP_RECORD = "repro_record"
PROP_FIGURE = "repro_figure"
PROP_TABLE = "repro_table"
PROP_CORPUS = "repro_corpus"

_NO_CONTROL = object()


class ControlPassed(Exception):
    """A negative control passed a claim's assertion (not an AssertionError on purpose: a strict
    xfail must not absorb it)."""


def power_key(test: str | None, covers: tuple[str, ...] = ()) -> str:
    """A power record's identity across runs: one per test, named by it (a claim with several
    tests has several powers; numbered by their order, a test added between two others would shift
    the pairing of a comparison); a test's second and later powers are named by the checks they
    cover too (a test with a power per check has one record per check)."""
    named = [c for c in covers if c != ALL_CHECKS]
    return (
        "power at the source's effect" + (f" [{test}]" if test else "") + (f" {{{'; '.join(named)}}}" if named else "")
    )


class Claim:
    """Handle given to a claim test: record numbers, figures and tables for the report."""

    def __init__(self, item: pytest.Item, artifacts: Path) -> None:
        self.item = item
        self.ids = claim_ids(item)
        self.figures_dir = artifacts / "figures"
        # the dtype the test's numbers were computed (or their models trained) in, stamped on
        # every record: float32 unless the test is marked `policy_dtype` (its experiment runs in
        # what runtime.resolve_dtype("auto") chose) or sets another (e.g. "float64")
        self.dtype = "float32"
        if item.get_closest_marker("policy_dtype") is not None:
            device = resolve_device(item.config.getoption("--device"))
            self.dtype = dtype_name(resolve_dtype("auto", device))
        if not self.ids:
            raise pytest.UsageError(f"{item.nodeid} uses the `claim` fixture without @pytest.mark.claim")
        self.users_model = users_model(item)
        self.decide_chunk = decide_chunk(item)

    def _id(self, claim_id: str | None) -> str:
        if claim_id is None:
            return self.ids[0]
        if claim_id not in self.ids:
            raise ValueError(f"{claim_id} is not among this test's claim markers {self.ids}")
        return claim_id

    def record(
        self,
        name: str,
        measured: Any,
        expected: Any = None,
        tol: float | None = None,
        why: str = "",
        *,
        compare: str | None = None,
        unit: str = "",
        claim_id: str | None = None,
        dtype: str | None = None,
        source: Any = None,
        role: str = "context",
        key: str | None = None,
        power: dict | None = None,
        not_rejected: bool = False,
        valid: bool | None = None,
    ) -> reporting.Record:
        """Record one number for the report, not asserted (context; asserting goes through
        `check`). `expected`/`tol`/`compare`: a threshold to show beside it; without one the record
        compares nothing (`compare` "none", shown as context), with `expected` or `tol` and no
        `compare` it is "abs". `source`: the source's number. `why` says where a tolerance comes
        from (required with a tol).
        `dtype`: what it was computed in (default: `self.dtype`). `key`: the record's identity
        across runs, needed only when the label carries a measured *word* (which matrix, which
        token); numbers in a label are masked by the default key (`report.key_of_label`)."""
        if tol is not None and not why:
            raise ValueError(f"record {name!r}: a tolerance needs its reason (why=...)")
        if compare is None:
            compare = "none" if expected is None and tol is None else "abs"
        rec = reporting.Record(
            self._id(claim_id),
            name,
            measured,
            expected,
            tol,
            why,
            compare,
            unit,
            dtype=str(dtype or self.dtype).removeprefix("torch."),
            source=source,
            role=role,
            key=key,
            power=power,
            not_rejected=not_rejected,
            valid=valid,
        )
        self.item.user_properties.append((PROP_RECORD, rec.to_dict()))
        return rec

    def check(
        self,
        name: str | Reading,
        measured: Any = None,
        threshold: Any = None,
        *,
        compare: str = "",
        why: str = "",
        tol: float = 0.0,
        source: Any = None,
        control: Any = _NO_CONTROL,
        control_name: str = "",
        unit: str = "",
        claim_id: str | None = None,
        dtype: str | None = None,
        key: str | None = None,
        not_rejected: bool = False,
    ) -> reporting.Record:
        """Record *and assert* one comparison, so the row a reader sees is the one that decided
        the test: `measured` against our `threshold` (compare "ge" / "le" / "abs" / "rel", with
        `tol`; "true" for a condition), `source` the source's own number (shown, not used),
        `why` the threshold's reason. `name` may be a `Reading` (a topic's hand-over) instead of
        the name and its keywords. `not_rejected`: the check passes by *not* rejecting a null (a
        false-positive rate, an interval holding the source's value): its pass reads reproduced
        only with a covering power ≥ 0.8 against a declared alternative (`Power.against`).

        `control`: the same quantity measured on a negative control (an input or model where
        the effect must be absent, named by `control_name`), or a `Control` (its name and whether
        the null could serve). It goes through the same comparison and must be *rejected*; if it
        passes, the assertion cannot tell the effect from its absence and the test fails
        (`ControlPassed`, not an AssertionError: a strict xfail does not absorb it). A `Control`
        whose own validity check failed (`valid=False`) cannot tell either way: the check is recorded
        and the test ends as an xfail that reads *inconclusive* ("cannot tell"), never contradicted.
        The assertion is an explicit raise, so it holds under `python -O` and `--assert=plain` too;
        the plugin also fails any test that passed with a failed check on record
        (`pytest_runtest_makereport`)."""
        r = (
            name
            if isinstance(name, Reading)
            else Reading(name, measured, threshold, compare, why, tol, source, unit, key, not_rejected)
        )
        if isinstance(control, Control):
            if control_name:
                raise ValueError(f"check {r.name!r}: a Control names itself (no control_name)")
            control, control_name, usable = control.measured, control.name, control
        else:
            usable = None
        return self._check(r, control, control_name, usable, claim_id, dtype)

    def _check(
        self,
        r: Reading,
        control: Any,
        control_name: str,
        usable: Control | None,
        claim_id: str | None,
        dtype: str | None,
    ) -> reporting.Record:
        name, compare, threshold = r.name, r.compare, r.threshold
        if not r.why:
            raise ValueError(f"check {name!r}: say why this threshold (why=...)")
        if compare not in ("ge", "le", "abs", "rel", "true"):
            raise ValueError(f"check {name!r}: compare must be ge, le, abs, rel or true, not {compare!r}")
        if compare != "true" and threshold is None:
            raise ValueError(f"check {name!r}: compare {compare!r} needs a threshold")
        common = dict(compare=compare, unit=r.unit, claim_id=claim_id, dtype=dtype)
        if control is not _NO_CONTROL:
            if not control_name:
                raise ValueError(f"check {name!r}: name the control (control_name=...)")
            ctl = self.record(
                f"{name} — control: {control_name}",
                control,
                threshold,
                r.tol,
                r.why,
                **common,
                source=None,
                role="control",
                key=None if r.key is None else f"{r.key} — control",
                valid=None if usable is None else usable.valid,
            )
            if usable is not None and not usable.valid:
                self.record(
                    name, r.measured, threshold, r.tol, r.why, **common, source=r.source, role="check", key=r.key
                )
                pytest.xfail(
                    f"{self._id(claim_id)} {name}: cannot tell — the null ({control_name}) cannot serve: "
                    f"{usable.invalid_why}"
                )
            if ctl.within is not False:
                raise ControlPassed(
                    f"{self._id(claim_id)} {name}: the negative control ({control_name}) passes the "
                    f"same assertion ({ctl.shown()}): this test cannot tell the effect from its absence"
                )
        rec = self.record(
            name,
            r.measured,
            threshold,
            r.tol,
            r.why,
            **common,
            source=r.source,
            role="check",
            key=r.key,
            not_rejected=r.not_rejected,
        )
        if rec.within is not True:
            raise AssertionError(f"{rec.claim} {name}: {rec.shown()} does not hold ({r.why})")
        return rec

    def power(self, p: Power | None = None, /, *, claim_id: str | None = None, **legacy: Any) -> reporting.Record:
        """Record the test's power at a *declared* effect (`repro.core.readings.Power`): the
        probability that the checks it `covers`, at this run's sizes, pass when the claim holds with
        its effect. Never observed power: the effect may not be this run's measurement (the plugin
        fails a test whose power effect equals one of its checks' measured values).

        The harness judges by it, per check (`report.TestOutcome.verdict`): a failing check reads
        contradicted only when a power covering *that* check has a source or interest basis (never
        budget, never fitted to this run), is ≥ POWER_ENOUGH, states its size at the claim's edge and
        takes no plug-in nuisance sd, and the test's family-wise size over its failing checks is
        ≤ SIZE_ENOUGH; a check that passes by not rejecting a null reads reproduced only with a
        covering power ≥ POWER_ENOUGH against a declared alternative.

        `**legacy`: the keyword form of earlier runs (value=…, effect=…, basis=…, …, `covers` optional);
        it builds the same `Power` (a power without `covers` covers no check)."""
        if p is not None and not isinstance(p, Power):  # the keyword form with its value first
            legacy["value"], p = p, None
        if p is None:
            if "value" not in legacy:
                raise TypeError("claim.power: pass a Power (repro.core.readings.Power)")
            legacy.setdefault("covers", ())
            p = Power(legacy.pop("value"), **legacy)
        elif legacy:
            raise TypeError(f"claim.power: a Power or keywords, not both ({sorted(legacy)})")
        detail = p.to_dict()
        why = f"at the declared effect ({p.effect}; {p.basis}); {p.test} on {p.sample}; {p.method}"
        why += f"; 80% power at: {p.decide}"
        if p.decide_either:
            why += f"; {reporting.EITHER_WAY:.0%} power (a miss then reads contradicted) at: {p.decide_either}"
        return self.record(
            "power at the declared effect",
            p.value,
            reporting.POWER_ENOUGH,
            None,
            why,
            compare="ge",
            claim_id=claim_id,
            role="power",
            key=power_key(getattr(self.item, "name", None), p.covers if self._powers_recorded() else ()),
            power=detail,
        )

    def _powers_recorded(self) -> int:
        return sum(1 for k, r in self.item.user_properties if k == PROP_RECORD and r.get("role") == "power")

    def figure(self, fig: Any, name: str, *, claim_id: str | None = None) -> Path:
        """Save a matplotlib figure as artifacts/figures/<ID>_<name>.png (atomic) and close it."""
        import matplotlib.pyplot as plt

        cid = self._id(claim_id)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{cid}_{name}").strip("-")
        path = self.figures_dir / f"{stem}.png"
        with atomic_path(path) as tmp:
            # no timestamps / software strings in the PNG: identical runs give identical files
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
        self.item.user_properties.append((PROP_FIGURE, f"figures/{path.name}"))
        return path

    def not_reproduced(self, reason: str) -> None:
        """Mark this test a strict xfail (DESIGN "Verdicts") from inside the test, once the
        measurement that decides it is known (e.g. only at the `ci` profile): an
        AssertionError is the expected outcome, anything else fails, and a pass is an XPASS
        failure that makes someone update the verdict. On a user's model (`users_model`) and in a
        decide chunk (`decide_chunk`: a run sized to decide its claims, where the ci run's
        expectation is the question, not the answer) the recorded expectations do not apply:
        nothing is marked, and a failing check reads by its power (`plugin.pytest_runtest_call`)."""
        if self.users_model is not None or self.decide_chunk is not None:
            return
        self.item.add_marker(pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))

    def not_reproduced_if(self, known: dict, key: tuple, measured: str) -> None:
        """`not_reproduced` when `key` (e.g. (claim ID, model name) or (claim ID, profile name))
        is in `known`, a test module's table of verdicts decided from earlier measurements (not
        from this run's numbers, so the test still fails if the behaviour changes the other way),
        with this run's `measured` numbers appended to the stated reason."""
        reason = known.get(key)
        if reason:
            self.not_reproduced(f"{key[-1]}: {reason} Measured: {measured}")

    def applies(self, holds: bool, reason: str) -> None:
        """A precondition of the claim on the run's model (e.g. a final-norm gain that differs from
        1, or the claim tests nothing): on a user's model (`users_model`) that lacks it, the claim is
        not applicable for `reason`; on the embedded models the test's own check asserts it."""
        if not holds and self.users_model is not None:
            self.not_applicable(reason)

    def not_applicable(self, reason: str) -> None:
        """End the test: the claim does not apply to this run's model (it lacks what the claim is
        about: a final-norm gain, a first token to sink on, an architecture the layer map knows…).
        The claim reads "not applicable: <reason>" — not a failure, not a skip for a missing
        resource."""
        pytest.skip(reporting.NOT_APPLICABLE_PREFIX + reason)

    def corpus(self, read: str, *, shift: str | None = None, claim_id: str | None = None) -> None:
        """State the text this test's numbers read: `read` the corpus the run's
        `--corpus` gave it (the `corpus_name` fixture, "brown" by default), or a fixed text the claim
        names (e.g. the source's own prompts); `shift` a second corpus the claim reads on purpose
        whatever `--corpus` says (the shifted domain, e.g. "stdlib-code"). claims.json gives each
        claim the union over its tests as `"corpus": "brown; shift: stdlib-code"` (null: no text
        read: random tokens, Gaussian inputs or weights only). Applies to every claim ID of the
        test unless `claim_id` names one."""
        if not read:
            raise ValueError("claim.corpus: name the corpus read (e.g. the corpus_name fixture's value)")
        ids = self.ids if claim_id is None else [self._id(claim_id)]
        self.item.user_properties.append(
            (PROP_CORPUS, {"claims": list(ids), "read": str(read), "shift": None if shift is None else str(shift)})
        )

    def table(self, title: str, columns: list[str], rows: list[list[Any]], *, claim_id: str | None = None) -> None:
        """A table for the report (e.g. the source's Table 3 next to ours)."""
        payload = {
            "claim": self._id(claim_id),
            "title": title,
            "columns": list(columns),
            "rows": [reporting.plain(list(r)) for r in rows],
        }
        self.item.user_properties.append((PROP_TABLE, payload))
