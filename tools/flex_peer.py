#!/usr/bin/env python3
"""flex_peer.py - time PyTorch's FlexAttention (torch.nn.attention.flex_attention, compiled
with torch.compile) on the project's shapes, as a peer line for the plots beside SDPA's
(docs/design.md, "Peers"). Nothing in the project needs it.

    python3 tools/flex_peer.py [--mode fwd|bwd|fwdbwd] OUT.csv SPEC [SPEC ...]
        SPEC: B,H,N,d,causal (sdpa_peer.py's), or B,H,H_kv,N,d,causal for GQA
        (enable_gqa=True); with any H_kv given, the CSV has an H_kv column after H
    python3 tools/flex_peer.py --cpu-smoke
        the code path on this machine's CPU at tiny shapes (fp32, forward only: this
        torch has no flex backward on the CPU), each mask checked against SDPA; prints
        SMOKE lines, writes nothing, times nothing: never a result

Rows "flex": backend,B,H,N,d,causal,time_ms,tflops,note. The timing, the FLOPs and the CSV
are tools/sdpa_peer.py's (time_mode, flops, row, header): fp16 inputs drawn N(0,1), the
median of 10 CUDA-event timed runs after 3 warm-up runs; "fwd" the forward, "bwd" the
backward alone (torch.autograd.grad of one saved forward, 2.5x the forward's FLOPs),
"fwdbwd" a forward and its backward (3.5x); causal counts half of 4 B H N^2 d (H: the query
heads, GQA or not). tools/peers.py and tools/bwd_peers.py append these rows to their
SDPA files when FA_PEERS_FLEX=1 (off by default: every shape compiles, minutes a sweep).

flex_attention is compiled once per shape (dynamic=False, fullgraph=True: a shape that
cannot compile fails rather than running flex's unfused eager fallback), and that first
call (with its backward in bwd modes) runs before time_mode's own warm-up: compilation is
never timed; dynamo is reset after each shape. The block mask is built once per shape,
outside the timing (a model builds it once for all its layers). Masks: MASKS, a name ->
mask_mod factory; "full" (no block mask) and "causal" (bottom-right aligned, the project's
mask: query i sees keys j <= i + N_kv - N_q; SDPA's is_causal is top-left aligned, and the
two agree on the square shapes timed here). A shape flex cannot run (out of memory, a
compile failure) gets an empty time and the reason in note. Without PyTorch, CUDA or
flex_attention: one line "flex_peer: skipped: <reason>", exit 0, nothing written.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # no torch: say so, write nothing
    print(f"flex_peer: skipped: PyTorch not importable ({e})")
    sys.exit(0)
import sdpa_peer  # noqa: E402

try:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    FLEX_MISSING = None
except Exception as e:  # a torch before 2.5
    FLEX_MISSING = f"this torch ({torch.__version__}) has no flex_attention ({e})"

PEER = "flex_attention (torch.compile dynamic=False fullgraph; block mask built outside the timing)"


# ---- masks: name -> factory(N_q, N_kv) -> mask_mod, or None for no mask ------------------
# A later mask (sliding window, document, prefix-LM...) is one more entry; a mask_mod is
# mask_mod(b, h, q_idx, kv_idx) -> bool tensor, True where the query sees the key.
def _full(Nq, Nkv):
    return None


def _causal(Nq, Nkv):
    off = Nkv - Nq   # bottom-right: the last query sees every key (0 on square shapes)

    def causal(b, h, q_idx, kv_idx):
        return q_idx + off >= kv_idx
    return causal


MASKS = {"full": _full, "causal": _causal}


def block_mask(mask, Nq, Nkv, device):
    """The BlockMask of MASKS[mask] for N_q x N_kv (broadcast over batch and heads: B and H
    None), or None (no mask: flex attends to every key)."""
    mod = MASKS[mask](Nq, Nkv)
    return None if mod is None else create_block_mask(mod, None, None, Nq, Nkv, device=device)


def _raise_recompile_limits():
    """Every shape recompiles (dynamic=False): dynamo's limits go up, whichever this torch
    names (recompile_limit, or cache_size_limit before it)."""
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, max(getattr(cfg, name), 1000))
    cfg.suppress_errors = False   # a compile failure raises (the shape's note), no eager fallback


_COMPILED = None


def compiled_flex():
    global _COMPILED
    if _COMPILED is None:
        _raise_recompile_limits()
        # the bwd mode times torch.autograd.grad of one saved forward again and again
        # (retain_graph, as sdpa_peer does); a compiled backward that donates its saved
        # buffers refuses that ("non-empty donated buffers"), so none are donated
        try:
            import torch._functorch.config as functorch_config
            functorch_config.donated_buffer = False
        except (ImportError, AttributeError):
            pass
        _COMPILED = torch.compile(flex_attention, dynamic=False, fullgraph=True)
    return _COMPILED


def measure(B, H, Hkv, N, d, mask, mode, device="cuda", dtype=torch.float16, timer=None,
            check=None):
    """One flex row's time in ms on one shape (N_q = N_kv = N) and mode: NaN and the reason
    when it cannot run. The block mask and the compilation (a first forward, and its backward
    in bwd modes) happen before sdpa_peer.time_mode, which warms up and times. check(o, q,
    k, v), when given, sees the first output (tools/flex_peer.py --cpu-smoke)."""
    grad = mode != "fwd"
    t, note = float("nan"), ""
    bm = q = k = v = do = o = None
    try:
        q = torch.randn(B, H, N, d, device=device, dtype=dtype, requires_grad=grad)
        k, v = (torch.randn(B, Hkv, N, d, device=device, dtype=dtype, requires_grad=grad) for _ in range(2))
        do = torch.randn(B, H, N, d, device=device, dtype=dtype) if grad else None
        bm = block_mask(mask, N, N, device)
        flex = compiled_flex()
        fwd = lambda: flex(q, k, v, block_mask=bm, enable_gqa=Hkv != H)  # noqa: E731
        t0 = time.perf_counter()
        o = fwd()                                            # compiles (untimed)
        if check is not None:
            check(o, q, k, v)
        if grad:
            torch.autograd.grad(o, (q, k, v), do)            # compiles the backward (untimed)
        o = None
        if device == "cuda":
            torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        t = sdpa_peer.time_mode(fwd, (q, k, v), do, mode, timer=timer)
        note = ""
        print(f"flex_peer: {mode} {B},{H},{Hkv},{N},{d},{mask}: compiled and first run in {compile_s:.1f} s",
              flush=True)
    except Exception as e:
        note = root_note(e)
    del bm, q, k, v, do, o   # the shape's tensors go before the next shape's
    torch._dynamo.reset()
    if device == "cuda":
        torch.cuda.empty_cache()
    return t, note


def root_note(e):
    """A row's note for e: the innermost exception of its chain (dynamo wraps what flex
    raised in "Observed exception" or "backend compiler failed"), as sdpa_peer.note_of."""
    seen = set()
    while id(e) not in seen:
        seen.add(id(e))
        inner = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
        if inner is None:
            break
        e = inner
    return sdpa_peer.note_of(e)


def parse(spec):
    """B,H,N,d,causal or B,H,H_kv,N,d,causal -> (B, H, H_kv or None, N, d, causal)."""
    x = [int(v) for v in spec.split(",")]
    if len(x) == 5:
        return x[0], x[1], None, x[2], x[3], x[4]
    if len(x) == 6:
        return tuple(x)
    raise ValueError(f"a spec is B,H,N,d,causal or B,H,H_kv,N,d,causal, not {spec}")


def main(argv=None, phase="peer (flex)", command=None, mode="fwd", append=False):
    """argv: [OUT.csv, spec...] as sdpa_peer.main's (specs may carry H_kv). append: add the
    rows (after a '# peer:' line of their own) to OUT as written by sdpa_peer.main, with
    the same columns (tools/peers.py, tools/bwd_peers.py). Returns 0; prints one skipped
    line and writes nothing without CUDA or flex_attention."""
    argv = sys.argv[1:] if argv is None else argv
    command = sys.argv if command is None else command
    if not torch.cuda.is_available():
        print("flex_peer: skipped: no CUDA device")
        return 0
    if FLEX_MISSING:
        print(f"flex_peer: skipped: {FLEX_MISSING}")
        return 0
    specs = [parse(s) for s in argv[1:]]
    gqa = any(s[2] is not None for s in specs)
    if append and gqa:
        raise ValueError("appended rows keep sdpa_peer's columns: no H_kv in the specs")
    with open(argv[0], "a" if append else "w") as out:
        if append:
            out.write(sdpa_peer.peer_line(PEER))
        else:
            out.write(sdpa_peer.header(phase, command, peer=PEER))
            out.write(sdpa_peer.COLUMNS.replace("H,", "H,H_kv,", 1) if gqa else sdpa_peer.COLUMNS)
        for B, H, Hkv, N, d, causal in specs:
            t, note = measure(B, H, H if Hkv is None else Hkv, N, d, "causal" if causal else "full", mode)
            line = sdpa_peer.row("flex", B, H, N, d, causal, t, sdpa_peer.flops(B, H, N, d, causal, mode), note,
                                 H_kv=(H if Hkv is None else Hkv) if gqa else None)
            print("flex_peer:", line, flush=True)
            out.write(line.replace("nan", "") + "\n")
            out.flush()
    return 0


def cpu_smoke():
    """The code path on the CPU at tiny fp32 shapes: block masks, the compiled call, the
    mode dispatch, the error path; each forward checked against SDPA's math on the CPU.
    Timed with a stand-in timer that runs fn once and returns NaN: no time is a result."""
    if FLEX_MISSING:
        print(f"flex_peer: skipped: {FLEX_MISSING}")
        return 0
    bad = []

    def once(fn):
        fn()
        return float("nan")

    for B, H, Hkv, N, d, mask in ((1, 2, 2, 256, 64, "full"), (1, 2, 2, 256, 64, "causal"),
                                  (2, 4, 2, 256, 64, "causal")):
        for mode in ("fwd", "bwd", "fwdbwd"):
            err = []

            def check(o, q, k, v):
                ref = F.scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), is_causal=mask == "causal",
                                                     enable_gqa=Hkv != H)
                err.append((o.detach() - ref).abs().max().item())
            _, note = measure(B, H, Hkv, N, d, mask, mode, device="cpu", dtype=torch.float32, timer=once,
                              check=check)
            ok = (mode == "fwd" and note == "" and err and err[0] < 1e-4) or \
                 (mode != "fwd" and (note != "" or (err and err[0] < 1e-4)))
            if not ok:
                bad.append(f"{mode} {B},{H},{Hkv},{N},{d},{mask}")
            print(f"flex_peer: SMOKE (cpu, fp32, not a result) {mode} B={B} H={H} H_kv={Hkv} N={N} d={d} {mask}: "
                  f"max |flex - sdpa| = {err[0] if err else float('nan'):.2e}; note: {note or '-'}; "
                  f"{'ok' if ok else 'WRONG'}", flush=True)
    print(f"flex_peer: SMOKE {'passed' if not bad else 'FAILED: ' + '; '.join(bad)}")
    return 1 if bad else 0


def cli(args):
    if args == ["--cpu-smoke"]:
        return cpu_smoke()
    mode = "fwd"
    if len(args) >= 2 and args[0] == "--mode":
        mode, args = args[1], args[2:]
    if mode not in sdpa_peer.MODE_FLOPS or len(args) < 2 or args[0].startswith("-"):
        print("usage: flex_peer.py [--mode fwd|bwd|fwdbwd] OUT.csv B,H[,H_kv],N,d,causal ... | --cpu-smoke",
              file=sys.stderr)
        return 2
    try:
        specs = [parse(s) for s in args[1:]]
    except ValueError as e:
        print(f"flex_peer: {e}", file=sys.stderr)
        return 2
    del specs
    return main(args, phase=f"peer (flex, {mode})", mode=mode)


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
