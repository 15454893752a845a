#!/usr/bin/env python3
"""peers.py - the official FlashAttention-2 (and cuDNN) on the phase-4 sweep's shapes, as
peer lines for phase 4's plots (docs/design.md, "Peers"). Optional: without PyTorch it says so
and writes nothing.

    python3 tools/peers.py OUT.csv [POINTS]   (make phase4-sweep runs it)

POINTS: the sweep's points (phase4_sweep.csv.points, written by the sweep with a GPU); without
it, the same shapes from the list below.

Shapes: the FA2 paper's setting the phase-4 sweep uses: fp16, hidden 2048 (H = 2048 / d),
B x N = 16k tokens, N = 512..16384, d = 64, 128 and 256, causal and not. Backends: PyTorch's
SDPA flash (FlashAttention-2 inside PyTorch) and cuDNN; then FlexAttention ("flex" rows,
tools/flex_peer.py: torch.compile'd flex_attention, after every SDPA row, under a '# peer:'
line of its own) when FA_PEERS_FLEX=1: off by default, because each shape compiles (minutes
for a sweep); a torch without flex_attention says so in one line). The timing and the CSV format are tools/sdpa_peer.py's (this file only
picks the shapes and the backends), and so is the CSV's metadata header (common/csv.c's
format: GPU, git commit, date, the command).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch  # noqa: F401  (sdpa_peer says the same, but before timing anything)
except Exception as e:
    print(f"peers: skipped: PyTorch not importable ({e})")
    sys.exit(0)
import sdpa_peer  # noqa: E402


def shapes(points=None):
    if points:
        for B, H, _Hkv, Nq, _Nkv, d, causal in sdpa_peer.read_points(points):
            yield f"{B},{H},{Nq},{d},{causal}"
        return
    for causal in (0, 1):
        for d in (64, 128, 256):
            N = 512
            while N <= 16384:
                yield f"{16384 // N},{2048 // d},{N},{d},{causal}"
                N *= 2


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print("usage: peers.py OUT.csv [POINTS]")
        sys.exit(2)
    sdpa_peer.main([sys.argv[1]] + list(shapes(sys.argv[2] if len(sys.argv) == 3 else None)), backends=("flash", "cudnn"), phase="phase4 (peers)")
    if os.environ.get("FA_PEERS_FLEX", "0") == "1":
        import flex_peer
        flex_peer.main([sys.argv[1]] + list(shapes(sys.argv[2] if len(sys.argv) == 3 else None)), mode="fwd", append=True)
