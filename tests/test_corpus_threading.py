"""`--corpus` reaches every claim that reads text (issue 22 item 4), and each claim states what it
read (issue 20 item 5).

Static (no models, no torch): an AST scan of claims/*.py and the topic packages finds every call
that reads a corpus's text and checks that the corpus is passed (the `corpus_name` fixture's value,
or a fixed shifted corpus named on purpose), that nothing reads Brown directly, and that every
claim test whose numbers come from text states its corpus with `claim.corpus(...)`. The scan is
shown able to fail on snippets. Then the topic functions that took a `corpus` parameter are shown
reading a local directory of text files (window and token reading only: nothing is trained).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLAIM_FILES = sorted((ROOT / "claims").glob("test_*.py"))
TOPIC_FILES = sorted(
    p
    for d in sorted((ROOT / "repro").iterdir())
    if d.is_dir() and d.name not in ("core", "harness", "__pycache__")
    for p in d.glob("*.py")
)

# calls that read a corpus's text → (position of the corpus argument, its keyword); position
# None: keyword only
READERS: dict[str, tuple[int | None, str]] = {
    "windows": (None, "corpus"),  # repro.core.data.windows
    "bos_windows": (None, "corpus"),
    "corpus_documents": (0, "name"),
    "corpus_tokens": (0, "corpus"),  # repro.core.token_streams.corpus_tokens
    "text_tokens": (1, "corpus"),  # repro.seedprint.lineage
    "heldout_windows": (1, "corpus"),
    "random_word_texts": (None, "corpus"),  # repro.seedprint.algorithm
    "Lineage": (None, "corpus"),  # its `corpus` is what every base model pre-trains on
}
# read Brown whatever --corpus says
FORBIDDEN = ("brown_split", "brown_documents")
# corpora a claim may name as a literal: the shifted domain that is part of the claim
# (CS-6's code benchmark, SK-3's second held-out set, SP-4/SP-5's continual training and fine-tunes)
FIXED_SHIFT = ("stdlib-code",)
# claim tests that take a fixture that read text but whose numbers do not come from it
NO_TEXT = {"test_components_read_and_write_dark": "SF-2 reads the weights only (dark shares of W_q … W_2)"}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _corpus_arg(call: ast.Call, pos: int | None, kw: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == kw or k.arg == "corpus":
            return k.value
    if pos is not None and len(call.args) > pos and not isinstance(call.args[pos], ast.Starred):
        return call.args[pos]
    return None


def _calls(node: ast.AST):
    return (n for n in ast.walk(node) if isinstance(n, ast.Call))


def reader_problems(tree: ast.AST, where: str) -> list[str]:
    """Reader calls without a corpus (or with "brown" or another literal that is not a fixed
    shift), direct reads of Brown, and "brown" passed to any call."""
    out = []
    for call in _calls(tree):
        name = _name(call)
        at = f"{where}:{call.lineno}"
        if name in FORBIDDEN:
            out.append(
                f"{at}: {name}(...) reads Brown whatever --corpus says (use data.corpus_documents(corpus, split))"
            )
            continue
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Constant) and arg.value == "brown":
                out.append(f"{at}: {name}(..., 'brown', ...) names Brown: pass the corpus_name fixture's value")
        if name in READERS:
            value = _corpus_arg(call, *READERS[name])
            if value is None:
                out.append(f"{at}: {name}(...) without its corpus: it falls back to Brown (pass corpus=corpus_name)")
            elif isinstance(value, ast.Constant) and value.value not in (*FIXED_SHIFT, "brown"):
                out.append(
                    f"{at}: {name}(...) reads the literal corpus {value.value!r} (pass corpus_name, or a "
                    f"fixed shift: {', '.join(FIXED_SHIFT)})"
                )
    return out


def _is_fixture(fn: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in fn.decorator_list)


def record_problems(tree: ast.Module, where: str) -> list[str]:
    """Claim tests whose numbers come from text (they take a fixture that reads text, directly or
    through other fixtures and helpers, or read it themselves) and never call `claim.corpus`."""
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    fixtures = {k for k, n in defs.items() if isinstance(n, ast.FunctionDef) and _is_fixture(n)}

    def params(fn) -> set[str]:
        return {a.arg for a in fn.args.args} if isinstance(fn, ast.FunctionDef) else set()

    def called(node) -> set[str]:
        return {_name(c) for c in _calls(node)} - {None}

    reads = {k for k, n in defs.items() if called(n) & set(READERS)}
    records = {
        k
        for k, n in defs.items()
        if any(
            _name(c) == "corpus" and isinstance(c.func, ast.Attribute) and ast.unparse(c.func.value) == "claim"
            for c in _calls(n)
        )
    }
    changed = True
    while changed:  # to a fixed point: through fixtures (parameters) and helpers (calls)
        changed = False
        for k, n in defs.items():
            if k not in reads and ((called(n) & reads) or (k in fixtures and params(n) & reads & fixtures)):
                reads.add(k)
                changed = True
            if k not in records and called(n) & records:
                records.add(k)
                changed = True
    out = []
    for k, n in defs.items():
        if not k.startswith("test_") or k in fixtures or not isinstance(n, ast.FunctionDef):
            continue
        from_text = (params(n) & reads & fixtures) or (called(n) & reads) or (called(n) & set(READERS))
        if from_text and k not in records and k not in NO_TEXT:
            out.append(
                f"{where}:{n.lineno}: {k} reads text ({', '.join(sorted(from_text))}) but never states it: "
                "claim.corpus(corpus_name[, shift=...])"
            )
    return out


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), filename=str(path))


@pytest.mark.parametrize("path", CLAIM_FILES, ids=lambda p: p.name)
def test_claims_read_the_corpus_option_and_say_so(path: Path):
    tree = _parse(path)
    problems = reader_problems(tree, path.name) + record_problems(tree, path.name)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", TOPIC_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_topic_functions_take_the_corpus(path: Path):
    """A topic function that reads text takes its corpus (a `corpus: str = "brown"` default is
    fine: the claim passes the fixture's value) and never reads Brown directly."""
    problems = reader_problems(_parse(path), f"{path.parent.name}/{path.name}")
    assert not problems, "\n".join(problems)


def test_no_text_exemptions_name_existing_tests():
    names = {n.name for p in CLAIM_FILES for n in _parse(p).body if isinstance(n, ast.FunctionDef)}
    assert set(NO_TEXT) <= names


GOOD = """
import pytest
from repro.core import data
from repro.core import token_streams

@pytest.fixture(scope="module")
def ids(tok, corpus_name):
    return data.windows(tok, "test", 4, 16, corpus=corpus_name)

def _helper(claim, corpus):
    claim.corpus(corpus, shift="stdlib-code")

@pytest.fixture(scope="module")
def streams(corpus_name):
    return token_streams.corpus_tokens(corpus_name, 4096), token_streams.corpus_tokens("stdlib-code", 4096)

@pytest.fixture(scope="module")
def derived(streams):
    return streams

@pytest.mark.claim("BB-4")
def test_a(claim, ids, corpus_name):
    claim.corpus(corpus_name)

@pytest.mark.claim("BB-4")
def test_b(claim, derived, corpus_name):
    _helper(claim, corpus_name)

@pytest.mark.claim("BB-5")
def test_c(claim, sizes):
    claim.record("x", 1.0)
"""


def _problems(src: str) -> list[str]:
    tree = ast.parse(src)
    return reader_problems(tree, "snippet") + record_problems(tree, "snippet")


def test_the_scan_passes_a_threaded_module():
    assert _problems(GOOD) == []


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            'data.windows(tok, "test", 4, 16, corpus=corpus_name)',
            'data.windows(tok, "test", 4, 16)',
            "without its corpus",
        ),
        (
            "token_streams.corpus_tokens(corpus_name, 4096), token_streams",
            'token_streams.corpus_tokens("brown", 4096), token_streams',
            "names Brown",
        ),
        (
            "token_streams.corpus_tokens(corpus_name, 4096), token_streams",
            'token_streams.corpus_tokens("wikitext-2", 4096), token_streams',
            "literal corpus 'wikitext-2'",
        ),
        (
            'return data.windows(tok, "test", 4, 16, corpus=corpus_name)',
            'return data.token_ids(tok, data.brown_split("test"))',
            "brown_split(...) reads Brown",
        ),
        ("    claim.corpus(corpus_name)\n", "    pass\n", "test_a reads text (ids)"),
        ('    claim.corpus(corpus, shift="stdlib-code")\n', "    pass\n", "test_b reads text (derived)"),
    ],
)
def test_the_scan_catches_a_claim_that_misses_the_corpus(old, new, message):
    assert old in GOOD
    problems = _problems(GOOD.replace(old, new, 1))
    assert any(message in p for p in problems), problems


