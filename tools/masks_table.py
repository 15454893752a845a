#!/usr/bin/env python3
"""masks_table.py - the table of tools/masks_sweep.sh: our masked kernels beside the peers on
each mask, from OUTDIR/masks_ours.csv and OUTDIR/masks_peers.csv (standard library only).

    python3 tools/masks_table.py OUTDIR [N d]

Writes OUTDIR/masks.csv, one row a (spec, N, d): density; our best forward (the faster of
our kernels with a mask path that PASSed) and its kernel; Flex's and dense SDPA's forward;
the same for the backward; and each of ours against the same kernel's --causal run. All
TFLOP/s count the visible (row, key) pairs alone (forward 4 d pairs B H, backward 2.5x).
Writes OUTDIR/masks_plot.dat for phase4_fa2/masks_speed.gp (the point N, d: 16384, 128 by
default), and prints the table as markdown with the targets' ratios:
fwd/Flex, bwd/Flex, fwd/SDPA-dense, and each pass against its kernel's causal rate.
A row that did not PASS is never the best: its verdict goes to stderr.
"""
import csv
import os
import sys


def read(path):
    """(header '#' lines, rows as dicts)."""
    if not os.path.exists(path):
        return [], []
    with open(path) as f:
        lines = f.read().splitlines()
    head = [x for x in lines if x.startswith("#")]
    body = [x for x in lines if x and not x.startswith("#")]
    return head, list(csv.DictReader(body))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def main(argv):
    if len(argv) not in (1, 3):
        print("usage: masks_table.py OUTDIR [N d]", file=sys.stderr)
        return 2
    out = argv[0]
    plot_N, plot_d = (int(argv[1]), int(argv[2])) if len(argv) == 3 else (16384, 128)
    head, ours = read(os.path.join(out, "masks_ours.csv"))
    phead, peers = read(os.path.join(out, "masks_peers.csv"))
    if not ours:
        print(f"masks_table: no rows in {out}/masks_ours.csv", file=sys.stderr)
        return 1
    best, causal = {}, {}          # (pass, spec, N, d) -> (tflops, kernel, time, ...)
    for r in ours:
        if r["kernel"].startswith("# "):
            continue
        key = (r["pass"], r["spec"], int(r["N"]), int(r["d"]))
        if r["verdict"] != "PASS":
            print(f"masks_table: {r['pass']} {r['kernel']} {r['spec']} N={r['N']} d={r['d']}: {r['verdict']}",
                  file=sys.stderr)
            continue
        tf = num(r["tflops"])
        if r["spec"] == "causal-flag":
            causal[(r["pass"], r["kernel"], key[2], key[3])] = tf
        elif key not in best or tf > best[key][0]:
            best[key] = (tf, r["kernel"], num(r["time_ms"]))
    peer = {(r["impl"], r["mode"], r["spec"], int(r["N"]), int(r["d"])): (num(r["tflops"]), num(r["density"]))
            for r in peers}
    keys = sorted({(s, N, d) for (_, s, N, d) in best}, key=lambda k: (k[1], k[2]))
    order = []
    for r in ours:   # the specs in the sweep's order
        if r["spec"] != "causal-flag" and r["spec"] not in order:
            order.append(r["spec"])
    keys.sort(key=lambda k: (k[1], k[2], order.index(k[0]) if k[0] in order else 99))
    nan = float("nan")
    cols = ["spec", "N", "d", "density", "fwd_kernel", "fwd_tflops", "flex_fwd", "sdpa_dense_fwd", "fwd_vs_flex",
            "fwd_vs_sdpa", "fwd_vs_causal", "bwd_kernel", "bwd_tflops", "flex_bwd", "sdpa_dense_bwd", "bwd_vs_flex",
            "bwd_vs_causal"]
    rows = []
    for s, N, d in keys:
        f = best.get(("fwd", s, N, d), (nan, "-", nan))
        b = best.get(("bwd", s, N, d), (nan, "-", nan))
        ff, dens = peer.get(("flex", "fwd", s, N, d), (nan, nan))
        sf = peer.get(("sdpa-dense", "fwd", s, N, d), (nan, nan))[0]
        fb = peer.get(("flex", "bwd", s, N, d), (nan, nan))[0]
        sb = peer.get(("sdpa-dense", "bwd", s, N, d), (nan, nan))[0]
        cf = causal.get(("fwd", f[1], N, d), nan)
        cb = causal.get(("bwd", b[1], N, d), nan)
        rows.append({"spec": s, "N": N, "d": d, "density": dens, "fwd_kernel": f[1], "fwd_tflops": f[0],
                     "flex_fwd": ff, "sdpa_dense_fwd": sf, "fwd_vs_flex": f[0] / ff, "fwd_vs_sdpa": f[0] / sf,
                     "fwd_vs_causal": f[0] / cf, "bwd_kernel": b[1], "bwd_tflops": b[0], "flex_bwd": fb,
                     "sdpa_dense_bwd": sb, "bwd_vs_flex": b[0] / fb, "bwd_vs_causal": b[0] / cb})

    def fmt(x):
        if isinstance(x, float):
            return "" if x != x else (f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}")
        return str(x)
    with open(os.path.join(out, "masks.csv"), "w") as f:
        for h in head:
            f.write(h + "\n")
        for h in phead:
            if h.startswith("# peer"):
                f.write(h + "\n")
        f.write("# (made by tools/masks_table.py from masks_ours.csv and masks_peers.csv: TFLOP/s of the visible "
                "pairs; *_vs_causal: against the same kernel's --causal run)\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow([fmt(r[c]) for c in cols])
    with open(os.path.join(out, "masks_plot.dat"), "w") as f:
        f.write(f"# N = {plot_N}, d = {plot_d}: spec ours_fwd flex_fwd sdpa_dense_fwd ours_bwd flex_bwd\n")
        for r in rows:
            if r["N"] == plot_N and r["d"] == plot_d:
                f.write(f'"{r["spec"].split(":")[0]}" ' + " ".join(
                    fmt(r[c]) or "NaN" for c in ("fwd_tflops", "flex_fwd", "sdpa_dense_fwd", "bwd_tflops", "flex_bwd"))
                    + "\n")
    print("| mask | N | d | density | fwd (kernel) | Flex fwd | SDPA dense fwd | fwd/Flex | fwd/SDPA | fwd/causal "
          "| bwd (kernel) | Flex bwd | bwd/Flex | bwd/causal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['spec']} | {r['N']} | {r['d']} | {fmt(r['density'])} | {fmt(r['fwd_tflops'])} ({r['fwd_kernel']}) "
              f"| {fmt(r['flex_fwd'])} | {fmt(r['sdpa_dense_fwd'])} | {fmt(r['fwd_vs_flex'])} | {fmt(r['fwd_vs_sdpa'])} "
              f"| {fmt(r['fwd_vs_causal'])} | {fmt(r['bwd_tflops'])} ({r['bwd_kernel']}) | {fmt(r['flex_bwd'])} "
              f"| {fmt(r['bwd_vs_flex'])} | {fmt(r['bwd_vs_causal'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
