"""Models shared by every topic (no re-exports: import the module you need).

- `hf`: random-init causal LMs from transformers configs ("gpt2", "rope-gpt2", "llama") with
  001 App B.1's init (`build_model`, `init_gpt_style_`, `param_groups`).
- `tiny`: `TinyDecoder`, the readable ablation decoder (nanoGPT-style, shapes in comments) for
  what the HF classes cannot express (MLP-only / attention-only stacks, MLP0 / Attn0,
  positional scaling, post-norm).
- `attention`: SDPA in the policy's attention precision (`repro_sdpa`).
- `embedded`: the embedded GGUF models (`EMBEDDED_MODELS`) and their tokenizers' conventions.
- `gguf_cache`: their dequantised cache (safetensors), built once, checked on every load
  (`ensure_model_cache`, `check_model_cache`, `prepare_in_background`).
- `pretrained`: models by name or path — embedded models, local directories, `.gguf` files, hub
  ids and `repro.core.train` checkpoints (`load_pretrained`, `load_model_any`).

`hf`, `tiny` and `pretrained` do not import one another (`repro.core.models.pretrained` stays
light).
"""
