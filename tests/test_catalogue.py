"""The claim catalogue: well-formed, complete against the shared CLAIMS.md, and located;
the sources' numbers defined there once (no copy in the claims or the library).

Fast (no models, no torch). The checks against the shared documents skip when the repo
is not checked out beside ``shared/`` (``<parent>/main`` next to ``<parent>/shared``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from repro.harness import catalogue, topics
from repro.harness.catalogue import CATALOGUE, CLAIMS, ID_PATTERN, NUMBERS, SOURCES, TOPICS, ClaimSpec, get

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
CLAIMS_MD = SHARED / "CLAIMS.md"
SEEDS = SHARED / "seeds"


# ---------------------------------------------------------------- the catalogue itself


def test_ids_unique_and_well_formed():
    ids = [spec.id for spec in CLAIMS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert list(CATALOGUE) == ids
    bad = [i for i in ids if not ID_PATTERN.match(i)]
    assert not bad, f"malformed IDs: {bad}"
    assert all(CATALOGUE[i].id == i for i in CATALOGUE)


def test_id_pattern_accepts_the_catalogue_shapes_only():
    for good in ("BB-1", "BB-1x", "BB-3.2a", "BB-4.1", "SF-10"):
        assert ID_PATTERN.match(good), good
    for bad in ("bb-1", "BB1", "BB-", "BB-1.", "BBB-1", "BB-1.2.3", "BB-1 ", "BB-1X"):
        assert not ID_PATTERN.match(bad), bad


def test_every_topic_and_source_is_known():
    for spec in CLAIMS:
        assert spec.topic == spec.id.split("-", 1)[0], spec.id
        assert spec.topic in TOPICS, spec.id
        assert spec.source in SOURCES, spec.id
    assert set(catalogue.TOPIC_NOTES) <= set(TOPICS)
    # every topic and every source is used; topics appear in TOPICS order
    assert {spec.topic for spec in CLAIMS} == set(TOPICS)
    assert {spec.source for spec in CLAIMS} == set(SOURCES)
    first_seen = list(dict.fromkeys(spec.topic for spec in CLAIMS))
    assert first_seen == list(TOPICS), "claims of a topic must be contiguous, in TOPICS order"


@pytest.mark.parametrize("spec", CLAIMS, ids=lambda s: s.id)
def test_text_fields_are_one_clean_line(spec: ClaimSpec):
    assert spec.statement.strip(), "empty statement"
    assert spec.section.strip(), "empty section"
    for name in ("statement", "section", "source_values", "notes"):
        value = getattr(spec, name)
        assert isinstance(value, str), name
        assert "\n" not in value and value == value.strip(), f"{name} is not one clean line"
        assert "|" not in value, f"{name} contains a table separator"


def test_specs_are_frozen():
    spec = get("BB-4.2")
    with pytest.raises(AttributeError):
        spec.statement = "changed"  # type: ignore[misc]


def test_ref_names_the_source_and_the_section():
    spec = get("BB-4.2")
    assert spec.ref == f"001 {spec.section}"
    assert "Table 3" in spec.ref and "Prop. 4" in spec.ref


def test_get_returns_the_spec():
    assert get("BB-3.2a") is CATALOGUE["BB-3.2a"]
    assert get("SF-10").topic == "SF"


@pytest.mark.parametrize(
    ("wrong", "expected"), [("BB-4.3", "BB-4.2"), ("bb-4.2", "BB-4.2"), ("BB-3.2", "BB-3.2a"), ("SF-11", "SF-10")]
)
def test_unknown_id_raises_with_suggestions(wrong, expected):
    with pytest.raises(KeyError) as info:
        get(wrong)
    message = str(info.value)
    assert isinstance(info.value, catalogue.UnknownClaimError)
    assert repr(wrong) in message and "did you mean" in message
    assert expected in message
    assert not message.startswith(("'", '"')), "message must not be KeyError's repr"


def test_unknown_id_without_close_match_lists_topics():
    with pytest.raises(KeyError) as info:
        get("QQ-99")
    message = str(info.value)
    assert all(topic in message for topic in TOPICS)


def test_non_string_id_raises_keyerror():
    with pytest.raises(KeyError):
        get(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- against CLAIMS.md

_ROW = re.compile(r"^\|\s*(?P<id>[A-Z]{2}-[^\s|]+)\s*\|")
_HEADING = re.compile(r"^##\s+(?P<topic>[A-Z]{2})\s+[—-]")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _parse_claims_md(text: str) -> list[dict[str, str]]:
    """One dict per `| ID | … |` row: id, topic (of the enclosing `## XX —` section), numbers."""
    rows: list[dict[str, str]] = []
    topic = ""
    header: list[str] = []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            topic, header = heading["topic"], []
            continue
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if cells[0] == "ID":
            header = [cell.lower() for cell in cells]
            continue
        match = _ROW.match(line)
        if not match:
            continue
        numbers_col = next((k for k, name in enumerate(header) if "numbers" in name), None)
        numbers = cells[numbers_col] if numbers_col is not None and numbers_col < len(cells) else ""
        rows.append({"id": match["id"], "topic": topic, "numbers": numbers})
    return rows


@pytest.fixture(scope="module")
def claims_md_rows() -> list[dict[str, str]]:
    if not CLAIMS_MD.is_file():
        pytest.skip(f"shared claims list not found at {CLAIMS_MD} (repo not beside shared/)")
    rows = _parse_claims_md(CLAIMS_MD.read_text(encoding="utf-8"))
    assert rows, f"no `| ID | ... |` rows parsed from {CLAIMS_MD}"
    return rows


def test_catalogue_ids_equal_claims_md(claims_md_rows):
    md_ids = [row["id"] for row in claims_md_rows]
    assert len(md_ids) == len(set(md_ids)), "CLAIMS.md repeats an ID"
    missing = [i for i in md_ids if i not in CATALOGUE]
    extra = [i for i in CATALOGUE if i not in set(md_ids)]
    assert not missing and not extra, f"missing from catalogue: {missing}; not in CLAIMS.md: {extra}"


def test_catalogue_order_follows_claims_md(claims_md_rows):
    assert list(CATALOGUE) == [row["id"] for row in claims_md_rows]


def test_topics_follow_claims_md_sections(claims_md_rows):
    for row in claims_md_rows:  # IDs unknown to the catalogue: see the test above
        if row["id"] in CATALOGUE:
            assert row["topic"] == CATALOGUE[row["id"]].topic, row["id"]
    assert list(dict.fromkeys(row["topic"] for row in claims_md_rows)) == list(TOPICS)


def test_source_values_match_claims_md(claims_md_rows):
    def norm(value: str) -> str:
        value = " ".join(value.split())
        return "" if value in {"—", "-", "–"} else value

    diff = {
        row["id"]: (row["numbers"], CATALOGUE[row["id"]].source_values)
        for row in claims_md_rows
        if row["id"] in CATALOGUE and norm(row["numbers"]) != norm(CATALOGUE[row["id"]].source_values)
    }
    assert not diff, f"source values drifted from CLAIMS.md (CLAIMS.md, catalogue): {diff}"


# ---------------------------------------------------------------- against the sources

_FIG_OR_TABLE = re.compile(
    r"\b(?P<kind>Figs?|Tables?)\.?\s+(?P<first>[0-9]+|[IVX]+)(?:[a-z]|\([a-z]\))*"
    r"(?:\s*[–-]\s*(?P<last>[0-9]+))?"
)
_LOCATION = re.compile(
    r"(?P<kind>§|App\.\s|Prop\.\s|Algorithm\s|Alg\.\s)"
    r"(?P<name>[0-9]+(?:\.[0-9]+)*|[IVX]+\b|[A-Z](?:\.[0-9]+)*)"
)


def _seed_text(stem: str) -> str:
    path = SEEDS / f"{stem}.txt"
    if not path.is_file():
        pytest.skip(f"source document not found at {path}")
    return path.read_text(encoding="utf-8")


def _located(text: str, kind: str, name: str) -> bool:
    n = re.escape(name)
    if kind.startswith("Fig"):
        pattern = rf"(?:Figure|Fig\.)\s*{n}(?![0-9])"
    elif kind.startswith("Table"):  # 001 renders "Table 4a" as "Table 44a"
        pattern = rf"(?:Table|TABLE)[\s~˜]*(?:{n}|{n}{n}[a-z])(?![0-9])"
    elif kind == "§":
        pattern = rf"(?m)^(?:#+\s*)?{n}\.?\s+[A-Z]"
    elif kind.startswith("App"):
        pattern = rf"(?m)^(?:Appendix\s+)?{n}\s+[A-Z]"
    elif kind.startswith("Prop"):
        pattern = rf"Proposition\s+{n}\b"
    else:  # Algorithm / Alg.
        pattern = rf"Algorithm\s+{n}\b"
    return re.search(pattern, text) is not None


def _references(section: str) -> list[tuple[str, str]]:
    refs: list[tuple[str, str]] = []
    for match in _FIG_OR_TABLE.finditer(section):
        kind = "Fig" if match["kind"].startswith("Fig") else "Table"
        refs.append((kind, match["first"]))
        if match["last"]:
            refs.append((kind, match["last"]))
    for match in _LOCATION.finditer(section):
        refs.append((match["kind"].strip(), match["name"]))
    return refs


@pytest.mark.parametrize("spec", CLAIMS, ids=lambda s: s.id)
def test_section_points_at_places_that_exist_in_the_source(spec: ClaimSpec):
    """Each §, App., Fig., Table, Prop., Algorithm and quoted heading named in `section`
    occurs in the source document (so a location was read, not guessed)."""
    text = _seed_text(spec.source)
    absent = [f"{kind} {name}" for kind, name in _references(spec.section) if not _located(text, kind, name)]
    quoted = re.findall(r"“([^”]+)”", spec.section)
    absent += [f"“{q}”" for q in quoted if q not in text]
    assert not absent, f"{spec.id}: not found in {spec.source}.txt: {absent}"


def test_sources_are_the_seed_documents():
    if not SEEDS.is_dir():
        pytest.skip(f"seed documents not found at {SEEDS}")
    on_disk = {path.stem for path in SEEDS.glob("[0-9][0-9][0-9]_*.txt")}
    assert set(SOURCES) == on_disk


# ---------------------------------------------------------------- the sources' numbers


def test_numbers_belong_to_catalogue_claims_and_are_cited():
    assert NUMBERS, "no source numbers in the catalogue"
    unknown = [claim_id for claim_id in NUMBERS if claim_id not in CATALOGUE]
    assert not unknown, f"NUMBERS keys that are not catalogue IDs: {unknown}"
    for claim_id, entries in NUMBERS.items():
        assert entries, f"{claim_id}: an empty entry"
        prefix = CATALOGUE[claim_id].source.split("_", 1)[0]
        for key, entry in entries.items():
            assert isinstance(key, str) and key, (claim_id, key)
            assert isinstance(entry, catalogue.SourceNumber), (claim_id, key)
            cite = entry.cite
            assert isinstance(cite, str) and cite.strip(), f"{claim_id} {key!r}: no citation"
            assert "\n" not in cite and cite == cite.strip(), f"{claim_id} {key!r}: citation is not one clean line"
            assert cite.startswith(prefix + " "), f"{claim_id} {key!r}: cite {cite!r} does not name source {prefix}"
            assert entry.value is not None, (claim_id, key)


@pytest.mark.parametrize(
    ("claim_id", "key", "value"),
    [("BB-1", "fig1a", (58.5, 2000)), ("SF-7", "fig13", (12 / 40, 2.47, 2.74)), ("BB-2.2", "agreement", 0.76)],
)
def test_number_returns_the_value(claim_id, key, value):
    assert catalogue.number(claim_id, key) == value
    assert catalogue.source_number(claim_id, key).value is catalogue.number(claim_id, key)
    assert catalogue.cite(claim_id, key) == NUMBERS[claim_id][key].cite


def test_tables_are_read_only():
    table = catalogue.number("SK-3", "table7")
    assert table["baseline"] == (21.33, 30.36)
    with pytest.raises(TypeError):
        table["baseline"] = (0.0, 0.0)  # type: ignore[index]
    with pytest.raises(AttributeError):
        NUMBERS["SK-3"]["table7"].value = {}  # type: ignore[misc]


def test_unknown_number_names_the_claim_and_its_keys():
    with pytest.raises(KeyError) as info:
        catalogue.number("BB-1", "table2")
    message = str(info.value)
    assert isinstance(info.value, catalogue.UnknownNumberError)
    assert "'table2'" in message and "BB-1" in message
    assert all(repr(key) in message for key in NUMBERS["BB-1"])
    assert not message.startswith(("'", '"')), "message must not be KeyError's repr"
    with pytest.raises(catalogue.UnknownNumberError, match="RS-2: it has none"):
        catalogue.number("RS-2", "anything")  # a claim the source gives no number for
    with pytest.raises(catalogue.UnknownClaimError, match="did you mean"):
        catalogue.number("BB-4.3", "table3")  # an ID not in the catalogue


# A copy of a source number: a `source=` argument written out as a number (or a tuple /
# expression of numbers), a SOURCE_*/TABLE* name (or a local `source`) assigned a literal number
# or table, and a `source…` parameter with a literal numeric default.
_COPY_NAME = re.compile(r"^(?:SOURCE|TABLE)[A-Z0-9_]*$|^source$")
_LITERAL_CALLS = {"round", "float", "int", "abs"}


def _is_literal(node: ast.AST) -> bool:
    """Written out in the code: a number or string, or a display / arithmetic of them only."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex, str)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left) and _is_literal(node.right)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return (
            bool(node.values)
            and all(k is not None and _is_literal(k) for k in node.keys)
            and all(_is_literal(v) for v in node.values)
        )
    if isinstance(node, ast.Call):  # round(11 / 12, 3)
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in _LITERAL_CALLS
            and bool(node.args)
            and not node.keywords
            and all(_is_literal(a) for a in node.args)
        )
    return False


