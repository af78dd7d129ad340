"""Core science: what several topics share. It imports `repro.ground` (runtime policy, errors,
cache, and `resources` for the embedded fixtures), never a topic.

- `models/`: `hf` (HF configs and 001 App B.1's init), `tiny` (the ablation decoder),
  `attention` (SDPA in the policy's attention precision), `embedded` (the embedded GGUF models'
  facts), `gguf_cache` (their dequantised cache), `pretrained` (loading by name or path:
  embedded models, local directories and files, hub ids, training checkpoints).
- `data`: Brown, the stdlib's code, `datasets` corpora; the Brown BPE tokenizer; evaluation
  windows; random probes (tokens, Gaussians). `mix`: `--corpus mix`; `documents`: `Document`
  and the splits, which both read.
- `train`: the one training loop; `train_config` (the run's config and result, schedule, data
  order), `scoring` (token-stream windows, the one per-token NLL and evaluation loop),
  `checkpoints` (the checkpoint cache keyed by the run's description), `token_streams` (corpora
  under the Brown BPE, cached); `attention_kind` (whether a model attends through SDPA: read by
  the checkpoint key and the models).
- `launch`: training jobs under torchrun, and side by side in the training pool.
- `rows`: the size rows several topics' sizes.py use (`LM`, `Train`).
- `memo`: measurements cached by arguments, inputs, dtype policy and code.
- `stats`: every statistical test and power figure, thin over scipy.stats.
- `lens`: the logit and tuned lens, `unembed`, `kl_to_logits`; `arch` (architecture maps, final
  norm and unembedding matrix, frozen norms), `activations` (`hooks` / `capture`: the one way to
  read activations), `tied_decoding` (000 §III: states decoded in the token dictionary, the
  input→output axis): import from them.
- `plotting`: the Agg backend, the source reference style, and the figure builders several
  topics draw (001 Fig 9, training curves); each topic's own builders are in its `figures`.
"""
