"""Second device call (2026-11-26, third H200 session): does SK-1's recorder now free each batch?
(1) Python's own check: a stopped forward's recorder, gc disabled — ours vs the former generator
context manager (CPython gh-129280 on 3.12). (2) CUDA memory over seeds in `init_std_profile` at
SK-1's paper model and T, ours vs the former recorder patched in. (3) time per batch, alone."""

import contextlib, gc, sys, time, weakref

import torch

from repro.core.models.hf import attn_implementation
from repro.sinks import experiments as sinks

dev = "cuda" if torch.cuda.is_available() else "cpu"
big = (
    dict(n_layer=12, n_head=12, d_model=768, vocab_size=32000)
    if dev == "cuda"
    else dict(n_layer=2, n_head=2, d_model=32, vocab_size=100)
)
T = 2048 if dev == "cuda" else 64


@contextlib.contextmanager
def former(model, keys=(0,), outputs=False, stop_after=None):  # record_attention before this session
    rec = sinks._Recorder(tuple(int(k) for k in keys), [], [], outputs, stop_after)
    token = sinks._RECORD.set(rec)
    try:
        with attn_implementation(model, sinks.POSITIONAL_EAGER):
            yield rec
    except sinks._StopForward:
        pass
    finally:
        sinks._RECORD.reset(token)


def alive_after(model, cm):
    x = torch.randn(2, T, big["d_model"], device=dev)
    with torch.no_grad(), cm as rec:
        sinks._base(model)(inputs_embeds=x, use_cache=False)
    ref = weakref.ref(rec)
    del rec, cm
    return ref() is not None


m = sinks.nano_llama("baseline", big, T, 0, dev, build_layers=1)
gc.collect()
gc.disable()
print(
    sys.version.split()[0],
    torch.__version__,
    dev,
    "| recorder alive after the with, gc off: ours",
    alive_after(m, sinks.record_attention(m, stop_after=0)),
    "| former",
    alive_after(m, former(m, stop_after=0)),
)
gc.enable()
gc.collect()
del m

ours = sinks.record_attention
for name, rec_cm in (("ours", ours), ("former", former)):
    sinks.record_attention = rec_cm
    if dev == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t = time.time()
    try:
        sinks.init_std_profile("baseline", big, T, (0, 1, 2), n_seq=100, device=dev)
        note = ""
    except torch.OutOfMemoryError as e:
        note = f" OUT OF MEMORY: {str(e)[:80]}"
    gib = lambda b: round(b / 2**30, 1)
    mem = (
        f"peak {gib(torch.cuda.max_memory_allocated())} GiB, held after {gib(torch.cuda.memory_allocated())} GiB"
        if dev == "cuda"
        else ""
    )
    print(f"{name}: 3 seeds x 100 seq in {time.time() - t:.1f} s; {mem}{note}", flush=True)
    gc.collect()
sinks.record_attention = ours
# (3) one seed and variant at the paper's n_seq (2,000 sequences, 200 batches), alone on the GPU
if dev == "cuda":
    torch.cuda.synchronize()
    t = time.time()
    sinks.init_std_profile("amplification", big, T, (0,), n_seq=2000, device=dev)
    torch.cuda.synchronize()
    print(f"one seed and variant at n_seq 2000: {time.time() - t:.1f} s (48 of them in SK-1)", flush=True)
