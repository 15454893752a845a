#!/usr/bin/env python3
"""sdpa_peer.py - time PyTorch's scaled_dot_product_attention on the project's shapes,
as a peer line for the plots (docs/design.md, "Peers"). Nothing in the project needs it.

    python3 tools/sdpa_peer.py OUT.csv B,H,N,d,causal [B,H,N,d,causal ...]

For each shape and each backend (math: the unfused reference; flash: FlashAttention-2
inside PyTorch) prints and writes: backend,B,H,N,d,causal,time_ms,tflops. fp16 inputs
drawn N(0,1), the median of 10 CUDA-event timed runs after 3 warm-up runs (no L2
flush: the math backend's intermediates dwarf the L2 anyway). A backend that cannot
run a shape (out of memory, unsupported) gets an empty time and the reason.
"""
import sys
import time

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
except Exception as e:  # no torch: say so, write nothing
    print(f"sdpa_peer: skipped: PyTorch not importable ({e})")
    sys.exit(0)


def time_ms(fn, warmup=3, iters=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


BACKENDS = {"math": "MATH", "flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}


def main(argv=None, backends=("math", "flash")):
    """argv: [OUT.csv, spec...]; backends: names from BACKENDS (tools/peers.py asks for
    flash and cudnn)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or not torch.cuda.is_available():
        print("usage: sdpa_peer.py OUT.csv B,H,N,d,causal ... (needs a CUDA device)")
        sys.exit(0 if not torch.cuda.is_available() else 2)
    out = open(argv[0], "w")
    out.write(f"# peer: torch {torch.__version__} scaled_dot_product_attention | gpu: "
              f"{torch.cuda.get_device_name()} | date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    out.write("backend,B,H,N,d,causal,time_ms,tflops,note\n")
    for spec in argv[1:]:
        B, H, N, d, causal = (int(x) for x in spec.split(","))
        q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16) for _ in range(3))
        flops = 4.0 * B * H * N * N * d / (2 if causal else 1)
        for name in backends:
            backend = getattr(SDPBackend, BACKENDS[name], None)
            note, t = "", float("nan")
            try:
                if backend is None:
                    raise RuntimeError(f"this torch has no SDPBackend.{BACKENDS[name]}")
                with sdpa_kernel(backend):
                    t = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
            except Exception as e:
                note = str(e).splitlines()[0][:80].replace(",", ";")
            torch.cuda.empty_cache()
            tf = flops / (t * 1e-3) / 1e12 if t == t else float("nan")
            line = f"{name},{B},{H},{N},{d},{causal},{t:.4f},{tf:.2f},{note}"
            print("sdpa_peer:", line, flush=True)
            out.write(line.replace("nan", "") + "\n")
        del q, k, v
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
