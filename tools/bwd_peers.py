#!/usr/bin/env python3
"""bwd_peers.py - the official FlashAttention-2 backward (and cuDNN's) on the phase-5
sweep's shapes, as peer lines for chapter 5's plots. Optional: without PyTorch it says so
and writes nothing.

    python3 tools/bwd_peers.py OUT.csv [POINTS]   (make phase5-sweep runs it; POINTS: as peers.py's)

Shapes: the FA2 paper's setting: fp16, hidden 2048 (H = 2048 / d), B x N = 16k tokens,
N = 512..16384, d = 64 and 128, causal and not. Each shape twice: the backward alone
(mode bwd, "<backend>" rows in OUT.csv) and a forward with its backward (mode fwdbwd: the
training step, "<backend>" rows in OUT_fwdbwd.csv). Backends: SDPA flash and cuDNN, then
FlexAttention ("flex" rows in both files, tools/flex_peer.py: torch.compile'd
flex_attention, after every SDPA row, under a '# peer:' line of its own) when
FA_PEERS_FLEX=1: off by default, because each shape compiles (minutes for a sweep); a torch
without flex_attention says so in one line. Timing, CSV and
header: tools/sdpa_peer.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch  # noqa: F401
except Exception as e:
    print(f"bwd_peers: skipped: PyTorch not importable ({e})")
    sys.exit(0)
import sdpa_peer  # noqa: E402
from peers import shapes  # noqa: E402  (the forward peers' shapes: the same sweep)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print("usage: bwd_peers.py OUT.csv [POINTS]")
        sys.exit(2)
    out = sys.argv[1]
    points = sys.argv[2] if len(sys.argv) == 3 else None
    base, ext = os.path.splitext(out)
    flex = os.environ.get("FA_PEERS_FLEX", "0") == "1"
    if flex:
        import flex_peer
    sdpa_peer.main([out] + list(shapes(points)), backends=("flash", "cudnn"), phase="phase5 (peers, backward)", mode="bwd")
    if flex:
        flex_peer.main([out] + list(shapes(points)), mode="bwd", append=True)
    sdpa_peer.main([base + "_fwdbwd" + ext] + list(shapes(points)), backends=("flash", "cudnn"),
                   phase="phase5 (peers, forward + backward)", mode="fwdbwd")
    if flex:
        flex_peer.main([base + "_fwdbwd" + ext] + list(shapes(points)), mode="fwdbwd", append=True)
