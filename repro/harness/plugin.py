"""The claims plugin (loaded by the root conftest.py: `pytest_plugins = ("repro.harness.plugin",)`):
its options, the fixtures a claim test takes, and the hooks around each test.

Where the rest lives:
- `options`: the command-line options, their checks, where the run writes, worker pinning;
- `collection`: claim markers, IDs as keywords, `--claim`, xdist groups;
- `claim`: the `claim` fixture's object (records, checks, power, figures, tables);
- `session`: the run's state on a registered plugin object (`ClaimsSession`): outcomes from the
  test reports, claim IDs from collection (an xdist worker's through its workeroutput), the
  artifacts, the comparison with the committed baseline, the terminal summary;
- `provenance`: claims.json's `run`; `report` / `writers`: verdicts and the files written.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import pytest

from repro.ground.errors import MissingFixture, NotApplicable
from repro.ground.runtime import CacheUnusable, ReproError, resolve_device
from repro.harness import options
from repro.harness import report as reporting
from repro.harness.claim import PROP_CLAIMS, PROP_RECORD, Claim
from repro.harness.profiles import Profile, get_profile
from repro.harness.session import NAME, ClaimsSession, first_line


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "claim(*ids): see pyproject.toml")
    config.addinivalue_line(
        "markers",
        "xdist_group(name): tests that share fixtures run on one xdist worker "
        "(registered here too, for runs with -p no:xdist)",
    )
    config.addinivalue_line(
        "markers",
        "policy_dtype: the test's experiment computes (or trains) in the dtype "
        "policy's choice (runtime.resolve_dtype('auto')); its records say so",
    )
    options.check_options(config)
    if not config.pluginmanager.has_plugin(NAME):
        config.pluginmanager.register(ClaimsSession(config), NAME)
    if options.is_worker(config):
        options.pin_worker(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `model_name` runs once per pretrained model of the run (--model, else
    every embedded model), module-scoped: a module's per-model fixtures are built once each."""
    if "model_name" in metafunc.fixturenames:
        metafunc.parametrize("model_name", options.run_models(metafunc.config), scope="module")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def claim(request: pytest.FixtureRequest) -> Claim:
    return Claim(request.node, options.artifacts_dir(request.config))


@pytest.fixture(scope="session")
def profile(pytestconfig: pytest.Config) -> Profile:
    return get_profile(pytestconfig.getoption("--profile"))


@pytest.fixture(scope="session")
def device(pytestconfig: pytest.Config):
    return resolve_device(pytestconfig.getoption("--device"))


@pytest.fixture(scope="session")
def corpus_name(pytestconfig: pytest.Config) -> str:
    """--corpus: the text every claim that reads text reads (evaluation windows, training streams,
    token counts); a claim's deliberately shifted corpus (stdlib-code) stays fixed. A test states
    what it read with `claim.corpus(corpus_name, shift=...)`."""
    return pytestconfig.getoption("--corpus")


@pytest.fixture(scope="session")
def train_procs(pytestconfig: pytest.Config) -> int:
    """--train-procs: processes a claim's training job runs on (repro.core.launch)."""
    return pytestconfig.getoption("--train-procs")


@pytest.fixture(scope="session")
def model_names(pytestconfig: pytest.Config) -> list[str]:
    """Models for claims on pretrained models: --model, else both embedded models."""
    return options.run_models(pytestconfig)


@pytest.fixture(scope="session")
def pretrained(device):
    """`pretrained(name)` -> (model, tokenizer), loaded once per session; a hub model that cannot be
    reached, a fixture never fetched, and an embedded model whose cache entry cannot be (re)built in
    a read-only cache skip the test with the reason (DESIGN.md: skipped only for a missing
    resource); any other fault of an embedded model is an error."""
    from repro.core.models.embedded import EMBEDDED_MODELS
    from repro.core.models.pretrained import load_pretrained

    loaded: dict[str, Any] = {}

    def get(name: str):
        if name not in loaded:
            try:
                loaded[name] = load_pretrained(name, device=device)
            except ReproError as err:
                if name in EMBEDDED_MODELS and not isinstance(err, (MissingFixture, CacheUnusable)):
                    raise
                pytest.skip(str(err))
        return loaded[name]

    return get


# --------------------------------------------------------------------------- around each test


