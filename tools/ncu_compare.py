#!/usr/bin/env python3
"""ncu_compare.py - two (or more) kernels' Nsight Compute profiles side by side.

    python3 tools/ncu_compare.py profile OUT.csv REGEX -- COMMAND...
        runs COMMAND under `ncu --set full`, profiling the first launch (after
        $NCU_LAUNCH_SKIP, default 0) of a kernel whose demangled name (template arguments
        included) matches REGEX, and writes ncu's raw page (every metric of that
        launch, one row) to OUT.csv. Needs ncu; the kernel may live in any process
        (our drivers, or PyTorch through tools/sdpa_peer.py).
    python3 tools/ncu_compare.py table A.csv B.csv ...
        prints the metrics that explain a speed gap, one column per profile: time,
        launch shape, occupancy, issue activity, tensor-pipe activity, shared-memory
        wavefronts and bank conflicts, the instruction mix (each pipe's share of its peak
        issue rate), and the warp stall reasons (cycles per issued instruction). Runs anywhere (no GPU).

ncu locks the clocks to base and flushes the caches before the profiled launch, for
every profile alike, so the columns compare; the times are not the sweep's times.
"""
import csv
import os
import re
import subprocess
import sys

# (label, regex on the raw metric name); a regex may match several metrics (one row each)
ROWS = [
    ("time (ms, ncu's clocks)", r"^gpu__time_duration\.sum$"),
    ("grid", r"^launch__grid_size$"),
    ("block", r"^launch__block_size$"),
    ("registers / thread", r"^launch__registers_per_thread$"),
    ("shared mem / block (B)", r"^launch__shared_mem_per_block_(dynamic|static)$"),
    ("blocks / SM (limit: regs)", r"^launch__occupancy_limit_registers$"),
    ("blocks / SM (limit: smem)", r"^launch__occupancy_limit_shared_mem$"),
    ("waves / SM", r"^launch__waves_per_multiprocessor$"),
    ("achieved occupancy (%)", r"^sm__warps_active\.avg\.pct_of_peak_sustained_active$"),
    ("issue slots busy (%)", r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$"),
    ("tensor pipe busy (%)", r"^sm__pipe_tensor_op_hmma_cycles_active\.avg\.pct_of_peak_sustained_active$"),
    ("tensor pipe busy, any mma (%)", r"^sm__pipe_tensor_cycles_active\.avg\.pct_of_peak_sustained_active$"),
    ("SM throughput (%)", r"^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$"),
    ("memory busiest unit (%)", r"^gpu__compute_memory_throughput\.avg\.pct_of_peak_sustained_elapsed$"),
    ("DRAM busy (%)", r"^dram__cycles_active\.avg\.pct_of_peak_sustained_elapsed$"),
    ("L1/shared busy (%)", r"^l1tex__throughput\.avg\.pct_of_peak_sustained_active$"),
    ("L2 busy (%)", r"^lts__throughput\.avg\.pct_of_peak_sustained_elapsed$"),
    ("DRAM bytes read", r"^dram__bytes_read\.sum$"),
    ("DRAM bytes written", r"^dram__bytes_write\.sum$"),
    ("instructions (warp)", r"^smsp__inst_executed\.sum$"),
    ("shared ld wavefronts", r"^l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld\.sum$"),
    ("shared st wavefronts", r"^l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st\.sum$"),
    ("shared ld bank conflicts", r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld\.sum$"),
    ("shared st bank conflicts", r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st\.sum$"),
    ("ldmatrix instructions", r"^smsp__inst_executed_op_ldsm\.sum$"),
    ("global atomics/reductions", r"^smsp__inst_executed_op_global_red\.sum$"),
    ("warp cycles / issued inst", r"^smsp__average_warp_latency_per_inst_issued\.ratio$"),
    ("pipe issue: {} (%)", r"^sm__inst_executed_pipe_(tensor_op_hmma|tensor_op_gmma|alu|fma|fmaheavy|lsu|xu|cbu|adu|uniform)"
                           r"\.avg\.pct_of_peak_sustained_active$"),
    ("stall: {}", r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$"),
]


def profile(out, regex, cmd):
    ncu = os.environ.get("NCU", "ncu")
    args = [ncu, "--set", "full", "--import-source", "no", "--kernel-name-base", "demangled",
            "--kernel-name", "regex:" + regex, "--launch-skip", os.environ.get("NCU_LAUNCH_SKIP", "0"),
            "--launch-count", "1", "--csv", "--page", "raw", "--log-file", out] + cmd
    print("ncu_compare:", " ".join(args), flush=True)
    return subprocess.call(args)


def load(path):
    """ncu's raw CSV: a header row of metric names, a row of units, one row per launch."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("==")]
    if len(rows) < 3:
        raise SystemExit(f"ncu_compare: {path}: no profiled launch in it")
    names, units, vals = rows[0], rows[1], rows[2]
    return {n: (v, u) for n, u, v in zip(names, units, vals)}, vals[names.index("Kernel Name")] \
        if "Kernel Name" in names else os.path.basename(path)


def num(s):
    try:
        return float(s.replace(",", ""))
    except (ValueError, AttributeError):
        return None


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v:.3e}"
    return f"{v:.4g}"


def table(paths):
    profs = [load(p) for p in paths]
    heads = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    for h, (_, kname) in zip(heads, profs):
        print(f"# {h}: {kname[:110]}")
    lines = []
    for label, rx in ROWS:
        names = sorted({n for m, _ in profs for n in m if re.match(rx, n)})
        for n in names:
            vals = [num(m.get(n, ("", ""))[0]) for m, _ in profs]
            if n == "gpu__time_duration.sum":   # in the unit ncu chose (ns, us, ms), shown in ms
                scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
                vals = [v * scale.get(m.get(n, ("", ""))[1], float("nan")) if v is not None else None
                        for v, (m, _) in zip(vals, profs)]
            if label.startswith("stall") and all(v is None or v < 0.05 for v in vals):
                continue   # the stall reasons that cost nothing here
            lab = label.format(re.match(rx, n).group(1)) if "{}" in label else label
            if lab in ("shared mem / block (B)",):
                lab += " " + n.rsplit("_", 1)[1]
            lines.append((lab, vals))
    w = max(len(lab) for lab, _ in lines) + 2
    print(f"{'metric':<{w}}" + "".join(f"{h[:16]:>18}" for h in heads))
    for lab, vals in lines:
        print(f"{lab:<{w}}" + "".join(f"{fmt(v):>18}" for v in vals))


def main(argv):
    if len(argv) >= 4 and argv[0] == "profile" and "--" in argv:
        k = argv.index("--")
        if k != 3 or k + 1 >= len(argv):
            raise SystemExit("usage: ncu_compare.py profile OUT.csv REGEX -- COMMAND...")
        return profile(argv[1], argv[2], argv[k + 1:])
    if len(argv) >= 2 and argv[0] == "table":
        table(argv[1:])
        return 0
    print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