def test_the_scan_catches_a_lineage_on_brown():
    src = "from repro.seedprint.lineage import Lineage\n\ndef lab(sizes):\n    return Lineage(cfg)\n"
    assert any("Lineage(...) without its corpus" in p for p in _problems(src))


# --------------------------------------------------------------------------- topic functions on a local directory


@pytest.fixture
def local_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """60 small text files (a --corpus directory) and a private REPRO_CACHE holding a copy of the
    Brown BPE (so that nothing is trained and the shared cache gets no token files)."""
    from repro.ground import resources
    from repro.ground.runtime import cache_dir

    try:
        src = next(cache_dir("tokenizers").glob("brown-bpe-4096-*.json"))
    except StopIteration:
        resources.fetch("brown")
        from repro.core.data import brown_tokenizer

        brown_tokenizer(4096)
        src = next(cache_dir("tokenizers").glob("brown-bpe-4096-*.json"))
    cache = tmp_path / "cache"
    (cache / "tokenizers").mkdir(parents=True)
    shutil.copy(src, cache / "tokenizers" / src.name)
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(60):
        (root / f"doc{i:02d}.txt").write_text(
            f"Zebra{i} quokka document {i}. " + "Saltmarsh lanterns drift over the quiet harbour at dusk. " * 30
        )
    return root