def _fault(err: ReproError) -> None:
    """A ReproError in a claim test: a fixture that was never fetched, or one the run cannot
    (re)build because the cache is read-only (`CacheUnusable`: a truncated or corrupt model entry in
    a shared cache), is a missing resource — skipped, with the line that says what to do; a model
    that lacks what the claim is about is `NotApplicable` (the claim reads "not applicable");
    anything else is one line, failed."""
    if isinstance(err, (MissingFixture, CacheUnusable)):
        pytest.skip(str(err))
    if isinstance(err, NotApplicable):
        pytest.skip(reporting.NOT_APPLICABLE_PREFIX + str(err))
    pytest.fail(f"ReproError: {err}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    try:
        return (yield)
    except ReproError as err:
        _fault(err)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """ReproError → one line (`_fault`). On a user's model, and in a decide chunk (a profile sized
    to decide its claims, which therefore have no recorded expectation there), a failing check is
    not a regression but the claim's answer: its AssertionError reads as an xfail, whose verdict —
    contradicted or inconclusive — comes from the power the test recorded on that run's data. A
    control that passes, or any other error, still fails."""
    try:
        return (yield)
    except ReproError as err:
        _fault(err)
    except AssertionError as err:
        model, chunk = options.users_model(item), options.decide_chunk(item)
        if model is None and chunk is None:
            raise
        who = f"{model} (no recorded expectation)" if model else f"{chunk} (a decide chunk: no recorded expectation)"
        pytest.xfail(f"{who}: {first_line(str(err))}")


def observed_power(records: Iterable[dict]) -> str | None:
    """Why a test's power is observed power (its declared effect is one of its own checks' measured
    values, so the power is a function of the measurement that decided the test), or None."""
    recs = list(records)
    measured = [
        (r["name"], r["measured"])
        for r in recs
        if r.get("role") == "check"
        and isinstance(r.get("measured"), (int, float))
        and not isinstance(r.get("measured"), bool)
    ]
    for r in recs:
        eff = (r.get("power") or {}).get("effect_value")
        if r.get("role") != "power" or eff is None:
            continue
        for name, m in measured:
            if math.isclose(eff, m, rel_tol=1e-9, abs_tol=1e-12):
                return (
                    f"{r['claim']}: the power's effect ({reporting.fmt(eff)}) is this run's measurement '{name}': "
                    "observed power (0 whenever the test fails) cannot decide a verdict; declare the effect"
                )
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The harness's cross-check: a claim test that passed while one of its asserted records
    (`claim.check`) does not hold is a failure of the harness, whatever the assertion mode
    (`python -O`, `--assert=plain`) or whatever caught the check's AssertionError."""
    rep = yield
    if rep.when == "call":
        observed = observed_power(r for k, r in item.user_properties if k == PROP_RECORD)
        if observed:
            rep.outcome = "failed"
            rep.longrepr = f"harness: {observed}"
            if hasattr(rep, "wasxfail"):  # a strict xfail does not absorb it
                del rep.wasxfail
            return rep
    if rep.when == "call" and rep.passed:  # a non-strict xfail that passed (a user's model) too
        bad = [
            r
            for k, r in item.user_properties
            if k == PROP_RECORD and r.get("role") == "check" and r.get("within") is not True
        ]
        if bad:
            r = bad[0]
            rep.outcome = "failed"
            rep.longrepr = (
                f"harness: the test passed, but its asserted record {r['claim']} '{r['name']}' does not "
                f"hold (measured {reporting.fmt(r['measured'])} vs {r['compare']} "
                f"{reporting.fmt(r['expected'])}): an assertion was skipped or a check's AssertionError "
                "was caught"
            )
    return rep


# a claim test's xfail, as pytest's terminal line shows it: its verdict, not "x" / XFAIL
TESTSTATUS = {
    reporting.CONTRADICTED: ("C", ("CONTRADICTED", {"yellow": True, "bold": True})),
    reporting.INCONCLUSIVE: ("I", ("INCONCLUSIVE", {"yellow": True})),
}


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A claim test's (strict) xfail is a verdict — contradicted or inconclusive at this scale, by
    the power it recorded (`report.TestOutcome.verdict`) — and pytest's progress line and its
    verbose and summary lines say which ("C" / CONTRADICTED, "I" / INCONCLUSIVE). Its category
    stays "xfailed", so the counts at the end of the run and `-r x` still find it."""
    if report.when != "call" or not report.skipped or not hasattr(report, "wasxfail"):
        return None
    ids = next((v for k, v in report.user_properties if k == PROP_CLAIMS), None)
    if ids is None:
        return None
    records = [v for k, v in report.user_properties if k == PROP_RECORD]
    verdict = reporting.TestOutcome(report.nodeid, list(ids), "xfailed", records=records).verdict()
    letter, word = TESTSTATUS[verdict]
    return "xfailed", letter, word
