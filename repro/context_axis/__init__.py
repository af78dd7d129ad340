"""Context axis (CA): a third attention axis, on which slice c sees keys j ≤ max(i, c).

Reproduces 004 (Choi, "Rethinking causal mask: proposing context axis to decoder-attention")
§1–3 — Algorithm 1, Figs 1–4, the segment mode of §2.3, the cost of §3.1, the stochastic axis
drop of §1 — for `claims/test_context_axis.py` (and `benchmarks/test_context_axis_kernels.py`).

- `kernels`: Algorithm 1's mask and the single-layer kernels (naive, masked SDPA, trimmed,
  fused, segment band); `attend(kernel="auto")` dispatches. `kernel_args`: the q, k, v and
  `out` checks both kernel modules make.
- `gpu_kernels`: the one-launch exact kernels for a GPU (FlexAttention with a block mask that
  visits only each slice's prefix tiles, one masked dense SDPA, packed jagged slices), `pick`
  (which one, by device, dtype and S), and the packed whole-model attention.
- `whole_model`: whole-model modes on any HF Llama / GPT-2 / Gemma model (prefix oracle,
  masked, bucketed full axis, segment-k KV cache), `ContextAxisLM` with stochastic axis drop,
  CA-8's training (in-process, or as a launch job with ``--train-procs``) and scoring.
- `figures`: the builders of Figs 1–4, cost against length, and CA-8's NLL by inference mode.
"""

from repro.ground.topic import BpeRow, Topic


def _bpe_rows(prof) -> list[BpeRow]:
    return [("context_axis", "CA-8", prof.sizes("context_axis")["model"]["vocab_size"])]


TOPIC = Topic(
    package="context_axis",
    order=7,
    bpe_rows=_bpe_rows,
    # decide-ca4 at toy sizes: two fine-tuning steps of 2 × 8 tokens on each embedded model
    # (seconds; the real models, so the fixtures must be fetched), read on 4 windows
    toy={"context_axis": dict(retrain=dict(steps=2, batch_size=2, seq_len=8, warmup_steps=0, windows=4))},
)
