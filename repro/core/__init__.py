"""Core science: what several topics share. It imports `repro.ground.runtime` (and
`repro.ground.resources` for the embedded fixtures), never a topic.

- `models/`: `hf` (HF configs and 001 App B.1's init), `tiny` (the ablation decoder),
  `pretrained` (embedded GGUF models, local directories, hub ids, training checkpoints).
- `data`: Brown, the stdlib's code, `datasets` corpora; the Brown BPE tokenizer; evaluation
  windows; random probes (tokens, Gaussians).
- `train`: the one training loop and its checkpoint cache keyed by the run's description;
  per-window NLL.
- `stats`: every statistical test and power figure, thin over scipy.stats.
- `lens`: architecture maps and hook points, `capture` (the one way to read activations), the
  logit and tuned lens, unembedding.
- `plotting`: the Agg backend, the source reference style, and the figure builders several
  topics draw (001 Fig 9, training curves); each topic's own builders are in its `figures`.
"""
