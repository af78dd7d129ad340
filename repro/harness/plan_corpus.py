"""What `repro plan` checks of the text a run reads: the corpus each training job trains on and
the vocabulary of the suite's Brown BPE.

The corpus: the run's `--corpus` (the same names and directories, through
`repro.core.data.corpus_documents`) or the corpus a claim fixes (stdlib-code), its train split's
tokens under the suite's BPE (`corpus_train_tokens`) against each training job's tokens. The
vocabulary: the suite trains its BPE on Brown's train split whatever `--corpus` says, so every
row's `vocab_size` is checked against what that split can yield (`bpe_vocab_lower` /
`bpe_vocab_upper`): decided in seconds, without training it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from repro.ground.errors import ReproError
from repro.ground.sizes import Profile
from repro.harness import topics

# Token counts of the embedded corpora under the suite's byte-level BPE (V = 4096, measured from
# the token cache): Brown train 1,311,112 / validation 181,874; the stdlib code corpus
# 5,612,449 / 595,769; the mix (repro/core/mix.py) 9,799,388 / 1,234,560 (7.5x Brown's train
# split). A larger vocabulary gives a few % fewer tokens.
CORPUS_TOKENS = {"brown": 1_311_112, "stdlib-code": 5_612_449, "mix": 9_799_388}
# Bytes of UTF-8 text per token of the suite's BPE (V = 4096), from the figures above: Brown's
# train split is 4,681,175 bytes (3.57 per token), stdlib code's 9,150,253 (1.63): a corpus's
# own ratio is measured on its text (`corpus_train_tokens`), never assumed.
SAMPLE_BYTES = 4 * 2**20  # a larger --corpus is tokenized this far, and the rest extrapolated


def corpus_train_tokens(name: str) -> tuple[int, str]:
    """(tokens, how) of a corpus's train split under the suite's BPE (V = 4096, <bos>/<eos> per
    document: `repro.core.data.token_ids`), `how` "" for a count, "≈ " for an extrapolation. The
    embedded corpora: CORPUS_TOKENS. Any other `--corpus` is read through the one corpus dispatch
    (`repro.core.data.corpus_documents`: its ReproError names a bad name or directory) and its
    first SAMPLE_BYTES of text tokenized: the count when that is all of it, else the total bytes
    at the sample's own bytes per token."""
    if name in CORPUS_TOKENS:
        return CORPUS_TOKENS[name], ""
    from repro.core import data

    docs = data.corpus_documents(name, "train")
    sizes = [len(d.text.encode()) for d in docs]
    k, sample = 0, 0
    while k < len(docs) and sample < SAMPLE_BYTES:
        sample, k = sample + sizes[k], k + 1
    counted = int(data.token_ids(data.brown_tokenizer(4096), docs[:k]).numel())
    if k == len(docs):
        return counted, ""
    return round(counted * sum(sizes) / sample), "≈ "


# --------------------------------------------------------------------------- the Brown BPE's vocabulary


def bpe_rows(prof: Profile) -> list[tuple[str, str, int]]:
    """(experiment, claims, vocab_size) of every row whose models use the suite's Brown BPE
    (`repro.core.data.brown_tokenizer(vocab_size)`): the trained models and RS's random-init
    inputs, as each topic's manifest names them (`Topic.bpe_rows`), in the topics' order."""
    return [row for t in topics.TOPICS for row in t.bpe_rows(prof)]


def bpe_words(texts: Iterable[str]) -> Counter:
    """The words the suite's BPE trainer counts: each text pre-tokenized as `repro.core.data`'s
    `_train_brown_bpe` does (byte-level, no prefix space; tests/test_plan.py checks the tokenizer's
    pre-tokenizer is this one)."""
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    words: Counter = Counter()
    for text in texts:
        words.update(w for w, _ in pre.pre_tokenize_str(text))
    return words


def _base_vocab() -> int:
    from repro.core.data import BROWN_SPECIAL_TOKENS

    return 256 + len(BROWN_SPECIAL_TOKENS)  # the byte alphabet and <pad>, <bos>, <eos>