def test_lineage_pretrains_on_its_corpus(local_corpus: Path):
    """Lineage(corpus=DIR): the base models' streams and training config name the directory; a
    Lineage without one is Brown's, as before (the SP claims' cache keys)."""
    from repro.core import token_streams
    from repro.seedprint.lineage import Lineage, LineageConfig

    lab = Lineage(LineageConfig(), corpus=str(local_corpus))
    tr, va, ident = lab.corpus()
    assert lab.base_corpus == str(local_corpus) and ident["corpus"] == str(local_corpus)
    assert tr.numel() > va.numel() > 0 and ident["tokenizer"] == "brown-bpe-4096"
    want_tr, want_va, _ = token_streams.corpus_tokens(str(local_corpus), 4096)
    assert tr.equal(want_tr) and va.equal(want_va)
    cfg = lab._train_config(steps=10, seed=0, data_seed=0, corpus=lab.base_corpus)
    assert cfg.corpus == str(local_corpus)
    assert Lineage(LineageConfig()).base_corpus == "brown"


def test_text_tokens_and_heldout_windows_read_a_local_corpus(local_corpus: Path):
    from repro.core import data
    from repro.core.data import brown_tokenizer
    from repro.seedprint.lineage import heldout_windows, text_tokens

    tok = brown_tokenizer(4096)
    tr, va = text_tokens(tok, str(local_corpus), max_tokens=500)
    docs = data.corpus_documents(str(local_corpus), "validation")
    assert tr.numel() == 500 and va.equal(data.token_ids(tok, docs, max_tokens=500))
    assert tok.decode(va[1:12].tolist()).startswith(docs[0].text[:10])
    w = heldout_windows(tok, str(local_corpus), n=3, seq_len=16)
    assert w.shape == (3, 17) and set(w.flatten().tolist()) <= set(va.tolist())


def test_random_word_texts_draw_from_the_corpus(local_corpus: Path):
    from repro.core import data
    from repro.seedprint.algorithm import random_word_texts

    texts = random_word_texts(5, 8, corpus=str(local_corpus))
    vocab = {w for d in data.corpus_documents(str(local_corpus), "validation") for w in d.text.split()}
    assert len(texts) == 5 and all(len(t.split()) == 8 and set(t.split()) <= vocab for t in texts)


def test_operating_table_passes_its_corpus_to_the_lineage(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """`repro seedprint-eval`'s table builds its lineage on `corpus` (Brown by default); stopped
    right there, before anything is trained."""
    from repro.harness.profiles import get_profile
    from repro.seedprint import evaluation, lineage

    seen = []

    class Stop(Exception):
        pass

    class Spy:
        def __init__(self, cfg, *, corpus="brown", progress=False):
            seen.append(corpus)
            raise Stop

    monkeypatch.setattr(lineage, "Lineage", Spy)
    sizes = get_profile("ci").sizes("seedprint")
    for corpus in (None, str(tmp_path)):
        with pytest.raises(Stop):
            evaluation.operating_table(sizes, **({} if corpus is None else {"corpus": corpus}))
    assert seen == ["brown", str(tmp_path)]
