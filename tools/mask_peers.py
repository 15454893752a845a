#!/usr/bin/env python3
"""mask_peers.py - what a user would reach for instead of chapter 4c's masked kernels, timed
on the same masks: PyTorch's FlexAttention (torch.compile'd flex_attention with a BlockMask)
and SDPA given the dense boolean mask. Optional, like every peer: without PyTorch or CUDA it
says so in one line and writes nothing. tools/masks_sweep.sh runs it after our kernels.

    python3 tools/mask_peers.py OUT.csv B H N d SPEC [SPEC ...]

The mask is ours, not a second implementation of it: build/mask_map --runs SPEC N N writes
the four FlashMask vectors (lts, lte, uts, ute: the masked row runs of each key column,
common/mask.h) that our kernels read, and both peers are given exactly that mask:
  - flex: one mask_mod for every mask, reading the vectors (a key column's two runs, 4
    loads, on the partial blocks only: Flex's BlockMask skips the empty blocks and runs the
    full ones without mask_mod, the same three classes as ours);
    create_block_mask builds the BlockMask outside the timing (a model builds it once for
    all its layers). Compiled once per (N, d, mode): the vectors are copied into the same
    tensors for each mask, so no mask recompiles and dynamo's limit is never reached.
  - sdpa-dense: F.scaled_dot_product_attention with the N x N boolean mask (True: visible),
    the backend PyTorch picks for a dense mask; the mask's N^2 bytes are made outside the
    timing.
Modes: fwd and bwd (the backward alone, tools/sdpa_peer.py's time_mode: torch.autograd.grad
of one saved forward). Timing: sdpa_peer's (fp16 inputs drawn N(0,1), the median of 10
CUDA-event runs after 3 warm-up runs). TFLOP/s count the visible (row, key) pairs alone, as
FlashMask does and as our rows do (common/problem.c attn_flops_fwd): forward 4 d pairs B H,
backward 2.5 times that.

Rows: impl,mode,spec,B,H,N,d,density,time_ms,tflops,note - the spec quoted (it holds commas).
MASK_PEERS_MODES ("fwd bwd") and MASK_PEERS_IMPLS ("flex sdpa-dense") pick a part (as
tools/ncu_pairs.sh's masks set does, to profile Flex's forward kernel alone).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except Exception as e:  # no torch: say so, write nothing
    print(f"mask_peers: skipped: PyTorch not importable ({e})")
    sys.exit(0)
import sdpa_peer  # noqa: E402

COLUMNS = "impl,mode,spec,B,H,N,d,density,time_ms,tflops,note\n"
MAP = os.environ.get("MAP", os.path.join(os.environ.get("BUILD", "build"), "mask_map"))


def runs_of(spec, N):
    """The four vectors of SPEC on N x N, from the project's own constructor (mask_map
    --runs), as an int32 array [4][N], and the number of visible pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "runs.npy")
        out = subprocess.run([MAP, "--runs", spec, str(N), str(N), path], capture_output=True, text=True)
        if out.returncode != 0:
            raise ValueError(out.stderr.strip() or f"mask_map failed on {spec}")
        runs = np.load(path).astype(np.int32)
    pairs = float(out.stdout.split()[2])
    return runs, pairs


def visible(runs_t, q, kv):
    """mask.h's element test on tensors: row q sees key kv unless q lies in one of kv's runs."""
    lts, lte, uts, ute = runs_t[0][kv], runs_t[1][kv], runs_t[2][kv], runs_t[3][kv]
    return ~(((q >= lts) & (q < lte)) | ((q >= uts) & (q < ute)))


def main(argv):
    if len(argv) < 6:
        print("usage: mask_peers.py OUT.csv B H N d SPEC [SPEC ...]", file=sys.stderr)
        return 2
    out_path, (B, H, N, d), specs = argv[0], (int(x) for x in argv[1:5]), argv[5:]
    if not torch.cuda.is_available():
        print("mask_peers: skipped: no CUDA device")
        return 0
    try:
        from torch.nn.attention.flex_attention import create_block_mask  # noqa: F401
        import flex_peer
    except Exception as e:
        print(f"mask_peers: skipped: this torch ({torch.__version__}) has no flex_attention ({e})")
        return 0
    dev, dt = "cuda", torch.float16
    runs_t = torch.zeros(4, N, dtype=torch.int32, device=dev)   # one buffer: every mask's vectors in turn

    def mask_mod(b, h, q_idx, kv_idx):
        return visible(runs_t, q_idx, kv_idx)

    flex = flex_peer.compiled_flex()
    fresh = not os.path.exists(out_path)
    with open(out_path, "a") as out:
        if fresh:
            out.write(sdpa_peer.header("masks (peers)", sys.argv,
                                       peer="flex_attention (torch.compile, BlockMask of our vectors) and SDPA (dense bool mask)"))
            out.write(COLUMNS)
        for mode in os.environ.get("MASK_PEERS_MODES", "fwd bwd").split():
            grad = mode == "bwd"
            q = torch.randn(B, H, N, d, device=dev, dtype=dt, requires_grad=grad)
            k, v = (torch.randn(B, H, N, d, device=dev, dtype=dt, requires_grad=grad) for _ in range(2))
            do = torch.randn(B, H, N, d, device=dev, dtype=dt) if grad else None
            for spec in specs:
                try:
                    runs, pairs = runs_of(spec, N)
                except ValueError as e:
                    print(f"mask_peers: {e}", file=sys.stderr)
                    return 2
                fl = 4.0 * d * pairs * B * H * sdpa_peer.MODE_FLOPS[mode]
                density = pairs / (float(N) * N)
                runs_t.copy_(torch.from_numpy(runs))
                for impl in os.environ.get("MASK_PEERS_IMPLS", "flex sdpa-dense").split():
                    t, note, extra = float("nan"), "", None
                    try:
                        if impl == "flex":
                            extra = create_block_mask(mask_mod, None, None, N, N, device=dev)
                            fwd = lambda: flex(q, k, v, block_mask=extra)  # noqa: E731
                        else:
                            qi = torch.arange(N, device=dev, dtype=torch.int32)[:, None]
                            kj = torch.arange(N, device=dev, dtype=torch.int32)[None, :]
                            extra = visible(runs_t, qi, kj)          # N x N bool, True: visible
                            fwd = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=extra)  # noqa: E731
                        o = fwd()                                   # compiles (flex), untimed
                        if grad:
                            torch.autograd.grad(o, (q, k, v), do)
                        del o
                        torch.cuda.synchronize()
                        t = sdpa_peer.time_mode(fwd, (q, k, v), do, mode)
                    except Exception as e:
                        note = flex_peer.root_note(e)
                    del extra
                    torch.cuda.empty_cache()
                    tf = fl / (t * 1e-3) / 1e12 if t == t else float("nan")
                    line = f'{impl},{mode},"{spec}",{B},{H},{N},{d},{density:.4f},{t:.4f},{tf:.2f},{note}'
                    print("mask_peers:", line, flush=True)
                    out.write(line.replace("nan", "") + "\n")
                    out.flush()
            del q, k, v, do
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