def bpe_vocab_lower(words: Iterable[str]) -> int:
    """A vocabulary the suite's BPE trainer always reaches (when asked for at least as many): the
    259 base tokens and every distinct word of ≥ 2 symbols. Sound because `_train_brown_bpe` keeps
    `tokenizers`' default min_frequency 0: its loop stops only at vocab_size or when no pair with
    a count ≥ 1 is left, i.e. when every word is a single symbol — that word, now a token."""
    from repro.core.data import BROWN_SPECIAL_TOKENS

    return _base_vocab() + len({w for w in words if len(w) >= 2} - set(BROWN_SPECIAL_TOKENS))


def bpe_vocab_upper(words: Iterable[str]) -> int:
    """The most tokens the suite's BPE trainer can learn from these words, an upper bound: each
    merge adds at most one token, the concatenation of two adjacent symbols inside a word, so every
    learned token is a distinct substring of ≥ 2 symbols of some word (their number bounds it);
    and each merge shortens at least one word by a symbol, so there are at most Σ (len(w) − 1)
    merges. The 259 base tokens on top."""
    words = set(words)
    substrings = {w[i:j] for w in words for i in range(len(w) - 1) for j in range(i + 2, len(w) + 1)}
    return _base_vocab() + min(len(substrings), sum(len(w) - 1 for w in words))


@lru_cache(maxsize=1)
def _brown_words() -> Counter:
    from repro.core import data

    return bpe_words(d.text for d in data.corpus_documents("brown", "train"))


def vocab_lines(prof: Profile, experiments: set[str] | None = None) -> tuple[list[str], list[str]]:
    """(missing, checked) for the Brown BPE's vocabulary: the suite trains it on Brown's train
    split whatever `--corpus` says (`repro.core.data.brown_tokenizer`), so a row asking for more
    tokens than that split can yield gets a fixed-size, smaller vocabulary than it says. Decided
    in seconds by `bpe_vocab_lower` (a row at or under it is met) and, above it, `bpe_vocab_upper`
    (over it cannot be met; in between, training decides). Brown's train split (tokenizers
    0.23.3): 48,436 distinct words, 48,363 of ≥ 2 bytes, lower bound 48,622; trained to
    exhaustion the BPE stops at 66,100 tokens; upper bound 351,034 — so 32,000 is met (and
    `brown_tokenizer(32000)` has 32,000 tokens). `experiments`: only those rows (None: all)."""
    rows = [r for r in bpe_rows(prof) if experiments is None or r[0] in experiments]
    if not rows:
        return [], []
    try:
        words = _brown_words()
    except ReproError as err:  # no Brown fixture: the run could not train the BPE either
        return [f"vocabulary (the Brown BPE of every trained model): not checked: {err}"], []
    lower = bpe_vocab_lower(words)
    over = [(e, c, V) for e, c, V in rows if V > lower]
    upper = bpe_vocab_upper(words) if over else None
    missing = [_vocab_line(e, c, V, lower, upper) for e, c, V in over]
    checked = (
        [
            f"vocabulary: the Brown BPE (trained on Brown's train split whatever --corpus says) reaches ≥ {lower:,} "
            f"tokens, so every row's vocab_size of at most that is met: "
            + "; ".join(f"{c}: {V:,}" for e, c, V in rows if V <= lower)
        ]
        if len(over) < len(rows)
        else []
    )
    return missing, checked


def _vocab_line(experiment: str, claims: str, V: int, lower: int, upper: int) -> str:
    what = (
        f"Brown's train split yields at most {upper:,} BPE tokens"
        if V > upper
        else f"Brown's train split yields between {lower:,} and {upper:,} BPE tokens (train it to know: "
        f"repro.core.data.brown_tokenizer({V}))"
    )
    return (
        f"{experiment} ({claims}): vocab_size {V:,}, but {what}; the suite's BPE always trains on Brown. Lower "
        f"the row's vocab_size to ≤ {lower:,} (repro/<topic>/sizes.py), or train the tokenizer on a larger corpus"
    )