def _has_number(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, (int, float, complex)) and not isinstance(n.value, bool)
        for n in ast.walk(node)
    )


def _written_out(value: ast.AST) -> bool:
    """A literal value, or a table (dict, tuple, list) with at least one literal number in it."""
    if _is_literal(value):
        return True
    items = value.values if isinstance(value, ast.Dict) else getattr(value, "elts", None)
    if not isinstance(value, (ast.Dict, ast.Tuple, ast.List, ast.Set)) or items is None:
        return False
    return any(_is_literal(item) and _has_number(item) for item in items)


def source_number_copies(text: str, filename: str = "<string>") -> list[str]:
    """Each place in Python `text` that writes a source number out instead of reading it from
    the catalogue, as "file:line: what"."""
    found = []
    for node in ast.walk(ast.parse(text, filename)):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "source" and _is_literal(kw.value) and _has_number(kw.value):
                    found.append(f"{filename}:{kw.value.lineno}: source={ast.unparse(kw.value)}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and _COPY_NAME.match(target.id) and _written_out(node.value):
                    found.append(f"{filename}:{node.lineno}: {target.id} = {ast.unparse(node.value)[:60]}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            defaults = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
            defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in defaults:
                if arg.arg.lower().startswith("source") and _is_literal(default) and _has_number(default):
                    found.append(f"{filename}:{default.lineno}: parameter {arg.arg}={ast.unparse(default)}")
    return found


def _scanned_files() -> list[Path]:
    files = sorted((REPO / "claims").glob("*.py")) + sorted((REPO / "repro").rglob("*.py"))
    return [path for path in files if path.name != "catalogue.py"]  # the registry and the topics' catalogues


def test_no_copy_of_a_source_number_in_claims_or_library():
    files = _scanned_files()
    assert any(path.parent.name == "claims" for path in files) and len(files) > 20, files
    copies = [
        hit
        for path in files
        for hit in source_number_copies(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert not copies, (
        "source numbers written out instead of read from the topic's catalogue "
        f"(repro/<topic>/catalogue.py, catalogue.number): {copies}"
    )


def test_the_scan_catches_written_out_numbers():
    caught = source_number_copies(
        "SOURCE_TABLE9 = {'full': 0.46, 'mlp': 0.25}\n"  # 1: a table
        "SOURCE_RATE = 0.76\n"  # 2: a number
        "TABLE8 = (12 / 40, 2.47, catalogue.number('SF-7', 'fig13')[2])\n"  # 3: a mixed tuple
        "def test(claim):\n"
        "    source = {42: (2.2e-8, 6.3e-8)}\n"  # 5: a local table
        "    claim.check('x', 1.0, 0.5, compare='ge', source=58.5)\n"  # 6
        "    claim.record('y', 2.0, source=-0.5)\n"  # 7: a signed number
        "    claim.record('z', 2.0, source=(0.0, 3.09e-69))\n"  # 8: a tuple
        "    claim.record('w', 2.0, source=round(11 / 12, 3))\n"  # 9: arithmetic on literals
        "def fig(res, source_rate: float = 0.76):\n"  # 10: a default
        "    pass\n"
    )
    assert sorted(int(hit.split(":")[1]) for hit in caught) == [1, 2, 3, 5, 6, 7, 8, 9, 10], caught
    clean = source_number_copies(
        "SOURCE_TABLE9 = catalogue.number('BB-3', 'table2')\n"
        "SOURCE_STEP = SOURCE_POOR - SOURCE_SF7[1]\n"  # derived from catalogue values
        "SOURCE_STYLE = dict(color='black', linestyle=':')\n"  # not a number
        "@pytest.mark.claim('BB-1', source='001 §3, Fig 1a')\n"  # a citation, not a number
        "def test(claim):\n"
        "    source = SOURCE_TABLE9\n"
        "    claim.check('x', 1.0, 0.5, compare='ge', source=round(SOURCE_STEP, 2))\n"
        "    claim.record('y', 2.0, source=None)\n"
    )
    assert clean == []


def test_number_citations_point_at_places_that_exist_in_the_source():
    """Each Fig., Table, §, App., Prop. and quoted heading a citation names occurs in the source
    document, as for the claims' sections."""
    for claim_id, entries in NUMBERS.items():
        text = _seed_text(CATALOGUE[claim_id].source)
        for key, entry in entries.items():
            absent = [f"{kind} {name}" for kind, name in _references(entry.cite) if not _located(text, kind, name)]
            absent += [f"“{q}”" for q in re.findall(r"“([^”]+)”", entry.cite) if q not in text]
            assert not absent, f"{claim_id} {key!r}: not found in {CATALOGUE[claim_id].source}.txt: {absent}"


# A copy written into a string or a number token: every number of NUMBERS with at least four
# significant digits (Table II's 28.46, §7's 12,236 / 404,748, ccnet-405's 13,268, …), as Python
# writes it or with thousands separators. Fewer digits (0.25, 2000) recur as sizes and thresholds
# of our own, and so do powers of two (a width of 2048: Table 1(c)'s 1.2B shape); comments and
# docstrings may cite the source.
def _leaves(value):
    if isinstance(value, bool) or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        yield value
    elif hasattr(value, "items"):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)


def _significant_digits(x) -> int:
    return len(repr(x).lower().split("e")[0].replace("-", "").replace(".", "").strip("0"))


DISTINCTIVE = {
    x
    for entries in catalogue.NUMBERS.values()
    for n in entries.values()
    for x in _leaves(n.value)
    if _significant_digits(x) >= 4 and not (isinstance(x, int) and x > 0 and x & (x - 1) == 0)
}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def distinctive_number_copies(text: str, filename: str = "<string>") -> list[str]:
    """Each number or string token of Python `text` (docstrings and comments aside) that writes
    out one of DISTINCTIVE, as "file:line: what"."""
    import io
    import tokenize

    doc = _docstring_lines(ast.parse(text, filename))
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in (tokenize.NUMBER, tokenize.STRING) or tok.start[0] in doc:
            continue
        if tok.type == tokenize.NUMBER:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if value in DISTINCTIVE:
                found.append(f"{filename}:{tok.start[0]}: {tok.string}")
            continue
        for x in DISTINCTIVE:
            for form in {repr(x), f"{x:,}"} if isinstance(x, int) else {repr(x)}:
                if re.search(rf"(?<![\d.,]){re.escape(form)}(?!\d)", tok.string):
                    found.append(f"{filename}:{tok.start[0]}: {form!r} in a string")
    return found


def test_the_distinctive_scan_sees_copies_in_strings_and_numbers():
    """The scan's negative control: the copies issue 19's audit found (a record label with §7's
    pair counts, ccnet-405's size, Table II's scores) are caught; a docstring or comment citing
    them, and a number that merely contains the digits, are not."""
    text = (
        '"""Cites 12,236 / 404,748 (003 §7)."""\n'
        "x = 28.46  # Table II\n"
        'label = f"(source 13B: 12,236 / 404,748)"\n'
        'other = "405 prompts, 13,268 tokens"\n'
        "fine = 128.46 + 0.25  # 13,268 in a comment\n"
    )
    found = distinctive_number_copies(text, "t.py")
    assert sorted(found) == [
        "t.py:2: 28.46",
        "t.py:3: '12,236' in a string",
        "t.py:3: '404,748' in a string",
        "t.py:4: '13,268' in a string",
    ]
    assert {12236, 404748, 13268, 28.46} <= DISTINCTIVE


def test_no_distinctive_source_number_is_written_out():
    """No claim file or module outside the catalogue writes out a distinctive source number, in
    code or in a string (labels, reasons, titles read them from NUMBERS)."""
    found = []
    for path in sorted([*REPO.joinpath("repro").rglob("*.py"), *REPO.joinpath("claims").glob("*.py")]):
        if path.name != "catalogue.py":
            found += distinctive_number_copies(path.read_text("utf-8"), str(path.relative_to(REPO)))
    assert not found, "source numbers written out (read them with catalogue.number):\n" + "\n".join(found)


def test_each_topic_owns_its_claims_and_numbers():
    """The registry only collects: every claim and source number lives in its topic's catalogue
    (repro/<topic>/catalogue.py), and the topic's own `number` reads the same entry."""
    import importlib

    for prefix, package in catalogue.PACKAGES.items():
        topic = importlib.import_module(f"repro.{package}.catalogue")
        assert topic.TOPIC == prefix and topic.CLAIMS, package
        assert all(spec.topic == prefix and spec.id.startswith(prefix + "-") for spec in topic.CLAIMS), package
        assert all(claim_id.startswith(prefix + "-") for claim_id in topic.NUMBERS), package
        for claim_id, entries in topic.NUMBERS.items():
            for key in entries:
                assert topic.number(claim_id, key) is catalogue.number(claim_id, key)
    assert len(catalogue.CLAIMS) == sum(
        len(importlib.import_module(f"repro.{p}.catalogue").CLAIMS) for p in topics.PACKAGES
    )
