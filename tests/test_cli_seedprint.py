"""`repro seedprint BASE SUSPECT` (repro/harness/cli.py) and the model loading behind it
(repro/core/models/pretrained.py: save_pretrained directories without a tokenizer, checkpoints written
by repro.core.train.train, clear errors for corrupt or foreign ones).

Tiny random Llamas (2 layers, width 64, vocabulary 256) and SeedPrint at n = 64 inputs of length
8, m = 16: the whole file runs in seconds on one CPU thread.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from repro.core.models.hf import build_model
from repro.core.models.pretrained import load_model_any, load_pretrained
from repro.core.models.tiny import TinyConfig, TinyDecoder
from repro.core.train import TrainConfig, train
from repro.ground.runtime import ReproError
from repro.harness.cli import main

# A model against itself gives τ = 1 on every identity dim: scipy's t-test warns about the
# zero-variance sample (seedprint.algorithm_one passes it through; the p-value is still tiny).
pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:Precision loss occurred in moment calculation:RuntimeWarning"),
]

QUICK = ["--n", "64", "--length", "8", "--m", "16", "--device", "cpu", "--dtype", "float32"]
TRAIN_CFG = TrainConfig(steps=2, batch_size=2, seq_len=8, eval_every=1, eval_batches=1, warmup_steps=0)


def _llama(seed: int, d_model: int = 64):
    return build_model("llama", n_layer=2, n_head=4, d_model=d_model, vocab_size=256, seed=seed)


def _tokens() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    stream = torch.randint(0, 256, (600,), generator=g)
    return stream[:500], stream[500:]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """save_pretrained() directories (no tokenizer) of two seeds and one wider model."""
    root = tmp_path_factory.mktemp("models")
    out = {}
    for name, model in (("seed0", _llama(0)), ("seed1", _llama(1)), ("wide", _llama(0, d_model=96))):
        model.save_pretrained(root / name)
        out[name] = root / name
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    """repro.core.train.train checkpoints (cache redirected into a temporary directory): a Llama and
    a TinyDecoder, each with its trained model."""
    cache = tmp_path_factory.mktemp("cache")
    train_tokens, val_tokens = _tokens()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REPRO_CACHE", str(cache))
        runs = {
            "llama": train(_llama(2), TRAIN_CFG, train_tokens=train_tokens, val_tokens=val_tokens, progress=False),
            "tiny": train(
                TinyDecoder(TinyConfig(vocab_size=256, d_model=64, n_layer=2, n_head=4)),
                TRAIN_CFG,
                train_tokens=train_tokens,
                val_tokens=val_tokens,
                progress=False,
            ),
        }
    for run in runs.values():
        assert run.checkpoint is not None and run.checkpoint.is_relative_to(cache)
        assert not (run.checkpoint / "config.json").exists()
    return runs


def _run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(["seedprint", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("repro: error:")]


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


# --------------------------------------------------------------------------- the command


def test_a_model_against_itself_is_same_lineage(models, capsys) -> None:
    # two specs for one model (its directory, its weights file): both are loaded
    code, out, err = _run(capsys, models["seed0"], models["seed0"] / "model.safetensors", *QUICK, "--variant", "both")
    assert code == 0, err
    assert "width 64, vocab 256, float32" in out
    assert "64 random token sequences of length 8" in out
    assert "identity dims   16 (top-16" in out  # identical means: top-16 ∩ top-16 = 16 dims
    assert out.count("mean τ          1.0000") == 2  # identical responses: τ = 1 on every dim
    assert out.count("verdict         same lineage") == 2
    assert out.rstrip().splitlines()[-1] == "verdict: same lineage (paper and released variants agree, α = 0.01)"


def test_a_train_checkpoint_against_itself_is_same_lineage(trained, capsys) -> None:
    ckpt = trained["llama"].checkpoint
    code, out, err = _run(capsys, ckpt, ckpt / "model.safetensors", *QUICK, "--variant", "paper")
    assert code == 0, err
    assert "LlamaForCausalLM, 2 layers, width 64" in out
    assert "released variant" not in out
    assert out.rstrip().splitlines()[-1] == "verdict: same lineage (paper variant, α = 0.01)"


def test_two_seeds_exit_0_with_a_verdict(models, capsys) -> None:
    code, out, err = _run(capsys, models["seed0"], models["seed1"], *QUICK, "--variant", "both")
    assert code == 0, err
    for field in ("p (t-test)", "p (U-test)", "identity dims", "mean τ", "  z  ", "  k  "):
        assert field in out
    assert out.count("  verdict         ") == 2
    assert out.rstrip().splitlines()[-1].startswith("verdict: ")
    assert "loading base" in err and "Traceback" not in err  # progress goes to stderr


def test_json_output(models, capsys) -> None:
    code, out, err = _run(capsys, models["seed0"], models["seed1"], *QUICK, "--json", "--variant", "both")
    assert code == 0, err
    result = json.loads(out)
    assert {"paper", "released", "config", "models", "verdict"} <= set(result)
    assert result["config"]["n"] == 64 and result["config"]["length"] == 8 and result["config"]["m"] == 16
    assert isinstance(result["paper"]["p_t"], float) and isinstance(result["released"]["z"], float)
    assert result["models"]["base"]["width"] == result["models"]["suspect"]["width"] == 64
    assert result["verdict"] in ("same lineage", "different lineage", "variants disagree")

    code, out, _ = _run(capsys, models["seed0"], models["seed0"], *QUICK, "--json", "--variant", "released")
    result = json.loads(out)
    assert code == 0 and "paper" not in result
    assert result["released"]["same_lineage"] is True and result["verdict"] == "same lineage"


def test_different_widths_exit_2_with_one_line(models, capsys) -> None:
    code, out, err = _run(capsys, models["seed0"], models["wide"], *QUICK)
    assert code == 2 and out == ""
    (line,) = _error_lines(err)
    assert line.startswith("repro: error: the models have different widths (64 vs 96)")
    assert "can still compare them" in line or "no SeedPrint mode can compare them" in line


def test_nonexistent_path_exit_2(tmp_path: Path, capsys) -> None:
    code, out, err = _run(capsys, tmp_path / "no-such-model", tmp_path / "no-such-model", *QUICK)
    assert code == 2 and out == ""
    (line,) = _error_lines(err)
    assert "unknown model" in line and "no-such-model" in line


def test_a_bad_suspect_is_refused_before_the_base_loads(tmp_path: Path, capsys) -> None:
    """Both specs are checked (`model_spec_problem`) before any model loads: an embedded BASE (17 s
    to load on the reference CPU) with a SUSPECT path that does not exist is one line, exit 2, no
    "loading" progress — in-process, and as the command in a fresh process (its wall time printed:
    Python, torch's import and the check, no model)."""
    suspect = tmp_path / "no-such-model"
    code, out, err = _run(capsys, "smollm2-135m", suspect, *QUICK)
    assert code == 2 and out == "" and "loading" not in err
    (line,) = _error_lines(err)
    assert line.startswith(f"repro: error: SUSPECT: unknown model '{suspect}'")
    start = time.perf_counter()
    r = subprocess.run(
        [*_repro(), "seedprint", "smollm2-135m", str(suspect)], capture_output=True, text=True, timeout=300
    )
    print(f"repro seedprint smollm2-135m <no such path>: exit {r.returncode} in {time.perf_counter() - start:.2f} s")
    assert (r.returncode, r.stdout) == (2, "") and r.stderr.splitlines() == [line]


def _repro() -> list[str]:
    """The `repro` console script of this interpreter's environment (else `python -m`)."""
    script = Path(sys.executable).with_name("repro")
    return [str(script)] if script.exists() else [sys.executable, "-m", "repro.harness.cli"]


def test_garbage_checkpoint_exit_2_naming_the_file(trained, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(trained["llama"].checkpoint / "meta.json", bad / "meta.json")
    (bad / "model.safetensors").write_bytes(b"this is not a safetensors file" * 4)
    code, out, err = _run(capsys, trained["llama"].checkpoint, bad, *QUICK)
    assert code == 2 and out == ""
    (line,) = _error_lines(err)
    assert str(bad / "model.safetensors") in line and "not a readable safetensors file" in line


def test_bad_options_exit_2(models, capsys) -> None:
    code, _, err = _run(capsys, models["seed0"], models["seed1"], *QUICK, "--inputs", "images")
    assert code == 2 and "invalid choice: 'images'" in err
    code, _, err = _run(capsys, models["seed0"], models["seed1"], "--n", "2")
    assert code == 2
    assert _error_lines(err) == ["repro: error: SeedPrint needs n ≥ 3 random inputs for a Kendall τ (got 2)"]
    assert "loading" not in err  # options are checked before any model is loaded


def test_help_mentions_the_quick_check_and_exit_status(capsys) -> None:
    assert main(["seedprint", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--n 1000 --length 32" in text and "Exit status: 0 whenever the test ran" in text


# --------------------------------------------------------------------------- loading checkpoints


@pytest.mark.parametrize("kind", ["llama", "tiny"])
def test_train_checkpoint_loads_with_identical_logits(trained, kind: str) -> None:
    run = trained[kind]
    ids = _tokens()[1][None, :16]
    for spec in (run.checkpoint, run.checkpoint / "model.safetensors"):
        model, tok = load_pretrained(str(spec))
        assert tok is None and not model.training and type(model) is type(run.model)
        assert model is not run.model and torch.equal(_logits(model, ids), _logits(run.model, ids))
    half = load_model_any(str(run.checkpoint), dtype=torch.bfloat16)
    assert all(p.dtype == torch.bfloat16 for p in half.parameters())
    torch.testing.assert_close(_logits(half, ids).float(), _logits(run.model, ids), atol=0.05, rtol=0.05)


def test_truncated_checkpoint_is_a_clear_error(trained, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    shutil.copytree(trained["llama"].checkpoint, ckpt)
    weights = ckpt / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    with pytest.raises(ReproError, match="truncated or corrupt") as err:
        load_pretrained(str(ckpt))
    assert str(weights) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "cls, message",
    [
        ("os.system", r"names model class 'os.system'; only transformers\.\* and repro\.core\.models\.\*"),
        ("transformers.NoSuchForCausalLM", r"unknown model class 'transformers.NoSuchForCausalLM'"),
        ("repro.core.models.hf.ARCHS", r"not a torch model class"),
    ],
)
def test_foreign_or_unknown_model_class_is_refused(trained, tmp_path: Path, cls: str, message: str) -> None:
    ckpt = tmp_path / "ckpt"
    shutil.copytree(trained["llama"].checkpoint, ckpt)
    meta = json.loads((ckpt / "meta.json").read_text())
    meta["description"]["model"]["class"] = cls
    (ckpt / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ReproError, match=message):
        load_pretrained(str(ckpt))


def test_incomplete_or_foreign_directories_are_clear_errors(trained, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReproError, match=r"holds neither config\.json .* nor meta\.json \+ model\.safetensors"):
        load_pretrained(str(tmp_path / "empty"))
    only_meta = tmp_path / "only-meta"
    only_meta.mkdir()
    shutil.copy(trained["llama"].checkpoint / "meta.json", only_meta)
    with pytest.raises(ReproError, match="has meta.json but no model.safetensors"):
        load_pretrained(str(only_meta))
    only_weights = tmp_path / "only-weights"
    only_weights.mkdir()
    shutil.copy(trained["llama"].checkpoint / "model.safetensors", only_weights)
    with pytest.raises(ReproError, match="has model.safetensors but no meta.json"):
        load_pretrained(str(only_weights))
    (only_meta / "meta.json").write_text('{"key": "x", "descr')
    (only_meta / "model.safetensors").write_bytes(b"")
    with pytest.raises(ReproError, match=r"meta\.json is unreadable"):
        load_pretrained(str(only_meta))


def test_model_only_directory_needs_tokenizer_false(models) -> None:
    with pytest.raises(ReproError, match="holds a model but no loadable tokenizer"):
        load_pretrained(str(models["seed0"]))
    model, tok = load_pretrained(str(models["seed0"]), tokenizer=False)
    assert tok is None and model.config.hidden_size == 64


def test_align_sees_through_a_permuted_residual_basis(models, tmp_path: Path, capsys) -> None:
    """A copy of seed0 with its residual basis permuted (same function, other weights) is one
    model to a user; Algorithm 1 dimension by dimension cannot see it, the aligned variant does
    (--align), and the aligned variant still says 'different' for another seed (control)."""
    from repro.seedprint import transforms as tf

    m = load_model_any(str(models["seed0"]))
    tf.permute_residual(m, torch.randperm(64, generator=torch.Generator().manual_seed(3)))
    m.save_pretrained(tmp_path / "permuted")
    args = [
        "--n",
        "200",
        "--length",
        "8",
        "--m",
        "16",
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--align",
        "--json",
        "--variant",
        "both",
    ]
    code, out, _ = _run(capsys, models["seed0"], tmp_path / "permuted", *args)
    r = json.loads(out)
    assert code == 0 and r["aligned"]["same_lineage"] is True and r["paper"]["same_lineage"] is False
    assert r["verdict"] == "variants disagree" and set(r["calibration"]) == {"paper", "released", "aligned"}
    code, out, _ = _run(capsys, models["seed0"], models["seed1"], *args)
    assert json.loads(out)["aligned"]["same_lineage"] is False
    code, _, err = _run(capsys, models["seed0"], models["seed1"], *QUICK, "--align", "--feature", "logits")
    assert code == 2 and "--align matches hidden dimensions" in err


def test_matched_variant_sees_through_a_permuted_residual_basis(models, tmp_path: Path, capsys) -> None:
    """--variant matched: the seed0 copy with a permuted residual basis is 'same lineage' at the
    smallest p its rotations allow, Algorithm 1 is defeated (--variant all shows both), another
    seed is 'different lineage' (control); the JSON carries p, statistic, null and calibration;
    options that cannot give a verdict are refused before anything loads."""
    from repro.seedprint import transforms as tf

    m = load_model_any(str(models["seed0"]))
    tf.permute_residual(m, torch.randperm(64, generator=torch.Generator().manual_seed(3)))
    m.save_pretrained(tmp_path / "permuted")
    args = ["--n", "200", "--length", "8", "--m", "16", "--device", "cpu", "--dtype", "float32", "--json"]
    code, out, _ = _run(capsys, models["seed0"], tmp_path / "permuted", *args, "--variant", "all")
    r = json.loads(out)
    assert code == 0 and r["matched"]["same_lineage"] is True and r["matched"]["p"] == 0.01
    assert r["paper"]["same_lineage"] is False and set(r["calibration"]) == {"matched", "paper", "released"}
    code, out, _ = _run(capsys, models["seed0"], models["seed1"], *args, "--variant", "matched")
    r = json.loads(out)
    assert r["matched"]["same_lineage"] is False and "paper" not in r and r["verdict"] == "different lineage"
    code, out, _ = _run(capsys, models["seed0"], tmp_path / "permuted", *args[:-1], "--variant", "matched")
    assert (
        "matched variant" in out
        and out.rstrip().splitlines()[-1] == "verdict: same lineage (matched variant, α = 0.01)"
    )
    code, _, err = _run(capsys, models["seed0"], models["seed1"], *QUICK, "--variant", "matched", "--feature", "logits")
    assert code == 2 and "matches hidden dimensions" in err and "loading" not in err
    code, _, err = _run(capsys, models["seed0"], models["seed1"], *QUICK, "--variant", "matched", "--rotations", "20")
    assert code == 2 and "20 rotations cannot give p ≤ α = 0.01" in err


def test_default_is_the_matched_variant_with_its_measured_worth(models, capsys) -> None:
    """Without --variant the CLI reports the matched test alone (the mode the operating table
    supports: it sees through every function-preserving rewrite and keeps its false alarms at α on
    trained unrelated pairs), with the rates the committed table measured for it."""
    code, out, err = _run(capsys, models["seed0"], models["seed0"] / "model.safetensors", *QUICK)
    assert code == 0, err
    assert "matched variant" in out and "paper variant" not in out and "released variant" not in out
    assert "what this answer is worth (matched-hidden" in out
    assert out.rstrip().splitlines()[-1] == "verdict: same lineage (matched variant, α = 0.01)"
