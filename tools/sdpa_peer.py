#!/usr/bin/env python3
"""sdpa_peer.py - time PyTorch's scaled_dot_product_attention on the project's shapes,
as a peer line for the plots (docs/design.md, "Peers"). Nothing in the project needs it.

    python3 tools/sdpa_peer.py OUT.csv B,H,N,d,causal [B,H,N,d,causal ...]
    python3 tools/sdpa_peer.py --once fwd|bwd BACKEND B,H,H_kv,N_q,N_kv,d,causal
        one forward (or one forward and its backward) and nothing else, untimed: the
        process tools/ncu_compare.py profiles beside ours

For each shape and each backend (math: the unfused reference; flash: FlashAttention-2
inside PyTorch) prints and writes: backend,B,H,N,d,causal,time_ms,tflops. fp16 inputs
drawn N(0,1), the median of 10 CUDA-event timed runs after 3 warm-up runs (no L2
flush: the math backend's intermediates dwarf the L2 anyway). A backend that cannot
run a shape (out of memory, unsupported) gets an empty time and the reason.

The CSV opens with the project's metadata header (common/csv.c's '#' lines: GPU, CUDA,
git commit, date, host, CPU, the command), then a '# peer:' line naming the torch version.
Note: SDPA's is_causal=True is the TOP-LEFT aligned mask (row i sees keys j <= i); the
project's mask is bottom-right aligned. The two agree on the square (N_q = N_kv) shapes
timed here.
"""
import os
import platform
import subprocess
import sys
import time

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
except Exception as e:  # no torch: say so, write nothing
    print(f"sdpa_peer: skipped: PyTorch not importable ({e})")
    sys.exit(0)


def read_points(path):
    """The points a sweep wrote for its peers (common/sweep.c, <sweep csv>.points): tuples
    (B, H, H_kv, N_q, N_kv, d, causal) in the sweep's order, so that a peer is timed on
    exactly the sweep's own points."""
    with open(path) as f:
        return [tuple(int(x) for x in line.split(",")) for line in f
                if line.strip() and not line.startswith("#") and not line.startswith("B,")]


def time_ms(fn, warmup=3, iters=10, flush=None):
    """Median of iters CUDA-event timed runs of fn after warmup runs; flush(), when given,
    runs before each timed run, outside the events (tools/decode_peers.py empties the L2)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        if flush is not None:
            flush()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def git_commit():
    """The commit the tree is at: FA_GIT_COMMIT when set (a copy without .git), else git."""
    env = os.environ.get("FA_GIT_COMMIT")
    if env:
        return env
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def header(phase, argv):
    """The metadata header every CSV of the project opens with (common/csv.c's format):
    phase, GPU, CUDA, git commit, date, host, CPU, the command; then the peer's own line.
    PyTorch does not report clocks, the driver or the copy bandwidth: those say unknown."""
    p = torch.cuda.get_device_properties(0)
    l2 = getattr(p, "L2_cache_size", None)
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return "".join([
        f"# phase: {phase}\n",
        f"# gpu: {p.name} | sm_count: {p.multi_processor_count} | sm_clock_mhz: unknown | mem_clock_mhz: unknown\n",
        f"# cuda_runtime: {torch.version.cuda} (PyTorch's) | driver: unknown | l2_bytes: "
        f"{l2 if l2 is not None else 'unknown'} | global_mem_bytes: {p.total_memory} | copy_gbps: unknown\n",
        f"# git: {git_commit()} | date: {date} | host: {platform.node() or 'unknown'} | cpu: {cpu_name()}\n",
        "# command: python3 " + " ".join(argv) + "\n",
        f"# peer: torch {torch.__version__} scaled_dot_product_attention | gpu: {p.name} | date: {date}\n",
    ])


BACKENDS = {"math": "MATH", "flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}


def main(argv=None, backends=("math", "flash"), phase="peer", command=None, mode="fwd"):
    """argv: [OUT.csv, spec...]; backends: names from BACKENDS (tools/peers.py asks for
    flash and cudnn); phase and command: what the CSV's header says (command defaults to
    this process's own command line). mode: "fwd" times the forward; "bwd" the backward
    alone (torch.autograd.grad of one saved forward: dQ, dK, dV, nothing accumulated),
    FLOPs 2.5x the forward's; "fwdbwd" a forward and its backward, 3.5x."""
    argv = sys.argv[1:] if argv is None else argv
    command = sys.argv if command is None else command
    if len(argv) < 2 or not torch.cuda.is_available():
        print("usage: sdpa_peer.py OUT.csv B,H,N,d,causal ... (needs a CUDA device)")
        sys.exit(0 if not torch.cuda.is_available() else 2)
    out = open(argv[0], "w")
    out.write(header(phase, command))
    out.write("backend,B,H,N,d,causal,time_ms,tflops,note\n")
    for spec in argv[1:]:
        B, H, N, d, causal = (int(x) for x in spec.split(","))
        q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16) for _ in range(3))
        flops = 4.0 * B * H * N * N * d / (2 if causal else 1) * {"fwd": 1.0, "bwd": 2.5, "fwdbwd": 3.5}[mode]
        if mode != "fwd":
            for x in (q, k, v):
                x.requires_grad_(True)
            do = torch.randn(B, H, N, d, device="cuda", dtype=torch.float16)
        for name in backends:
            backend = getattr(SDPBackend, BACKENDS[name], None)
            note, t = "", float("nan")
            try:
                if backend is None:
                    raise RuntimeError(f"this torch has no SDPBackend.{BACKENDS[name]}")
                with sdpa_kernel(backend):
                    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))  # noqa: E731
                    if mode == "fwd":
                        t = time_ms(sdpa)
                    elif mode == "bwd":
                        o = sdpa()
                        t = time_ms(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
                        del o
                    else:
                        t = time_ms(lambda: torch.autograd.grad(sdpa(), (q, k, v), do))
            except Exception as e:
                note = str(e).splitlines()[0][:80].replace(",", ";")
            torch.cuda.empty_cache()
            tf = flops / (t * 1e-3) / 1e12 if t == t else float("nan")
            line = f"{name},{B},{H},{N},{d},{causal},{t:.4f},{tf:.2f},{note}"
            print("sdpa_peer:", line, flush=True)
            out.write(line.replace("nan", "") + "\n")
        del q, k, v
        if mode != "fwd":
            del do
        torch.cuda.empty_cache()


def once(mode, backend, spec):
    """One call of SDPA on one shape (GQA through enable_gqa), for a profiler to watch."""
    B, H, Hkv, Nq, Nkv, d, causal = (int(x) for x in spec.split(","))
    q = torch.randn(B, H, Nq, d, device="cuda", dtype=torch.float16, requires_grad=mode == "bwd")
    k, v = (torch.randn(B, Hkv, Nkv, d, device="cuda", dtype=torch.float16, requires_grad=mode == "bwd")
            for _ in range(2))
    with sdpa_kernel(getattr(SDPBackend, BACKENDS[backend])):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=Hkv != H)
        if mode == "bwd":
            torch.autograd.grad(o, (q, k, v), torch.randn_like(o))
    torch.cuda.synchronize()
    print(f"sdpa_peer: once {mode} {backend} {spec}: done")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--once" and sys.argv[2] in ("fwd", "bwd") and sys.argv[3] in BACKENDS:
        once(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
