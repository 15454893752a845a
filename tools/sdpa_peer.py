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
tools/flex_peer.py times FlexAttention with this file's time_mode, flops, row and header.
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


def peer_line(what="scaled_dot_product_attention", date=None):
    """The header's '# peer:' line: what was timed, with the torch version, GPU and date
    (tools/flex_peer.py writes its own where its rows follow SDPA's in one file)."""
    date = date or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"# peer: torch {torch.__version__} {what} | gpu: {torch.cuda.get_device_name(0)} | date: {date}\n"


def header(phase, argv, peer="scaled_dot_product_attention"):
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
        peer_line(peer, date),
    ])


COLUMNS = "backend,B,H,N,d,causal,time_ms,tflops,note\n"
MODE_FLOPS = {"fwd": 1.0, "bwd": 2.5, "fwdbwd": 3.5}   # a backward is 2.5 forwards (FA2's count)


def flops(B, H, N, d, causal, mode):
    """The FLOPs a row's TFLOP/s counts: 4 B H N^2 d for the forward (two N x N x d
    matmuls a head, H the query heads, GQA or not), half of it causal, times MODE_FLOPS."""
    return 4.0 * B * H * N * N * d / (2 if causal else 1) * MODE_FLOPS[mode]


def time_mode(fwd, inputs, do, mode, timer=None):
    """Time one mode of an attention callable fwd() (inputs: the tensors the gradients are
    taken of, do: the output's gradient): "fwd" times fwd(); "bwd" the backward alone,
    torch.autograd.grad of one saved forward (retain_graph: the same graph every run);
    "fwdbwd" a forward and its backward. timer: time_ms unless given."""
    timer = timer or time_ms
    if mode == "fwd":
        return timer(fwd)
    if mode == "bwd":
        o = fwd()
        try:
            return timer(lambda: torch.autograd.grad(o, inputs, do, retain_graph=True))
        finally:
            del o
    return timer(lambda: torch.autograd.grad(fwd(), inputs, do))


def note_of(e):
    """An exception as a row's note: its first line, 80 characters, no commas."""
    return ((str(e).splitlines() or [type(e).__name__])[0] or type(e).__name__)[:80].replace(",", ";")


def row(name, B, H, N, d, causal, t, fl, note, H_kv=None):
    """One row as printed (NaN where not measured); the CSV gets it with "nan" emptied.
    H_kv: a column after H (tools/flex_peer.py's GQA rows), none when None."""
    tf = fl / (t * 1e-3) / 1e12 if t == t else float("nan")
    hkv = "" if H_kv is None else f"{H_kv},"
    return f"{name},{B},{H},{hkv}{N},{d},{causal},{t:.4f},{tf:.2f},{note}"


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
    with open(argv[0], "w") as out:
        out.write(header(phase, command))
        out.write(COLUMNS)
        for spec in argv[1:]:
            B, H, N, d, causal = (int(x) for x in spec.split(","))
            q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16) for _ in range(3))
            fl = flops(B, H, N, d, causal, mode)
            do = None
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
                        t = time_mode(sdpa, (q, k, v), do, mode)
                except Exception as e:
                    note = note_of(e)
                torch.cuda.empty_cache()
                line = row(name, B, H, N, d, causal, t, fl, note)
                print("sdpa_peer:", line, flush=True)
                out.write(line.replace("nan", "") + "\n")
            del q, k, v, do
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
