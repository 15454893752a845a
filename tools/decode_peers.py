#!/usr/bin/env python3
"""decode_peers.py - PyTorch's SDPA (flash: FlashAttention-2 inside PyTorch; cuDNN) on the
decode shapes of phase 6's sweep, as peer lines for its plots (docs/design.md, "Peers").
Optional: without PyTorch (or a GPU) it says so and writes nothing.

    python3 tools/decode_peers.py OUT.csv [POINTS]   (make phase6-sweep runs it)

POINTS: the sweep's points (phase6_sweep.csv.points, written by the sweep with a GPU); without
it, the shapes below.

Shapes: one query token (N_q = 1), B in {1, 8}, H = 32, H_kv in {32, 8} (GQA through
enable_gqa), d = 128, L = N_kv = 1k..256k, not causal. The timing is tools/sdpa_peer.py's
(median of CUDA-event runs after warm-up), here with the L2 flushed before each timed run
as the project's own timings are (sdpa_peer.time_ms with its flush); the
CSV opens with sdpa_peer's metadata header. GB/s counts the bytes phase 6 counts for one split: K and V
(fp16) read once per KV head, Q read (fp16), O written (fp16 here: SDPA returns the input's
type) and no partials.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception as e:
    print(f"decode_peers: skipped: PyTorch not importable ({e})")
    sys.exit(0)
import sdpa_peer  # noqa: E402

BACKENDS = (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"))


def shapes(points=None):
    if points:
        for B, H, Hkv, Nq, L, d, _causal in sdpa_peer.read_points(points):
            yield B, H, Hkv, Nq, L, d
        return
    for B in (1, 8):
        for Hkv in (32, 8):
            L = 1024
            while L <= 256 * 1024:
                yield B, 32, Hkv, 1, L, 128
                L *= 2


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: decode_peers.py OUT.csv [POINTS]")
        sys.exit(2)
    if not torch.cuda.is_available():
        print("decode_peers: skipped: no CUDA device")
        sys.exit(0)
    out = open(sys.argv[1], "w")
    out.write(sdpa_peer.header("phase6 (peers)", sys.argv))
    out.write("backend,B,H,H_kv,N_q,N_kv,d,time_ms,gbps,note\n")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    scratch = torch.empty(2 * l2 // 4 + 1, device="cuda", dtype=torch.float32)
    flush = lambda: scratch.zero_()  # noqa: E731  (write twice the L2's size: nothing of the inputs stays)
    for B, H, Hkv, Nq, L, d in shapes(sys.argv[2] if len(sys.argv) == 3 else None):
        q = torch.randn(B, H, Nq, d, device="cuda", dtype=torch.float16)
        k = torch.randn(B, Hkv, L, d, device="cuda", dtype=torch.float16)
        v = torch.randn(B, Hkv, L, d, device="cuda", dtype=torch.float16)
        nbytes = 2.0 * (2 * B * Hkv * L * d + 2 * B * H * Nq * d)
        for name, attr in BACKENDS:
            note, t = "", float("nan")
            try:
                backend = getattr(SDPBackend, attr)
                with sdpa_kernel(backend):
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=Hkv != H)  # noqa: E731
                    t = sdpa_peer.time_ms(fn, warmup=3, iters=20, flush=flush)
            except Exception as e:
                note = str(e).splitlines()[0][:80].replace(",", ";")
            gbps = nbytes / (t * 1e-3) / 1e9 if t == t else float("nan")
            line = f"{name},{B},{H},{Hkv},{Nq},{L},{d},{t:.4f},{gbps:.1f},{note}"
            print("decode_peers:", line, flush=True)
            out.write(line.replace("nan", "") + "\n")
        del q, k, v
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
