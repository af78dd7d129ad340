"""Models shared by every topic (no re-exports: import the module you need).

- `hf`: random-init causal LMs from transformers configs ("gpt2", "rope-gpt2", "llama") with
  001 App B.1's init (`build_model`, `init_gpt_style_`, `param_groups`).
- `tiny`: `TinyDecoder`, the readable ablation decoder (nanoGPT-style, shapes in comments) for
  what the HF classes cannot express (MLP-only / attention-only stacks, MLP0 / Attn0,
  positional scaling, post-norm).
- `pretrained`: the embedded GGUF models (dequantised once, cached as safetensors), local
  directories, hub ids and `repro.core.train` checkpoints (`load_pretrained`, `load_model_any`).

Importing one module does not import the others (`repro.core.models.pretrained` stays light).
"""
