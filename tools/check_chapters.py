#!/usr/bin/env python3
"""check_chapters.py - the figures the chapters quote, recomputed from the recorded CSVs.

Two kinds of check, both of which fail when a chapter and its recorded file disagree:

  * tables: a Markdown table of a chapter, found by its header line, whose every numeric
    cell is looked up (or derived) from the CSVs and compared at the printed precision;
  * claims: a literal string a chapter must contain (a range such as "1.39-1.87x", a
    ratio, a value), computed from the CSVs here, never typed in.

A figure the chapter prints with k decimals must equal the CSV value rounded to k
decimals (ratios: the ratio of the CSV values, rounded). Usage: check_chapters.py [ROOT]
(the repository root; default: the parent of tools/). Prints one line per check and
exits 1 when any fails. Standard library only.
"""
import csv
import os, subprocess
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = os.path.join(ROOT, "docs/results/h100")   # the recorded files: never the copies of the self-test
CPU = os.path.join(ROOT, "docs/results/cpu")
H200 = os.path.join(ROOT, "docs/results/h200")
failures = 0
checks = 0



def hopper_steps():
    """The Hopper forward ladder's fp16 steps in order, read from their table by tools/kernels.sh
    (the C preprocessor on phase4_fa2/hopper/steps.h): the list the launcher is generated from."""
    out = subprocess.run(["bash", os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.sh"), "phase4-hopper", "--names"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert len(out) >= 9, out
    return out

def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


DOCS = os.path.join(ROOT, "docs")


def chapter(name):
    with open(os.path.join(DOCS, name)) as f:
        return f.read()


def report(ok, what, why=""):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
    print("%s  %s%s" % ("PASS" if ok else "FAIL", what, ("  (" + why + ")") if why and not ok else ""))


def decimals(cell):
    m = re.search(r"\.(\d+)", cell)
    return len(m.group(1)) if m else 0


def same(cell, value):
    """cell as printed ("12.3", "1.52x", "**350.7**") against a value: equal at the cell's precision"""
    text = cell.strip().strip("*").rstrip("x").strip()
    try:
        printed = float(text)
    except ValueError:
        return False
    mantissa, _, exponent = text.lower().partition("e")
    k = decimals(mantissa)
    return abs(printed - value) <= 0.5 * 10 ** (-k + int(exponent or 0)) * (1 + 1e-9)


def span(values, k=2, unit="x"):
    """a range as the chapters print it: min-max at k decimals"""
    lo, hi = min(values), max(values)
    return "%.*f-%.*f%s" % (k, lo, k, hi, unit)


def read_ncu(path, nth=0):
    """A tools/ncu_compare.py table: {metric: [its cells]} (the first row of each name; the
    header row is "metric"), and {column name: index}; nth: the file's nth table (a table
    begins at its "metric" row)."""
    ncu = {}
    seen = -1
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = re.match(r"(.+?)\s{2,}(\S.*)$", line.rstrip())
            if m and m.group(1) == "metric":
                seen += 1
            if m and seen == nth and m.group(1) not in ncu:
                ncu[m.group(1)] = m.group(2).split()
    return ncu, {n: i for i, n in enumerate(ncu.get("metric", []))}


def table(text, header):
    """the rows (lists of cells) of the Markdown table whose header line starts with header"""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if line.startswith(header):
            out = []
            for body in lines[n + 2:]:
                if not body.startswith("|"):
                    break
                out.append([c.strip() for c in body.strip().strip("|").split("|")])
            return out
    return None


def claim(doc, name, text, expected):
    report(expected in text, "%s: %s \"%s\"" % (doc, name, expected), "not in the chapter")


def check_table(doc, name, got, cells):
    """cells: list of (row label, printed cell, value from the CSVs)"""
    if not got:
        report(False, "%s: table %s" % (doc, name), "table not found")
        return
    bad = [(lab, c, v) for lab, c, v in cells if v is None or not same(c, v)]
    report(not bad and len(cells) > 0, "%s: table %s (%d cells)" % (doc, name, len(cells)),
           "; ".join("%s: printed %s, recorded %s" % (lab, c, "none" if v is None else "%.4g" % v) for lab, c, v in bad[:4]))


# ---- chapter 4c: FlashMask's census (CPU) and the masked kernels beside the peers (H200) -
def chapter_4c():
    doc = "04c_masks.md"
    text = chapter(doc)
    census = {}
    with open(os.path.join(CPU, "phase4/mask_census_f60e324.txt")) as f:
        for line in f:
            m = re.match(r"mask (\S+), .*tiles of a head: (\d+) fully masked.*?, (\d+) partial.*?, (\d+) unmasked;"
                         r".*\(density ([\d.]+)\)", line)
            if m:
                census[m.group(1)] = [float(m.group(k)) for k in (5, 2, 3, 4)]   # density, fully, partial, unmasked
    got = table(text, "| `--mask` | density | fully masked | partial | unmasked |")
    cells = []
    for r in got or []:
        spec = r[0].strip("`")
        want = census.get(spec)
        for k in range(4):
            cells.append((spec + " " + ("density", "fully", "partial", "unmasked")[k], r[1 + k], None if want is None else want[k]))
    check_table(doc, "the tile census at N = 8192", got, cells)
    # the masks sweeps of record: ours beside FlexAttention and dense SDPA (H100, one call a point)
    merged = rows(os.path.join(H100, "masks/masks_abb770b.csv"))
    merged16 = rows(os.path.join(H100, "masks/masks_16k_abb770b.csv"))
    merged32 = rows(os.path.join(H100, "masks/masks_32k_abb770b.csv"))
    num = ["density", "fwd_tflops", None, "flex_fwd", "sdpa_dense_fwd", "fwd_vs_flex", "fwd_vs_sdpa", "fwd_vs_causal",
           "bwd_tflops", None, "flex_bwd", "bwd_vs_flex", "bwd_vs_causal"]
    for recs, N, title, ds in ((merged, "", "N = 8192", ("128", "64")), (merged16, ", N = 16384", "N = 16384", ("128", "64")),
                               (merged32, ", N = 32768", "N = 32768", ("128",))):
        M = {(r["spec"], r["d"]): r for r in recs}
        for d in ds:
            got = table(text, "| mask (d = %s%s) | density | forward | kernel |" % (d, N))
            cells = []
            for r in got or []:
                spec = r[0].strip("`")
                want = M.get((spec, d))
                for k, col in enumerate(num):
                    lab = "%s d=%s %s" % (spec, d, col or ("fwd_kernel" if k == 2 else "bwd_kernel"))
                    if col is None:   # the kernel's name: text, equal or not
                        ok = want is not None and r[1 + k] == want["fwd_kernel" if k == 2 else "bwd_kernel"]
                        cells.append((lab, "1" if ok else "0", 1.0))
                    else:
                        cells.append((lab, r[1 + k], None if want is None or want[col] == "" else float(want[col])))
            if got is not None and len(got) != len([1 for r in recs if r["d"] == d]):
                cells.append(("rows: %d of %d masks" % (len(got), len([1 for r in recs if r["d"] == d])), "", None))
            check_table(doc, "ours beside the peers at d = %s, %s" % (d, title), got, cells)

    def col(name, pick=lambda r: True, recs=merged):
        return [float(r[name]) for r in recs if pick(r)]
    dens = lambda lo, hi: (lambda r: lo <= float(r["density"]) <= hi)
    at = lambda d, also=lambda r: True: (lambda r: r["d"] == d and also(r))
    long_runs = ("causal", "prefix_lm_causal:2048", "qk_sparse:2048,1024,4096,1024")
    others = lambda r: r["spec"] not in long_runs and r["spec"] != "full"
    fast_bwd = lambda r: float(r["bwd_vs_flex"]) >= 1.2
    claim(doc, "dense SDPA at density <= 0.12", text, span(col("fwd_vs_sdpa", dens(0, 0.12)), 1))
    claim(doc, "dense SDPA at density 0.2-0.25", text, span(col("fwd_vs_sdpa", dens(0.2, 0.25)), 1))
    claim(doc, "dense SDPA at density <= 0.25, N = 16384 and 32768", text, "%s and %s faster" % (
        span(col("fwd_vs_sdpa", dens(0, 0.25), merged16), 1), span(col("fwd_vs_sdpa", dens(0, 0.25), merged32), 1)))
    short32 = ("sliding:1024", "causal_document:9830,8192,6553,4915")
    claim(doc, "the forward against Flex at N = 32768, four masks", text,
          span(col("fwd_vs_flex", lambda r: r["spec"] not in short32, merged32)) + " on four masks")
    claim(doc, "the forward at N = 32768, the two short-row masks", text, "%.2fx on `causal_document` and\n    %.2fx on `sliding:1024`" % (
        col("fwd_vs_flex", lambda r: r["spec"] == short32[1], merged32)[0], col("fwd_vs_flex", lambda r: r["spec"] == short32[0], merged32)[0]))
    claim(doc, "the backward against Flex at N = 32768", text, "and %s at N = 32768" % span(col("bwd_vs_flex", recs=merged32)))
    claim(doc, "the forward against Flex at d = 64", text, span(col("fwd_vs_flex", at("64"))))
    claim(doc, "the forward against Flex at d = 128, random_eviction aside", text,
          span(col("fwd_vs_flex", at("128", lambda r: r["spec"] != "random_eviction:7"))))
    claim(doc, "the forward on random_eviction at d = 128", text,
          "%.2fx on `random_eviction`" % col("fwd_vs_flex", at("128", lambda r: r["spec"] == "random_eviction:7"))[0])
    claim(doc, "the forward against Flex at d = 64, N = 16384", text, span(col("fwd_vs_flex", at("64"), merged16)))
    claim(doc, "the forward against Flex at d = 128, N = 16384, sliding aside", text,
          span(col("fwd_vs_flex", at("128", lambda r: r["spec"] != "sliding:1024"), merged16)))
    claim(doc, "the forward on sliding at d = 128, N = 16384", text,
          "`sliding:1024` at %.2fx" % col("fwd_vs_flex", at("128", lambda r: r["spec"] == "sliding:1024"), merged16)[0])
    claim(doc, "the backward against Flex at d = 128", text, span(col("bwd_vs_flex", at("128"))))
    claim(doc, "the backward against Flex at d = 128, N = 16384", text, span(col("bwd_vs_flex", at("128"), merged16)))
    claim(doc, "the backward against Flex at d = 64, sparse masks", text, span(col("bwd_vs_flex", at("64", fast_bwd))))
    claim(doc, "the backward against Flex at d = 64, long runs", text,
          span(col("bwd_vs_flex", at("64", lambda r: not fast_bwd(r)))))
    claim(doc, "long runs, backward vs causal", text, span(col("bwd_vs_causal", lambda r: r["spec"] in long_runs)))
    claim(doc, "long runs, forward vs causal", text, span(col("fwd_vs_causal", lambda r: r["spec"] in long_runs)))
    claim(doc, "the other eight vs causal", text, span(col("fwd_vs_causal", others) + col("bwd_vs_causal", others)))
    # the element test's two steps, each tree beside 15afc94 in one call
    for name, path, header in (("the keep bits", "masks/masks_check_keepbits.txt", "| mask | d | `mma` before | `mma` bits |"),
                               ("bits + prefetch", "masks/masks_check_abb770b.txt", "| mask | d | `mma` before | `mma` bits + prefetch |")):
        chk = {}
        with open(os.path.join(H100, path)) as fh:
            for line in fh:
                m = re.match(r"(15afc94|now)\s+(\d+) (\S+) (mma|wgmma-ws) ([\d.]+) ([\d.]+) PASS", line)
                if m:
                    chk[(m.group(1), m.group(2), m.group(3), m.group(4))] = (float(m.group(5)), float(m.group(6)))
        got = table(text, header)
        cells = []
        for r in got or []:
            spec, d = r[0].strip("`"), r[1]
            g = lambda t, k, i: chk[(t, d, spec, k)][i] if (t, d, spec, k) in chk else None
            cells += [(spec + " mma before", r[2], g("15afc94", "mma", 1)), (spec + " mma after", r[3], g("now", "mma", 1)),
                      (spec + " ws before", r[4], g("15afc94", "wgmma-ws", 1)), (spec + " ws after", r[5], g("now", "wgmma-ws", 1)),
                      (spec + " ws after/before", r[6], None if g("now", "wgmma-ws", 0) is None
                       else g("15afc94", "wgmma-ws", 0) / g("now", "wgmma-ws", 0))]
        check_table(doc, "the element test's steps: " + name, got, cells)
    # the forward again at 16k and 32k with each Q block's range (mask_q_range), peers re-timed in the same call
    flat4c = " ".join(text.split())
    got = table(text, "| mask (d = 128) | N | density | before | now |")
    cells = []
    ratio_now = {}
    for r in got or []:
        spec, N = r[0].strip("`"), r[1]
        tag = {"16384": "16k", "32768": "32k"}[N]
        old = rows(os.path.join(H100, "masks/masks_ours_%s_abb770b.csv" % tag))
        new = rows(os.path.join(H100, "masks/masks_ours_fwd_%s_49f3d94.csv" % tag))
        po = rows(os.path.join(H100, "masks/masks_peers_%s_abb770b.csv" % tag))
        pn = rows(os.path.join(H100, "masks/masks_peers_fwd_%s_49f3d94.csv" % tag))
        best = lambda rs, sp: max((float(x["tflops"]), x["kernel"]) for x in rs
                                  if x["spec"] == sp and x["pass"] == "fwd" and x["d"] == "128" and x["verdict"] == "PASS")
        peer = lambda rs, sp, impl: next(float(x["tflops"]) for x in rs if x["spec"] == sp and x["mode"] == "fwd" and x["impl"] == impl and x["d"] == "128")
        den = next(float(x["density"]) for x in pn if x["spec"] == spec)
        (to, _), (tn, kn) = best(old, spec), best(new, spec)
        fo, fn, sn, ct = peer(po, spec, "flex"), peer(pn, spec, "flex"), peer(pn, spec, "sdpa-dense"), best(new, "causal-flag")[0]
        lab = "%s N=%s" % (spec, N)
        cells += [(lab + " density", r[2], den), (lab + " before", r[3], to), (lab + " now", r[4], tn), (lab + " kernel", "1" if r[5] == kn else "0", 1.0),
                  (lab + " flex", r[6], fn), (lab + " sdpa", r[7], sn), (lab + " vs flex before", r[8], to / fo), (lab + " vs flex now", r[9], tn / fn),
                  (lab + " vs sdpa", r[10], tn / sn), (lab + " vs causal", r[11], tn / ct)]
        ratio_now[(spec.split(":")[0], N)] = (tn / to, tn / fn)
    check_table(doc, "the forward with each Q block's range", got, cells)
    if ratio_now:
        claim(doc, "the range's gain on sliding", flat4c, "`sliding:1024` runs at %.2fx its former rate at N = 16384 and %.2fx at 32768" % (
            ratio_now[("sliding", "16384")][0], ratio_now[("sliding", "32768")][0]))
        claim(doc, "the long-run masks under the range", flat4c, "The long-run masks (`causal`, `prefix_lm_causal`) did not gain (%s their former rate)" % span(
            [v[0] for k, v in ratio_now.items() if k[0] in ("causal", "prefix_lm_causal")]))
        claim(doc, "the six masks against Flex with the range", flat4c, "the six masks %s Flex's at N = 16384 and 32768" % span([v[1] for v in ratio_now.values()]))
    # the backward at d = 64 beside Flex's (ncu)
    nc, ccol = read_ncu(os.path.join(H100, "masks/ncu_masksbwd_49f3d94.txt"))
    got = table(text, "| (ncu, `causal` as a mask, d = 64) |")
    cells = []
    for r in got or []:
        for k, kern in enumerate(("ws_bwd64_causal", "flex_bwd64_causa")):
            cells.append((r[0] + " " + kern, r[1 + k], float(nc[r[0]][ccol[kern]]) if r[0] in nc else None))
    check_table(doc, "the masked backward beside Flex's (ncu)", got, cells)
    text5 = chapter("05_backward.md")   # chapter 5's section quotes the same record
    claim("05_backward.md", "the masked backward against Flex, d = 128", text5, span(col("bwd_vs_flex", at("128"))))
    claim("05_backward.md", "the masked backward against Flex, d = 64", text5, span(col("bwd_vs_flex", at("64"))))
    claim("05_backward.md", "the masked backward vs causal, long runs", text5,
          span(col("bwd_vs_causal", lambda r: r["spec"] in long_runs)))


# ---- chapter 4b: the phase 4 sweep of record and its peers ---------------------------
def sweep_first_lines(name):
    """A Hopper sweep record's {(kernel, d, causal, N): TFLOP/s}, a point's first line."""
    T = {}
    with open(os.path.join(H100, "phase4/phase4_hopper_sweep_%s.txt" % name)) as f:
        for line in f:
            m = re.match(r"\s*sweep tokens16k d=\s*(\d+) (full|causal)\s+N=\s*(\d+) .*?:\s+(.*)", line)
            if m:
                for kern, tf in re.findall(r"(\S+) [\d.]+ ms ([\d.]+) TFLOP/s", m.group(4)):
                    T.setdefault((kern, int(m.group(1)), int(m.group(2) == "causal"), int(m.group(3))), float(tf))
    return T


def peers_of(name):
    return {(r["backend"], int(r["d"]), int(r["causal"]), int(r["N"])): float(r["tflops"])
            for r in rows(os.path.join(H100, "phase4/phase4_peers_%s.csv" % name))}


def hopper_sweep_record():
    """Chapter 4b's sweep of record: {(kernel, d, causal, N): TFLOP/s} (a point's first line
    in the record) and the peers {(backend, d, causal, N): TFLOP/s}, each point's from the
    machine of its part: d = 128 and 64 (G, every step in one call), d = 256 without a mask
    (C), d = 256 causal (B)."""
    T = sweep_first_lines("bbadc77")
    P = {}
    for name in ("814286b", "64eb909", "bbadc77"):   # later files win: B, then C, then G (d = 128 and 64)
        P.update(peers_of(name))
    return T, P


def chapter_4b_exp_budget(doc, text):
    """the exp budget's probe table: each build's TFLOP/s (and its ratio to the build as it is)
    from the record of tools/softmax_probe.sh"""
    rec = {}
    with open(os.path.join(H200, "phase4/softmax_probe_7f51d3a.txt")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 10 and w[0] in ("default", "norescale", "noexp") and w[2].isdigit():
                rec[(w[0], w[1], int(w[5]), int(w[6]))] = float(w[8])
    got = table(text, "| d | kernel | as built | no O~ rescale | no exp2 |")
    cells = []
    for r in got or []:
        d = int(r[0].split(",")[0]); c = 1 if "causal" in r[0] else 0; k = r[1].strip("`")
        base = rec.get(("default", k, d, c))
        cells.append((r[0] + " " + k + " as built", r[2], base))
        for col, build in ((3, "norescale"), (4, "noexp")):
            value, _, ratio = r[col].partition(" (")
            v = rec.get((build, k, d, c))
            cells.append((r[0] + " " + k + " " + build, value, v))
            cells.append((r[0] + " " + k + " " + build + " ratio", ratio.rstrip(")"), v / base if v and base else None))
    check_table(doc, "the exp budget measured (softmax_probe)", got, cells)
    # conditional rescaling on the CPU model: every figure of its table is one the test printed
    with open(os.path.join(CPU, "phase4/cond_rescale_6ab3d1a.txt")) as f:
        printed = f.read()
    got = table(text, "| run (B=1 H=2 N_q=512 N_kv=1024 d=128, fp64 oracle) |")
    figures = [c for r in got or [] for c in r[1:] if c]
    absent = [c for c in figures if not all(re.search(r"(^|[ (,])" + re.escape(w) + r"([ ;,)]|$)", printed) for w in c.split(" of "))]
    report(got and figures and not absent, "%s: table conditional rescaling (%d figures, each in its record)" % (doc, len(figures)),
           "not recorded: " + ", ".join(absent))


def chapter_4b():
    doc = "04b_hopper.md"
    text = chapter(doc)
    # FA3's FP8 accuracy on the CPU model: the table against the three recorded CSVs
    acc = {}
    for dd in (64, 128, 256):
        for r in rows(os.path.join(CPU, "phase4/fp8_accuracy_d%d_611a6c0.csv" % dd)):
            acc[(r["mode"], dd)] = float(r["rmse"])
    got = table(text, "| mode | d = 64 | d = 128 | d = 256 |")
    cells = []
    for r in got or []:
        for k, dd in enumerate((64, 128, 256)):
            cells.append((r[0] + " d=%d" % dd, r[1 + k], acc.get((r[0], dd))))
    check_table(doc, "FP8 accuracy per mode", got, cells)
    ratio = [acc[("fp8, block scales + Hadamard", dd)] / acc[("fp8, one scale a tensor", dd)] for dd in (64, 128, 256)]
    claim(doc, "Hadamard against one scale a tensor", text, span(ratio))
    # the introduction's gap, from chapter 4's sweep of record and its peers (every N, d = 64 and 128)
    P4 = {(r["backend"], int(r["d"]), int(r["causal"]), int(r["N"])): float(r["tflops"])
          for r in rows(os.path.join(H100, "phase4/phase4_peers_450175c.csv"))}
    pts4 = [(d, c, n) for d in (64, 128) for c in (0, 1) for n in (512, 1024, 2048, 4096, 8192, 16384)]
    claim(doc, "cuDNN over SDPA flash, d = 64 and 128 (chapter 4's sweep)", text,
          span([P4[("cudnn",) + p] / P4[("flash",) + p] for p in pts4]))
    # the Hopper sweep of record and each point's peers (hopper_sweep_record says whose)
    T, P = hopper_sweep_record()
    steps = hopper_steps()   # the ladder's fp16 steps, from its table (phase4_fa2/hopper/steps.h)
    big = [(d, c, n) for d in (128, 64) for c in (0, 1) for n in (2048, 4096, 8192, 16384)]

    def best_kernel(p):
        return max((k for k in steps if (k,) + p in T), key=lambda k: T[(k,) + p])

    def best(p):
        return T[(best_kernel(p),) + p]

    got = table(text, "| d | mask | N | wgmma | tma | ws | pingpong | overlap | persist | fa3order | fa3 | store |")
    cells = []
    for r in got or []:
        p = (int(r[0]), 1 if r[1] == "causal" else 0, int(r[2]))
        lab = "d=%d %s N=%d" % (p[0], r[1], p[2])
        for i, kern in enumerate(steps):
            if r[3 + i] == "-":   # not measured: the record must have no such row
                cells.append((lab + " " + kern + " (-)", "1" if (kern,) + p not in T else "0", 1.0))
            else:
                cells.append((lab + " " + kern, r[3 + i], T.get((kern,) + p)))
        cells.append((lab + " flash", r[12], P.get(("flash",) + p)))
        cells.append((lab + " cudnn", r[13], P.get(("cudnn",) + p)))
        cells.append((lab + " best/FA2", r[14], best(p) / P[("flash",) + p]))
        cells.append((lab + " best/cuDNN", r[15], best(p) / P[("cudnn",) + p]))
        bold = [steps[i] for i in range(len(steps)) if r[3 + i].startswith("**")]
        if len(bold) != 1 or T[(bold[0],) + p] != best(p):
            cells.append((lab + " bold cell is " + ",".join(bold) + ", fastest " + best_kernel(p), "", None))
    if got is not None and len(got) != len(big):
        cells.append(("rows: %d of %d points" % (len(got), len(big)), "", None))
    check_table(doc, "every step beside both peers", got, cells)
    got = table(text, "| d | mask | N | wgmma-ws | wgmma-persist |")
    cells = []
    for r in got or []:
        p = (256, 1 if r[1] == "causal" else 0, int(r[2]))
        lab = "d=256 %s N=%d" % (r[1], p[2])
        ws = T.get(("wgmma-ws",) + p)
        cells += [(lab + " ws", r[3], ws), (lab + " persist", r[4], T.get(("wgmma-persist",) + p)),
                  (lab + " flash", r[5], P.get(("flash",) + p)), (lab + " cudnn", r[6], P.get(("cudnn",) + p)),
                  (lab + " ws/FA2", r[7], ws / P[("flash",) + p] if ws else None),
                  (lab + " ws/cuDNN", r[8], ws / P[("cudnn",) + p] if ws else None)]
    check_table(doc, "d = 256 beside both peers", got, cells)
    d256 = [(256, c, n) for c in (0, 1) for n in (2048, 4096, 8192, 16384) if ("wgmma-ws", 256, c, n) in T]
    got = table(text, "| d | mask | N | wgmma-fp8 | best fp16 step |")
    cells = []
    f8 = {}
    for r in got or []:
        p = (int(r[0]), 1 if r[1] == "causal" else 0, int(r[2]))
        lab = "d=%d %s N=%d" % (p[0], r[1], p[2])
        v = T.get(("wgmma-fp8",) + p)
        b = best(p) if p[0] != 256 else max(T[(k,) + p] for k in ("wgmma-ws", "wgmma-persist"))
        bk = best_kernel(p) if p[0] != 256 else "wgmma-ws"
        m = re.match(r"([\d.]+) \((\S+)\)", r[4])
        cells += [(lab + " fp8", r[3], v), (lab + " best fp16", m.group(1) if m else "", b),
                  (lab + " best's name", "1" if m and m.group(2) == bk else "0", 1.0),
                  (lab + " fp8/best", r[5], v / b if v else None), (lab + " cudnn", r[6], P.get(("cudnn",) + p)),
                  (lab + " fp8/cudnn", r[7], v / P[("cudnn",) + p] if v else None)]
        if v:
            f8[p] = v / b
    check_table(doc, "FP8 beside the best fp16 step", got, cells)

    def ratio(num, den, points):
        return [num(p) / den(p) for p in points]

    k = lambda name: (lambda p: T[(name,) + p])
    peer = lambda name: (lambda p: P[(name,) + p])
    full = lambda d: [p for p in big if p[0] == d and p[1] == 0]
    for d in (128, 64):
        claim(doc, "pingpong over ws, d = %d, not causal" % d, text, span(ratio(k("wgmma-pingpong"), k("wgmma-ws"), full(d))))
        claim(doc, "overlap over ws, d = %d, not causal" % d, text, span(ratio(k("wgmma-overlap"), k("wgmma-ws"), full(d))))
    flat = " ".join(text.split())
    best_vs = lambda name, d: span(ratio(best, peer(name), [p for p in big if p[0] == d]))   # the best step against a peer at d
    fp8_over = lambda d: span([v for p, v in f8.items() if p[0] == d])                      # FP8 over the best fp16 step
    fp8_peak = lambda d: max(T[("wgmma-fp8",) + p] for p in f8 if p[0] == d)
    claim(doc, "best step over FA2 and cuDNN", flat, "%s FlashAttention-2 inside PyTorch, and %s cuDNN at d = 128" % (
        span(ratio(best, peer("flash"), big)), best_vs("cudnn", 128)))
    claim(doc, "best step over cuDNN at d = 128, N = 16384", flat, "(%.2fx at N = 16384 not causal, %.2fx causal)" % (
        best((128, 0, 16384)) / P[("cudnn", 128, 0, 16384)], best((128, 1, 16384)) / P[("cudnn", 128, 1, 16384)]))
    claim(doc, "best step over cuDNN at d = 64", flat, "%s at d = 64." % best_vs("cudnn", 64))
    for d in (128, 64):
        g = ratio(k("wgmma-fa3order"), k("wgmma-ws"), [p for p in big if p[0] == d])
        g9 = ratio(k("wgmma-fa3"), k("wgmma-ws"), [p for p in big if p[0] == d])
        lo, hi = 100 * (min(max(a, b) for a, b in zip(g, g9)) - 1), 100 * (max(max(a, b) for a, b in zip(g, g9)) - 1)
        claim(doc, "steps 8/9 over step 3, d = %d" % d, flat, "%d-%d%% at d = %d" % (round(lo), round(hi), d))
    dev = max(abs(T[("wgmma-fa3",) + p] / T[("wgmma-fa3order",) + p] - 1) for p in big)
    claim(doc, "step 9 against step 8, the best-step bullet", flat, "Step 8 (or step 9, within %.1f%%)" % (100 * dev))
    claim(doc, "step 9 against step 8, the pingpong bullet", flat, "step 9 is within %.1f%% of step 8, either side" % (100 * dev))
    small = [(d, c, n) for d in (128, 64) for c in (0, 1) for n in (512, 1024)]
    claim(doc, "step 10 over step 8", flat, "%s step 8 from N = 2048 on, %s below" % (
        span(ratio(k("wgmma-store"), k("wgmma-fa3order"), big)), span(ratio(k("wgmma-store"), k("wgmma-fa3order"), small))))
    for d, pts in ((128, [p for p in big if p[0] == 128 and p[1] == 0]), (64, [p for p in big if p[0] == 64 and p[1] == 0]), (256, d256)):
        claim(doc, "persist over ws, d = %d" % d, flat, span(ratio(k("wgmma-persist"), k("wgmma-ws"), pts)) + " at d = %d" % d)
    claim(doc, "ws at d = 256 over FA2 and cuDNN", flat, "step 3 is %s FlashAttention-2 inside PyTorch and %s cuDNN" % (
        span(ratio(k("wgmma-ws"), peer("flash"), d256)), span(ratio(k("wgmma-ws"), peer("cudnn"), d256))))
    five = steps[:5]
    report(all(max(five, key=lambda kk: T[(kk,) + p]) == "wgmma-ws" for p in big if p[0] == 128),
           "%s: step 3 the fastest of steps 1-5 at every point N >= 2048 at d = 128" % doc)
    report(all(T[("wgmma-tma",) + p] > T[("wgmma-ws",) + p] for p in big if p[0] == 64),
           "%s: step 2 faster than step 3 at every point N >= 2048 at d = 64" % doc)
    report(best_kernel((64, 1, 2048)) == "wgmma-tma" and all(best_kernel(p) in ("wgmma-fa3order", "wgmma-fa3") for p in big if p != (64, 1, 2048)),
           "%s: steps 8 or 9 the best but at d = 64 causal N = 2048 (step 2)" % doc)
    # the earlier runs of the same steps at d = 128: A (64eb909's first part, peers 47724da), D (896860e)
    b128 = [p for p in big if p[0] == 128]
    TA, PA, TD, PD = sweep_first_lines("64eb909"), peers_of("47724da"), sweep_first_lines("896860e"), peers_of("896860e")
    best_of = lambda TT, p: max(TT[(kk,) + p] for kk in steps[:8])   # steps 1-6, 8, 9: in all three runs
    below = sorted((p, best(p) / P[("cudnn",) + p]) for p in b128 if best(p) / P[("cudnn",) + p] < 0.95)
    claim(doc, "three machines at d = 128", flat, "measured the best step at %s and %s cuDNN at d = 128 from N = 2048 on, this one at %s. Against the first, step 8 ran at %s on the second and %s here, cuDNN at %s and %s" % (
        span([best_of(TA, p) / PA[("cudnn",) + p] for p in b128]), span([best_of(TD, p) / PD[("cudnn",) + p] for p in b128]),
        best_vs("cudnn", 128),
        span([TD[("wgmma-fa3order",) + p] / TA[("wgmma-fa3order",) + p] for p in b128]),
        span([T[("wgmma-fa3order",) + p] / TA[("wgmma-fa3order",) + p] for p in b128]),
        span([PD[("cudnn",) + p] / PA[("cudnn",) + p] for p in b128]),
        span([P[("cudnn",) + p] / PA[("cudnn",) + p] for p in b128])))
    claim(doc, "the points below 0.95x cuDNN at d = 128", flat, "below 0.95x: " + ", ".join(
        "%s N = %d (%.2fx)" % ("causal" if p[1] else "not causal", p[2], v) for p, v in below))
    claim(doc, "step 3 over FA2 and cuDNN", flat, "it is %s FlashAttention-2 inside PyTorch at d = 128 and %s at d = 64 (causal and not); against cuDNN, %s at d = 128 without a mask, %s causal, and %s at d = 64" % (
        span(ratio(k("wgmma-ws"), peer("flash"), [p for p in big if p[0] == 128])), span(ratio(k("wgmma-ws"), peer("flash"), [p for p in big if p[0] == 64])),
        span(ratio(k("wgmma-ws"), peer("cudnn"), [p for p in big if p[0] == 128 and p[1] == 0])),
        span(ratio(k("wgmma-ws"), peer("cudnn"), [p for p in big if p[0] == 128 and p[1] == 1])),
        span(ratio(k("wgmma-ws"), peer("cudnn"), [p for p in big if p[0] == 64]))))
    top = (128, 0, 16384)
    claim(doc, "step 3 at 16k tokens", flat, "it reaches %.1f TFLOP/s (not causal), against cuDNN's %.1f" % (T[("wgmma-ws",) + top], P[("cudnn",) + top]))
    claim(doc, "best at 16k tokens, d = 128", flat, "%.1f here (%.2fx), cuDNN %.1f" % (best(top), best(top) / 648, P[("cudnn",) + top]))
    claim(doc, "best fp16 over cuDNN, FA2, summary", flat, "at %s cuDNN (d = 128) and %s (d = 64) from N = 2048 on, and %s FlashAttention-2" % (
        best_vs("cudnn", 128), best_vs("cudnn", 64),
        span(ratio(best, peer("flash"), big))))
    claim(doc, "FP8 over the best fp16 step, d = 256", flat, "At d = 256 FP8 is %s the best fp16 step and reaches %.1f TFLOP/s" % (
        fp8_over(256), fp8_peak(256)))
    readme_row = "fp16: %s cuDNN at d=128 (%.1f TFLOP/s at N=16384, not causal), %s at d=64, %s PyTorch's FA2 backend; d=256 (`wgmma-ws`): %s FA2's, %s cuDNN's; FP8 (e4m3, block scales + Hadamard): %s the best fp16 step at d=128 (%.1f TFLOP/s), %s at d=256 (%.1f TFLOP/s)" % (
        best_vs("cudnn", 128), best(top), best_vs("cudnn", 64),
        span(ratio(best, peer("flash"), big)), span(ratio(k("wgmma-ws"), peer("flash"), d256)), span(ratio(k("wgmma-ws"), peer("cudnn"), d256)),
        fp8_over(128), fp8_peak(128),
        fp8_over(256), fp8_peak(256))
    readme = " ".join(open(os.path.join(ROOT, "README.md")).read().split())
    claim("README.md", "chapter 4b's FA3 row", readme, readme_row)
    claim("README.md", "chapter 4b's row in the chapter list", readme,
          "is the fastest fp16 step, %s cuDNN at d = 128 and %s at d = 64 from N = 2048; FP8 (`wgmma-fp8`, QGMMA in the SASS) %s the best fp16 step at d = 128 and %s at d = 256" % (
              best_vs("cudnn", 128), best_vs("cudnn", 64), fp8_over(128), fp8_over(256)))
    claim("06_decoding.md", "the map's 4b row", " ".join(chapter("06_decoding.md").split()),
          "%.1f TFLOP/s at B=4 N=4096 d=128 (`wgmma-fa3order`), %.1f at 16k; %s cuDNN at d = 128 and %s PyTorch's FA2 backend for the best step from N = 2048 on; FP8: %.1f TFLOP/s at d = 128, %.1f at d = 256" % (
              T[("wgmma-fa3order", 128, 0, 4096)], best(top), best_vs("cudnn", 128),
              span(ratio(best, peer("flash"), big)), fp8_peak(128),
              fp8_peak(256)))
    # k = 4 and 8 FMA exponentials against the default (call 54: each shape timed in three builds, k a build option then)
    chk = open(os.path.join(H100, "phase4/phase4_gpu_checks_896860e.txt")).read()
    fma = {}
    build = shape = None
    for line in chk.splitlines():
        m = re.match(r"## (build|build_f4|build_f8) (--.*)", line)
        if m:
            build, shape = m.group(1), m.group(2).strip()
            continue
        m = re.match(r"wgmma-fp8 gpu .* \d+x\d+ ([\d.]+) ", line)
        if m and build:
            fma[(build, shape)] = float(m.group(1))
            build = None
    shapes = sorted({sh for _, sh in fma})
    claim(doc, "the FMA exp2 against the SFU's", flat, "%s `wgmma-fp8` with k = 4 and %s with k = 8" % (
        span([fma[("build", sh)] / fma[("build_f4", sh)] for sh in shapes]),
        span([fma[("build", sh)] / fma[("build_f8", sh)] for sh in shapes])))
    report(len(shapes) == 5, "%s: FA2_FP8_EXP2_FMA timed on 5 shapes in 3 builds (%d)" % (doc, len(shapes)))
    m1 = re.search(r"^(\d+) PASS, 0 FAIL, 0 SKIP when the limit cut it", chk, re.M)
    m2 = re.search(r"^(\d+) passed, 0 failed, \d+ skipped", chk, re.M)
    claim(doc, "make phase4 test on the H100, two calls", flat, "the first ran %s tests, all PASS, until the limit; the second (`T_FROM`, `tools/testlib.sh`) ran the %s tests" % (
        m1.group(1) if m1 else "?", m2.group(1) if m2 else "?"))
    report(len(re.findall(r"^\d+\s+\w+check\s+rc=0\s", chk, re.M)) == 46 and " rc=9" not in chk,
           "%s: the 46 sanitizer runs of the record all exit 0" % doc)
    chk10 = open(os.path.join(H100, "phase4/phase4_gpu_checks_bbadc77.txt")).read()
    fam = len(re.findall(r"^phase4: PASS \(2 rows, 0 failed\)", chk10, re.M))
    san10 = len(re.findall(r"^san \w+ d=\d+ rc=0 .*(0 errors|0 hazards)", chk10, re.M))
    vis10 = "FAIL wgmma-store (gpu): visited" in chk10
    claim(doc, "step 10 rechecked on the final code", flat, "%d of 6 PASS, the counters %s the deleted range, %d of 6 sanitizer runs clean" % (
        fam, "FAIL" if vis10 else "do not FAIL", san10))
    claim(doc, "step 10 over step 8, its section", flat, "It is slower: %s step 8 (the sweep below)" % span(
        ratio(k("wgmma-store"), k("wgmma-fa3order"), big)))
    claim(doc, "FP8 over the best fp16 step, d = 128", flat, "At d = 128 it is %s, %.1f TFLOP/s at best" % (
        fp8_over(128), fp8_peak(128)))

    # Nsight Compute: the table's cells against the recorded text table
    ncu, col = read_ncu(os.path.join(H100, "phase4/phase4_ncu_hopper_814286b.txt"))

    def metric(name, kern):
        v = ncu.get(name)
        return float(v[col[kern]]) if v and kern in col else None

    rowmap = {"time (ms)": "time (ms, ncu's clocks)", "tensor pipe busy": "tensor pipe busy (%)",
              "issue slots busy": "issue slots busy (%)", "instructions (warp)": "instructions (warp)",
              "pipe issue: alu": "pipe issue: alu (%)", "pipe issue: uniform": "pipe issue: uniform (%)",
              "pipe issue: xu (exp2, conversions)": "pipe issue: xu (%)", "DRAM bytes written": "DRAM bytes written"}
    for header, kerns, name in (("| (d = 128) | **wgmma-fa3order (8)** |", ["fa3order128", "fp8_128", "cudnn128"], "d = 128"),
                                ("| (d = 64) | **wgmma-fa3order (8)** |", ["fa3order64", "cudnn64"], "d = 64")):
        got = table(text, header)
        cells = []
        for r in got or []:
            if r[0] in rowmap:
                for i, kern in enumerate(kerns):
                    cells.append((r[0] + " " + kern, r[1 + i].rstrip("%"), metric(rowmap[r[0]], kern)))
        check_table(doc, "Nsight Compute, " + name, got, cells)
    busy = lambda kern: metric("time (ms, ncu's clocks)", kern) * metric("tensor pipe busy (%)", kern) / 100
    idle = lambda kern: metric("time (ms, ncu's clocks)", kern) - busy(kern)
    claim(doc, "tensor busy time, step 8 and cuDNN", flat, "%.2f ms × %.1f%% = %.2f ms in step 8 and %.2f ms × %.1f%% = %.2f ms in cuDNN" % (
        metric("time (ms, ncu's clocks)", "fa3order128"), metric("tensor pipe busy (%)", "fa3order128"), busy("fa3order128"),
        metric("time (ms, ncu's clocks)", "cudnn128"), metric("tensor pipe busy (%)", "cudnn128"), busy("cudnn128")))
    claim(doc, "idle time, step 8 and cuDNN", flat, "Step 8's tensor cores idle %.2f ms, cuDNN's %.2f ms." % (
        idle("fa3order128"), idle("cudnn128")))
    claim(doc, "ncu's time, step 8 over cuDNN", flat, "under it step 8 takes %.2fx cuDNN's time at d = 128" % (
        metric("time (ms, ncu's clocks)", "fa3order128") / metric("time (ms, ncu's clocks)", "cudnn128")))
    claim(doc, "ncu's stalls, step 8 and cuDNN", flat, "`gmma` stall %.2f cycles an instruction against %.2f, `wait` %.2f against %.2f" % (
        metric("stall: gmma", "fa3order128"), metric("stall: gmma", "cudnn128"), metric("stall: wait", "fa3order128"), metric("stall: wait", "cudnn128")))
    claim(doc, "instructions, step 8 over cuDNN", flat, "Step 8 issues %.2fx cuDNN's instructions (%.2fx at d = 64)" % (
        metric("instructions (warp)", "fa3order128") / metric("instructions (warp)", "cudnn128"),
        metric("instructions (warp)", "fa3order64") / metric("instructions (warp)", "cudnn64")))
    claim(doc, "FP8's tensor time against fp16's", flat, "FP8's tensor pipe is busy %.1f%% of %.2f ms = %.2f ms, half of fp16's %.2f ms" % (
        metric("tensor pipe busy (%)", "fp8_128"), metric("time (ms, ncu's clocks)", "fp8_128"), busy("fp8_128"), busy("fa3order128")))
    xu = lambda kern: metric("time (ms, ncu's clocks)", kern) * metric("pipe issue: xu (%)", kern) / 100
    claim(doc, "FP8's xu time against fp16's", flat, "issues as long as in fp16 (%.2f ms against %.2f ms)" % (xu("fp8_128"), xu("fa3order128")))
    claim(doc, "the xu pipe at d = 64", flat, "%.2f ms × %.1f%% = %.2f ms in step 8 and %.2f ms in cuDNN, as long as the tensor pipe is busy (%.2f ms in each)" % (
        metric("time (ms, ncu's clocks)", "fa3order64"), metric("pipe issue: xu (%)", "fa3order64"), xu("fa3order64"), xu("cudnn64"), busy("fa3order64")))
    report(abs(busy("fa3order64") - busy("cudnn64")) < 0.005, "%s: the tensor pipe busy as long at d = 64 in step 8 and cuDNN" % doc)
    # N = 2048 (call 58) and step 10 after its bank conflicts went (call 59)
    n10 = os.path.join(H100, "phase4/phase4_ncu_hopper10_bbadc77.txt")
    ncu58, col58 = read_ncu(n10, 0)
    ncu59, col59 = read_ncu(n10, 1)
    m58 = lambda name, kern: float(ncu58[name][col58[kern]])
    m59 = lambda name, kern: float(ncu59[name][col59[kern]])
    t2k = lambda kern: m58("time (ms, ncu's clocks)", kern)
    busy2k = lambda kern: t2k(kern) * m58("tensor pipe busy (%)", kern) / 100
    claim(doc, "ncu at N = 2048", flat, "step 8 takes %.2fx cuDNN's time (%.3f ms against %.3f), its tensor pipe busy %.2f ms against %.2f and idle %.2f ms against %.2f; a grid of %d blocks is %.2f waves of 132 where cuDNN's %d blocks are one; `gmma` stall %.2f cycles against %.2f, `wait` %.2f against %.2f" % (
        t2k("fa3order2k") / t2k("cudnn2k"), t2k("fa3order2k"), t2k("cudnn2k"), busy2k("fa3order2k"), busy2k("cudnn2k"),
        t2k("fa3order2k") - busy2k("fa3order2k"), t2k("cudnn2k") - busy2k("cudnn2k"),
        int(m58("grid", "fa3order2k")), m58("waves / SM", "fa3order2k"), int(m58("grid", "cudnn2k")),
        m58("stall: gmma", "fa3order2k"), m58("stall: gmma", "cudnn2k"), m58("stall: wait", "fa3order2k"), m58("stall: wait", "cudnn2k")))
    e = lambda v: ("%.2e" % v).replace("e+0", "e")   # 1.05e6
    claim(doc, "ncu: step 10's bank conflicts, before and after", flat, "%s bank conflicts in %s shared-store wavefronts, every store two-way; with the permutation %d in %s" % (
        e(m58("shared st bank conflicts", "store128")), e(m58("shared st wavefronts", "store128")),
        int(m59("shared st bank conflicts", "store128")), e(m59("shared st wavefronts", "store128"))))
    claim(doc, "ncu: step 10 beside step 8", flat, "step 10 took %.3f ms against step 8's %.3f, `barrier` stall %.2f cycles an instruction against %.2f" % (
        m59("time (ms, ncu's clocks)", "store128"), m59("time (ms, ncu's clocks)", "fa3order128"),
        m59("stall: barrier", "store128"), m59("stall: barrier", "fa3order128")))
    claim(doc, "FP8: neither pipe full", flat, "Neither pipe is full (xu %.1f%%, tensor %.1f%%)" % (
        metric("pipe issue: xu (%)", "fp8_128"), metric("tensor pipe busy (%)", "fp8_128")))

    # the Bc table against the blocks_compare record
    rec = {}
    with open(os.path.join(H100, "phase4/phase4_blocks_450175c.txt")) as f:
        for line in f:
            m = re.match(r"(default|alt0)\s+(--B \d+ --H \d+ --d (\d+) --N (\d+)( --causal)?)\s+wgmma-ws .*? \d+x(\d+) [\d.]+ (\d+) ", line)
            if m:
                rec[(int(m.group(3)), int(m.group(4)), bool(m.group(5)), int(re.search(r"--B (\d+)", m.group(2)).group(1)), int(m.group(6)))] = float(m.group(7))
    got = table(text, "| shape | Bc = 64 | Bc = 128 |")
    cells = []
    for r in got or []:
        m = re.match(r"d = (\d+), B = (\d+), N = (\d+)(, causal)?", r[0])
        key = (int(m.group(1)), int(m.group(3)), bool(m.group(4)), int(m.group(2)))
        a, b = rec.get(key + (64,)), rec.get(key + (128,))
        cells += [(r[0] + " Bc=64", r[1], a), (r[0] + " Bc=128", r[2], b), (r[0] + " ratio", r[3], b / a if a and b else None)]
    check_table(doc, "Bc = 64 against 128", got, cells)
    chapter_4b_exp_budget(doc, text)

    # ptxas: the note and the spill the chapter quotes are in the recorded log
    with open(os.path.join(CPU, "phase4/phase4_ptxas_3a33da2.txt")) as f:
        ptx = f.read()
    part1, part2 = ptx.split("== part 2")
    report("C7520" in part1 and "fa2_wgmma_ws_kernelILi128ELb1ELi1ELi128E" in part1.split("C7520")[1].splitlines()[0],
           "%s: ptxas note C7520 on the d = 128 pingpong kernel is recorded" % doc)
    notes = [l for l in part1.splitlines() if "ILi128ELb1ELi0ELi128E" in l]   # step 3, d = 128
    report(any("C7519" in l for l in notes) and not any("C7520" in l for l in notes),
           "%s: step 3's kernel gets C7519 but not C7520, as the chapter says" % doc)
    with open(os.path.join(CPU, "phase4/phase4_ptxas_556bc50.txt")) as f:
        now = f.read()
    report("C7520" not in now and "fa2_wgmma_ws_kernelILi128ELb1ELi1ELi128E" in now and "phase4_ptxas_556bc50.txt" in text,
           "%s: with warpgroup_idx no kernel gets C7520 (the pingpong kernel among them), as recorded" % doc)
    m = re.search(r"fa2_wgmma_ws_kernelILi128ELb1ELi2ELi128EEv6WgArgs\n\s+\d+ bytes stack frame, (\d+) bytes spill stores", part2)
    report(m is not None and "ptxas spills %s bytes" % m.group(1) in text.replace("\n", " "),
           "%s: step 5 at Bc = 128 spills as recorded" % doc)


# ---- chapter 5: the backward's CPU records, the GPU run, sweep, peers and profiles --------
def chapter_5():
    doc = "05_backward.md"
    text = chapter(doc)
    flat = " ".join(text.split())
    run = {r["kernel"]: r for r in rows(os.path.join(CPU, "phase5/phase5.csv"))}
    got = table(text.replace("```\nkernel        device", "| kernel        device"), "| kernel        device")
    # the CPU rows are printed as a fixed-width block: compare max abs, rel L2, vs prev
    block = re.search(r"```\nkernel +device +problem +Br x Bc +M +HBM model.*?\n(.*?)```", text, re.S)
    cells = []
    if block:
        for line in block.group(1).splitlines():
            f = line.split()
            if f and f[0] in run and f[0] != "worked-4x2":
                r = run[f[0]]
                vals = [v for v in f if re.match(r"^[\d.]+e[-+]\d+$", v)]
                for v, col in zip(vals, ["max_abs", "rel_l2", "rel_prev"]):
                    cells.append((f[0] + " " + col, v, float(r[col])))
    check_table(doc, "CPU rows", block, cells)
    for k, b in (("std-bwd", "hbm_model"), ("std-bwd-fp32", "hbm_model"), ("fa2-bwd", "hbm_model")):
        claim(doc, "bytes of " + k, flat, "{:,}".format(int(run[k][b])))
    claim(doc, "fa2 fewer bytes than std", flat, "%.1fx fewer than `std-bwd`" % (float(run["std-bwd"]["hbm_model"]) / float(run["fa2-bwd"]["hbm_model"])))
    with open(os.path.join(CPU, "phase5/phase5_sweep.txt")) as f:
        wall = [l for l in f if "memory wall" in l][0]
    m = re.search(r"([\d.]+) GB at N = (\d+), [\d.]+ GB at N = (\d+).*?: ([\d.]+) GB of", wall)
    claim(doc, "memory wall", flat, "which is %s GB at N = %s and passes 80 GB from **N = %s** on" % (m.group(1), m.group(2), m.group(3)))
    claim(doc, "FA2's backward at the wall", flat, "at that N and d = 64 its tensors (Q, K, V, dO in fp16; O, dQ, dK, dV, L, D in fp32) are %s GB" % m.group(4))
    sw = rows(os.path.join(CPU, "phase5/phase5_sweep.csv"))
    hb = {}
    for r in sw:
        kind = "std" if r["kernel"].startswith("std") and "fp32" not in r["kernel"] else ("fa2" if r["kernel"].startswith("fa2") else None)
        if kind and r["d"] == "64":
            hb[(kind, int(r["causal"]), int(r["N_q"]))] = float(r["hbm_model"] or r["hbm_formula"])
    got = table(text, "| N | standard (fp16) | FA2 | ratio |")
    cells = []
    for r in got or []:
        n = int(r[0])
        st, f0, f1 = hb.get(("std", 0, n)), hb.get(("fa2", 0, n)), hb.get(("fa2", 1, n))
        cells += [("N=%d std" % n, r[1], st), ("N=%d fa2" % n, r[2], f0), ("N=%d ratio" % n, r[3], st / f0),
                  ("N=%d fa2 causal" % n, r[4], f1), ("N=%d causal ratio" % n, r[5], st / f1)]
    check_table(doc, "bytes vs N", got, cells)

    # the GPU default run
    g = {r["kernel"]: r for r in rows(os.path.join(H100, "phase5/phase5_run_23d688f.csv")) if r["device"] == "gpu"}
    block = re.search(r"```\nkernel +device +problem +Br x Bc +time ms.*?\n(.*?)```", text, re.S)
    cells = []
    for line in (block.group(1).splitlines() if block else []):
        f = line.split()
        if f and f[0] in g:
            r = g[f[0]]
            at = next(i for i, v in enumerate(f) if re.match(r"^d\d+$", v)) + 1
            at += 1 if f[at] == "causal" else 0
            cells += [(f[0] + " ms", f[at + 1], float(r["time_ms"])), (f[0] + " TFLOP/s", f[at + 2], float(r["tflops"]))]
            errs = [v for v in f if re.match(r"^[\d.]+e[-+]\d+$", v)]
            for v, col in zip(errs, ["max_abs", "rel_l2", "rel_prev"]):
                cells.append((f[0] + " " + col, v, float(r[col])))
    check_table(doc, "GPU default run", block, cells)
    flop = float(g["std"]["time_ms"]) * float(g["std"]["tflops"]) * 1e-3 * 1e3   # ms x TFLOP/s = GFLOP
    claim(doc, "the default problem's GFLOP", flat, "tiny (%.2f GFLOP)" % flop)

    # the sweep and its peers
    T = {(r["kernel"], int(r["d"]), int(r["causal"]), int(r["N_q"])): r
         for r in rows(os.path.join(H100, "phase5/phase5_sweep_23d688f.csv")) if r["device"] == "gpu" and r["sweep"] == "tokens16k"}
    P = {(r["backend"], int(r["d"]), int(r["causal"]), int(r["N"])): float(r["tflops"])
         for r in rows(os.path.join(H100, "phase5/phase5_peers_af6fd4e.csv"))}
    F = {(r["backend"], int(r["d"]), int(r["causal"]), int(r["N"])): float(r["tflops"])
         for r in rows(os.path.join(H100, "phase5/phase5_peers_fwdbwd_af6fd4e.csv"))}
    tf = lambda k, p: float(T[(k,) + p]["tflops"])
    got = table(text, "| d | causal | N | std | mma | two-pass |")
    cells = []
    for r in got or []:
        p = (int(r[0]), 1 if r[1] == "yes" else 0, int(r[2]))
        lab = "d=%d causal=%d N=%d" % p
        for i, k in enumerate(["std", "mma", "two-pass"]):
            cells.append((lab + " " + k, r[3 + i], tf(k, p)))
        cells += [(lab + " flash", r[6], P[("flash",) + p]), (lab + " cudnn", r[7], P[("cudnn",) + p]),
                  (lab + " mma/flash", r[8], tf("mma", p) / P[("flash",) + p]), (lab + " mma/std", r[9], tf("mma", p) / tf("std", p))]
    check_table(doc, "backward sweep", got, cells)
    pts = [(d, c, n) for d in (64, 128) for c in (0, 1) for n in (512, 1024, 2048, 4096, 8192, 16384)]
    for n in (512, 1024, 16384):
        claim(doc, "mma over FA2 at N = %d" % n, flat, span([tf("mma", p) / P[("flash",) + p] for p in pts if p[2] == n]))
    claim(doc, "mma over std", flat, span([tf("mma", p) / tf("std", p) for p in pts]))
    claim(doc, "two-pass over mma", flat, span([tf("two-pass", p) / tf("mma", p) for p in pts]))
    a, b = T[("mma", 64, 1, 16384)], T[("noskip", 64, 1, 16384)]
    claim(doc, "the causal skip", flat, "worth %.2fx (d = 64: %.2f ms vs %.2f ms" % (float(b["time_ms"]) / float(a["time_ms"]), float(a["time_ms"]), float(b["time_ms"])))
    s = T[("std", 128, 0, 4096)]
    claim(doc, "std's bytes and time", flat, "moves %.1f GiB in %.2f ms, about %.1f TB/s" % (
        float(s["hbm_model"]) / 2 ** 30, float(s["time_ms"]), float(s["hbm_model"]) / float(s["time_ms"]) / 1e9))
    p1, p2 = (64, 0, 4096), (128, 1, 4096)
    claim(doc, "forward + backward", flat, "It reaches %.1f TFLOP/s at d = 64, N = 4096, non-causal, and %.1f at d = 128 causal, %.2fx and %.2fx" % (
        tf("fwd-bwd", p1), tf("fwd-bwd", p2), tf("fwd-bwd", p1) / F[("flash",) + p1], tf("fwd-bwd", p2) / F[("flash",) + p2]))

    # Nsight Compute against the recorded table
    ncu, cols = read_ncu(os.path.join(H100, "phase5/phase5_ncu_afbaa25.txt"))
    order = ["ours_bwd128", "fa2_bwd128", "ours_bwd64", "fa2_bwd64"]
    rowmap = {"time": ("time (ms, ncu's clocks)", 1), "tensor pipe busy": ("tensor pipe busy (%)", 1),
              "L1 / shared memory busy": ("L1/shared busy (%)", 1), "DRAM busy": ("DRAM busy (%)", 1),
              "shared-memory load wavefronts": ("shared ld wavefronts", 1e9), "ldmatrix instructions": ("ldmatrix instructions", 1e6),
              "warp instructions": ("instructions (warp)", 1e9), "stall at a barrier (cycles per issued instr.)": ("stall: barrier", 1)}
    got = table(text, "| | mma, d = 128 | FA2, d = 128 |")
    cells = []
    for r in got or []:
        if r[0] in rowmap:
            name, unit = rowmap[r[0]]
            for i, kern in enumerate(order):
                cell = re.sub(r"\s*(ms|%|G|M)$", "", r[1 + i])
                cells.append((r[0] + " " + kern, cell, float(ncu[name][cols[kern]]) / unit))
    check_table(doc, "Nsight Compute beside FA2", got, cells)
    with open(os.path.join(H100, "phase5/phase5_probe_050c1b7.txt")) as f:
        probe = f.read()
    m = re.search(r"a rerun changed (\d+) of the gradient elements", probe)
    claim(doc, "determinism probe", flat, "changed {:,} gradient elements".format(int(m.group(1))))
    chapter_5_mma2d_wgmma(doc, text, flat)
    chapter_5_training(doc, flat)


def chapter_5_training(doc, flat):
    """the training checks of record: loss scaled (the default; 4bb1ec4) and unscaled (845f2c3):
    their per-step losses, summaries and headers"""
    base = os.path.join(H100, "train/train_check")

    def record(c):
        summ = rows(base + "_summary_%s.csv" % c)
        mean = {i: [float(r["mean_loss"]) for r in summ if r["impl"] == i] for i in ("ours", "sdpa")}
        held = {i: [float(r["heldout_loss"]) for r in summ if r["impl"] == i] for i in ("ours", "sdpa")}
        steps = rows(base + "_%s.csv" % c)
        first = {k: next(int(r["step"]) for r in steps if float(r[k]) < 0.1) for k in steps[0] if k != "step"}
        below = {i: [v for k, v in first.items() if k.startswith(i)] for i in ("ours", "sdpa")}
        with open(base + "_summary_%s.csv" % c) as f:
            head = f.read()
        return summ, mean, held, below, head

    avg = lambda v: sum(v) / len(v)   # noqa: E731
    summ, mean, held, below, head = record("4bb1ec4")
    claim(doc, "every run learned", flat, "held-out token accuracy %.4f" % min(float(r["token_acc"]) for r in summ))
    m = re.search(r"worst rel L2 ([\d.e+-]+) <", head)
    claim(doc, "gradient check", flat, "worst relative L2 %s" % m.group(1))
    v = below["ours"] + below["sdpa"]
    claim(doc, "both below 0.1 at", flat, "both drop below a loss of 0.1 at steps %d-%d" % (min(v), max(v)))
    # the differences as the check computed them (the CSV's 6 digits round them to 0): its verdict
    mt = re.search(r"mean training loss: \|mean ours - mean SDPA\| ([\d.e+-]+) <= ([\d.e+-]+)", head)
    ho = re.search(r"held-out loss: \|mean ours - mean SDPA\| ([\d.e+-]+) <= ([\d.e+-]+)", head)
    claim(doc, "mean training loss, ours vs SDPA", flat, "differs from SDPA's by %.1e" % float(mt.group(1)))
    claim(doc, "SDPA's seed spread", flat, "spread over its seeds of %.4f (%.3f-%.3f)" % (float(mt.group(2)), min(mean["sdpa"]), max(mean["sdpa"])))
    claim(doc, "held-out losses", flat, "by %.1e against a spread of %s" % (float(ho.group(1)), ho.group(2)))
    claim(doc, "the verdict", flat, "The check PASSes")
    report("verdict: PASS" in head, "%s: the loss-scaled record's verdict is PASS" % doc, "its header says otherwise")

    summ, mean, held, below, head = record("845f2c3")   # unscaled: the lesson
    claim(doc, "unscaled: ours' mean training loss", flat, "mean training loss, %.3f," % avg(mean["ours"]))
    claim(doc, "unscaled: SDPA's spread", flat, "SDPA's spread (%.3f-%.3f)" % (min(mean["sdpa"]), max(mean["sdpa"])))
    for i in ("ours", "sdpa"):
        claim(doc, "unscaled: %s below 0.1 at" % i, flat, "at steps %d-%d" % (min(below[i]), max(below[i])))
    info = dict((t, (float(a), float(b))) for t, a, b in re.findall(r"(d[QKV]) ours ([\d.e+-]+) SDPA ([\d.e+-]+) vs fp32", head))
    claim(doc, "SDPA's errors with the loss's dO", flat, "off by a relative L2 of %.2f, %.2f and %.2g" % (info["dQ"][1], info["dK"][1], info["dV"][1]))
    claim(doc, "ours' errors with the loss's dO", flat, "by %.2f, %.2f and %.2g" % (info["dQ"][0], info["dK"][0], info["dV"][0]))


def chapter_5b():
    """the Hopper backward's steps beside SDPA flash and cuDNN, from the sweep of record"""
    doc = "05b_hopper_backward.md"
    text = chapter(doc)
    flat = " ".join(text.split())
    ms, tf, _ = backward_records()
    steps = ("wgmma", "wgmma-dq", "wgmma-ws", "wgmma-det", "flash", "cudnn")
    got = table(text, "| d | causal | N | wgmma | wgmma-dq | wgmma-ws | wgmma-det |")
    cells = []
    for r in got or []:
        p = (int(r[0]), int(r[1] == "yes"), int(r[2]))
        lab = "d=%d %s N=%d" % (p[0], r[1], p[2])
        for i, k in enumerate(steps):
            cells.append((lab + " " + k, r[3 + i], tf.get((k,) + p)))
        w = ms.get(("wgmma-ws",) + p)
        cells.append((lab + " ws/flash", r[9], None if w is None else ms[("flash",) + p] / w))
        cells.append((lab + " ws/cudnn", r[10], None if w is None else ms[("cudnn",) + p] / w))
    check_table(doc, "the Hopper steps beside SDPA flash and cuDNN", got, cells)

    def over(num, den, d, n_min=4096):   # min-max of time ratios num/den over the sweep's points
        return [ms[(num,) + k[1:]] / t for k, t in ms.items() if k[0] == den and k[1] in d and k[3] >= n_min]
    claim(doc, "step 3 over FA2 at d = 128", flat, "step 3 runs at %s FlashAttention-2's speed from N = 4096" % span(over("flash", "wgmma-ws", (128,))))
    claim(doc, "step 3 against cuDNN at d = 128", flat, "and at %s cuDNN's" % span(over("cudnn", "wgmma-ws", (128,))))
    claim(doc, "step 3's TFLOP/s at d = 128", flat, "(%s TFLOP/s)" % span([tf[k] for k in tf if k[0] == "wgmma-ws" and k[1] == 128 and k[3] >= 4096], 1, ""))
    claim(doc, "step 3 over step 1 at d = 128", flat, "step 3 is %s step 1's speed" % span(over("wgmma", "wgmma-ws", (128,))))
    claim(doc, "step 4's cost", flat, "costs %s of step 3's speed" % span(over("wgmma-ws", "wgmma-det", (64, 128))))
    claim(doc, "step 2 against step 1", flat, "%s of its speed from N = 4096 on" % span(over("wgmma", "wgmma-dq", (64, 128))))
    claim(doc, "step 3 over FA2 at d = 64", flat, "step 3 is %s FA2's speed" % span(over("flash", "wgmma-ws", (64,))))
    claim(doc, "step 3 against cuDNN at d = 64", flat, "and %s cuDNN's" % span(over("cudnn", "wgmma-ws", (64,))))
    flex, same = {}, {}   # FlexAttention's runs, and the wgmma-ws rows timed in the same calls
    for f in ("flex_bwd_d8f10b0.csv", "flex_bwd64_61d628e.csv"):
        flex.update({(int(r["B"]), int(r["H"]), int(r["N"]), int(r["d"]), int(r["causal"])): float(r["tflops"])
                     for r in rows(os.path.join(H100, "phase5", f)) if r["tflops"]})
    for f in ("phase5_ws8192_d8f10b0.csv", "phase5_ws64_61d628e.csv"):
        same.update({(int(r["B"]), int(r["H"]), int(r["N_q"]), int(r["d"]), int(r["causal"])): float(r["tflops"])
                     for r in rows(os.path.join(H100, "phase5", f)) if r["kernel"] == "wgmma-ws"})
    got = table(text, "| B | H | N | d | causal | FlexAttention |")
    cells, ratios = [], []
    for r in got or []:
        k = tuple(int(r[i]) for i in range(4)) + (int(r[4] == "yes"),)
        ours = same.get(k) if "same run" in r[6] else tf.get(("wgmma-ws", k[3], k[4], k[2]))
        lab = "B=%d H=%d N=%d d=%d causal=%d" % k
        cells += [(lab + " flex", r[5], flex.get(k)), (lab + " wgmma-ws", r[6].split()[0], ours),
                  (lab + " ratio", r[7], None if ours is None or k not in flex else ours / flex[k])]
        if k[3] == 128 and ours and k in flex:
            ratios.append(ours / flex[k])
    check_table(doc, "step 3 beside FlexAttention", got, cells)
    claim(doc, "step 3 over FlexAttention at d = 128", flat, "At d = 128 step 3 is %s FlexAttention's backward" % span(ratios))
    with open(os.path.join(ROOT, "README.md")) as f:
        readme_flat = " ".join(f.read().split())
    claim("README.md", "chapter 5b's step 3 over FA2 and against cuDNN at d = 128", readme_flat,
          "%s FA2's backward and %s cuDNN's" % (span(over("flash", "wgmma-ws", (128,))), span(over("cudnn", "wgmma-ws", (128,)))))


def backward_records():
    """phase 5's measured backward: the sweep of record (every kernel, 24 GPU points, one run)
    and SDPA's peers from the same call. Returns ({key: ms}, {key: TFLOP/s}, {key: ms} of our
    kernels alone); key = (kernel or peer backend, d, causal, N)."""
    ms, tf = {}, {}
    for r in rows(os.path.join(H100, "phase5/phase5_sweep_61d628e.csv")):
        if r["sweep"] == "tokens16k" and r["device"] == "gpu" and r["time_ms"]:
            key = (r["kernel"], int(r["d"]), int(r["causal"]), int(r["N_q"]))
            ms[key], tf[key] = float(r["time_ms"]), float(r["tflops"])
    sweep = dict(ms)
    for r in rows(os.path.join(H100, "phase5/phase5_peers_61d628e.csv")):
        if r["time_ms"]:
            key = (r["backend"], int(r["d"]), int(r["causal"]), int(r["N"]))
            ms[key], tf[key] = float(r["time_ms"]), float(r["tflops"])
    return ms, tf, sweep


def chapter_5_mma2d_wgmma(doc, text, flat):
    """FA2's warp layout and FA3's backward on Hopper: ratios of times to SDPA flash and cuDNN"""
    T, tf, sweep_only = backward_records()   # times of our kernels and the peers alike
    got = table(text, "| d | causal | N | mma / FA2 | mma2d / FA2 | wgmma-ws / FA2 |")
    cells = []
    for r in got or []:
        p = (int(r[0]), int(r[1] == "yes"), int(r[2]))
        lab = "d=%d %s N=%d" % (p[0], r[1], p[2])
        for i, (k, peer) in enumerate((("mma", "flash"), ("mma2d", "flash"), ("wgmma-ws", "flash"), ("wgmma-ws", "cudnn"))):
            t = T.get((k,) + p)
            cells.append((lab + " " + k + "/" + peer, r[3 + i], None if t is None else T[(peer,) + p] / t))
        cells.append((lab + " wgmma-ws TFLOP/s", r[7], tf.get(("wgmma-ws",) + p)))
    check_table(doc, "mma2d and wgmma-ws beside FA2 and cuDNN", got, cells)
    for d in (64, 128):
        r = [sweep_only[("mma",) + p[1:]] / t for p, t in sweep_only.items() if p[0] == "mma2d" and p[1] == d]
        claim(doc, "mma2d over mma at d = %d" % d, flat, span(r) + (" as fast as `mma`" if d == 128 else "") + " at d = %d" % d)
    r = [T[("flash",) + p[1:]] / t for p, t in T.items() if p[0] == "mma2d" and p[1] == 64 and p[3] >= 4096]
    claim(doc, "mma2d against FA2 at d = 64", flat, "(%s at d = 64 from N = 4096 on)" % span(r))
    r = [T[("flash",) + p[1:]] / t for p, t in T.items() if p[0] == "wgmma-ws" and p[1] == 128]
    claim(doc, "wgmma-ws over FA2 at d = 128", flat, "at d = 128 %s FA2's speed at every N measured" % span(r))
    r = [T[("cudnn",) + p[1:]] / t for p, t in T.items() if p[0] == "wgmma-ws" and p[1] == 128 and p[3] >= 2048]
    claim(doc, "wgmma-ws against cuDNN at d = 128", flat, "at %s of cuDNN's from N = 2048 on" % span(r))
    r = [T[("mma2d",) + p[1:]] / t for p, t in T.items() if p[0] == "wgmma-ws" and p[1] == 64]
    claim(doc, "wgmma-ws over mma2d at d = 64", flat, "at d = 64 %s `mma2d`'s speed" % span(r))
    m = {(r["B"], r["N_q"], r["causal"]): r for r in rows(os.path.join(H100, "phase5/phase5_d256_371246f.csv"))}
    fl = {(r["B"], r["N"], r["causal"]): float(r["time_ms"]) for r in rows(os.path.join(H100, "phase5/phase5_d256_peers_371246f.csv"))
          if r["backend"] == "flash"}
    claim(doc, "mma2d at d = 256", flat, "runs at %s TFLOP/s, %s FA2's backward" % (
        span([float(r["tflops"]) for r in m.values()], 1, ""), span([fl[k] / float(r["time_ms"]) for k, r in m.items()])))


# ---- chapter 6: the decode CPU records, the sweep of record and its peers, the profiles ----
def chapter_6():
    doc = "06_decoding.md"
    text = chapter(doc)

    # FlashDecoding++'s CPU row: the printed line and the numbers beside it, from the recorded run
    fd = {r["kernel"]: r for r in rows(os.path.join(CPU, "phase6/phase6_fdpp_2c9fb9e.csv"))}
    with open(os.path.join(CPU, "phase6/phase6_run_fdpp_2c9fb9e.txt")) as fh:
        note = next((line.strip() for line in fh if line.startswith("fdpp-S4: phi")), "")
    claim("06_decoding.md", "FD++'s printed line", text, note or "(no fdpp line in the recorded run)")
    claim("06_decoding.md", "FD++'s bytes, split-S4's", text, "{:,}".format(int(fd["fdpp-S4"]["hbm_model"])) + " bytes")
    report(fd["fdpp-S4"]["hbm_model"] == fd["split-S4"]["hbm_model"], "06_decoding.md: FD++ moved split-S4's bytes (no row recomputed)")
    claim("06_decoding.md", "FD++'s max abs", " ".join(text.split()), "max abs error %s on O" % fd["fdpp-S4"]["max_abs"])
    claim("06_decoding.md", "split-S4's max abs", text, "(`split-S4`: %s)" % fd["split-S4"]["max_abs"])
    flat = " ".join(text.split())
    cpu = {r["kernel"]: r for r in rows(os.path.join(CPU, "phase6/phase6.csv"))}
    got = table(text, "| row | HBM bytes | over S = 1 |")
    cells = []
    names = {"phase 4's FA2 model": "fa2-model", "split S = 1": "split-S1", "split S = 2": "split-S2",
             "split S = 8": "split-S8", "split S = 32": "split-S32"}
    base = float(cpu["split-S1"]["hbm_model"])
    for r in got or []:
        b = float(cpu[names[r[0]]]["hbm_model"])
        cells.append((r[0], r[1], b))
        m = re.match(r"\+(\d+) \(\+([\d.]+)%\)", r[2])
        if m:
            cells += [(r[0] + " extra", m.group(1), b - base), (r[0] + " %", m.group(2), 100 * (b - base) / base)]
    check_table(doc, "CPU bytes vs S", got, cells)
    claim(doc, "CPU rows' largest max abs", flat, "at most %.2e" % max(float(r["max_abs"]) for r in cpu.values() if r["max_abs"]))
    pct = {}
    with open(os.path.join(CPU, "phase6/phase6_sweep.txt")) as f:
        for line in f:
            m = re.match(r"\s*sweep vsL L=\s*(\d+)\s+fa2 \d+\s+S=1 .*?S=8 \d+ \(\w+, \+([\d.]+)%\)\s+S=32 \d+ \(\w+, \+([\d.]+)%\)", line)
            if m:
                pct[int(m.group(1))] = (m.group(2), m.group(3))
    claim(doc, "extra bytes over L", flat, "at S = 8 the extra bytes are %s%% of FA2's at L = 1024, %s%% at 4096 and %s%% at 262144; at S = 32, %s%%, %s%% and %s%%" % (
        pct[1024][0], pct[4096][0], pct[262144][0], pct[1024][1], pct[4096][1], pct[262144][1]))

    R6 = os.path.join(H100, "phase6")
    sw = rows(os.path.join(R6, "phase6_sweep_49f3d94.csv"))
    gpu = [r for r in sw if r["device"] == "gpu"]
    G, NQ = {}, {}
    for r in gpu:
        k, _, S = r["kernel"].rpartition("-S") if "-S" in r["kernel"] else (r["kernel"], "", "")
        v = (float(r["time_ms"]) * 1e3, S, float(r["gbps"]), float(r["hbm_model"]))
        if r["sweep"] == "vsL":
            G[(k, int(r["B"]), int(r["H_kv"]), int(r["N_kv"]))] = v
        elif r["sweep"] == "vsNq":
            NQ[(k, int(r["B"]), int(r["N_q"]))] = v
    Pall = {}
    for r in rows(os.path.join(R6, "phase6_peers_49f3d94.csv")):   # a shape timed twice (vsL's and vsNq's): its faster time
        k = (r["backend"], int(r["B"]), int(r["H_kv"]), int(r["N_q"]), int(r["N_kv"]))
        Pall[k] = min(Pall.get(k, float("inf")), float(r["time_ms"]) * 1e3)
    P = {(b, B, h, L): t for (b, B, h, nq, L), t in Pall.items() if nq == 1}
    with open(os.path.join(R6, "phase6_sweep_49f3d94.csv")) as f:
        copy = float(re.search(r"copy_gbps: ([\d.]+)", f.read()).group(1))
    claim(doc, "copy bandwidth", flat, "the copy bandwidth measured in the same run, %.0f GB/s" % copy)

    def ours(B, hkv, L):   # the chapter's final kernel at one token: fused
        return G[("fused", B, hkv, L)]

    def pack(B, hkv, L):
        return G[("split-pack", B, hkv, L)]

    def vs_best(key):
        return min(P[("flash",) + key], P[("cudnn",) + key]) / ours(*key)[0]

    got = table(text, "| B, heads | L | fa2-mma | split-pack (S) | fused |")
    cells = []
    for r in got or []:
        B = int(r[0].split(",")[0])
        hkv = 32 if "MHA" in r[0] else 8
        key = (B, hkv, int(r[1]))
        t, S, gb, _ = ours(*key)
        lab = "%s L=%s" % (r[0], r[1])
        m = re.match(r"([\d.]+) \((\d+)\)", r[3])
        g = re.match(r"(\d+) \((\d+)%\)", r[5])
        cells += [(lab + " fa2-mma", r[2], G[("fa2-mma",) + key][0]), (lab + " split-pack", m.group(1), pack(*key)[0]),
                  (lab + " S", m.group(2), float(pack(*key)[1])), (lab + " fused S", m.group(2), float(S)), (lab + " fused", r[4], t),
                  (lab + " GB/s", g.group(1), gb), (lab + " % of copy", g.group(2), 100 * gb / copy),
                  (lab + " flash", r[6], P[("flash",) + key]), (lab + " cudnn", r[7], P[("cudnn",) + key]),
                  (lab + " vs best", r[8], vs_best(key)), (lab + " vs fa2", r[9], G[("fa2-mma",) + key][0] / t)]
    check_table(doc, "decode sweep beside SDPA", got, cells)
    Ls = sorted(set(k[3] for k in G))
    keys = [(B, h, L) for B in (1, 8) for h in (32, 8) for L in Ls]
    longk = [k for k in keys if k[2] >= 16384]
    nqv = [min(Pall[("flash", B, 8, n, 16384)], Pall[("cudnn", B, 8, n, 16384)]) / NQ[("fused", B, n)][0] for B in (1, 8) for n in (2, 4, 8, 16)]
    claim(doc, "vs best over every point", flat, "from %.2f to %.2f in this run; from L = 16384 on, %s, below 1 at %d of %d points" % (
        min(map(vs_best, keys)), max(map(vs_best, keys)), span([vs_best(k) for k in longk], unit=""),
        sum(vs_best(k) < 1 for k in longk), len(longk)))
    claim(doc, "with several tokens", flat, "With two or more query tokens (the table above) ours is %s the faster of them" % span(nqv))
    lead = max(1 / vs_best(k) for k in longk)
    claim(doc, "the peers' lead at one token", flat, "keeps a lead of up to %.0f%%" % (100 * (lead - 1)))
    fa2 = lambda key: G[("fa2-mma",) + key][0] / ours(*key)[0]
    claim(doc, "MHA gain at B = 1", flat, "the MHA gain is %.2fx at L = 65536 and %.2fx at 262144" % (fa2((1, 32, 65536)), fa2((1, 32, 262144))))
    claim(doc, "GQA gain at B = 1", flat, "With GQA the gain is %.2fx at 16k and %.2fx at 256k" % (fa2((1, 8, 16384)), fa2((1, 8, 262144))))
    claim(doc, "fa2-mma's GB/s at B = 1", flat, "at %.0f-%.0f GB/s" % (min(G[("fa2-mma", 1, h, L)][2] for h in (32, 8) for L in Ls), max(G[("fa2-mma", 1, h, L)][2] for h in (32, 8) for L in Ls)))
    claim(doc, "B = 8 share of copy", flat, "At B = 8 ours moves up to %.0f%% of the copy bandwidth" % (
        max(100 * ours(8, h, L)[2] / copy for h in (32, 8) for L in Ls)))
    # the peers' spread over the six calls that timed this chapter's kernels
    CALLS = ("3def1ff", "14dd621", "cb63234", "ad8981e", "b05d766", "49f3d94")
    spread = {}
    for c in CALLS:
        for r in rows(os.path.join(R6, "phase6_peers_%s.csv" % c)):
            spread.setdefault((r["backend"], int(r["B"]), int(r["H_kv"]), int(r["N_q"]), int(r["N_kv"])), []).append(float(r["time_ms"]) * 1e3)
    k1 = ("cudnn", 1, 32, 1, 65536)
    lo = sorted(t for t in spread[k1] if t < 400)   # cuDNN's two levels there
    hi = sorted(t for t in spread[k1] if t >= 400)
    mine = [float(r["time_ms"]) * 1e3 for c in CALLS[3:]   # the same kernel at N_q = 1, the same S
            for r in rows(os.path.join(R6, "phase6_sweep_%s.csv" % c)) if r["device"] == "gpu" and r["sweep"] == "vsL" and r["kernel"] == "split-pack-S8"
            and r["B"] == "1" and r["H_kv"] == "32" and r["N_kv"] == "65536"]
    claim(doc, "the peers' spread", flat, "took one of two levels: %.1f-%.1f us in %s calls and %.1f-%.1f us in %s. `split-pack` there, at the same S = 8 in the last three calls, took %.1f, %.1f and %.1f us" % (
        lo[0], lo[-1], {4: "four", 3: "three", 2: "two"}.get(len(lo), len(lo)), hi[0], hi[-1], {4: "four", 3: "three", 2: "two"}.get(len(hi), len(hi)), *mine))
    claim(doc, "how far one call flatters", flat, "can flatter ours by up to %.0f%%" % (100 * (hi[-1] / lo[0] - 1)))
    strict = [min(min(spread[("flash", B, h, 1, L)]), min(spread[("cudnn", B, h, 1, L)])) / ours(B, h, L)[0] for B, h, L in longk]
    claim(doc, "against the peers' fastest", flat, "`fused` is %s from L = 16384 on" % span(strict))

    # fused beside split-pack, and its limit (the first GPU run fused every tile)
    fr = lambda B, h, L: ours(B, h, L)[0] / pack(B, h, L)[0]
    claim(doc, "fused at B = 1 GQA, short", flat, "`fused` takes %s `split-pack`'s time at B = 1 with GQA up to L = 16384 (where `split-pack`'s step takes %.1f-%.1f us), %.2fx at 32768 and %s from L = 65536 on; at B = 1 MHA, %s" % (
        span([fr(1, 8, L) for L in Ls if L <= 16384]), min(pack(1, 8, L)[0] for L in Ls if L <= 16384), max(pack(1, 8, L)[0] for L in Ls if L <= 16384),
        fr(1, 8, 32768), span([fr(1, 8, L) for L in Ls if L >= 65536]), span([fr(1, 32, L) for L in Ls])))
    report(all(abs(fr(8, 32, L) - 1) < 0.005 for L in Ls), "%s: at B = 8 MHA fused and split-pack time the same (within 0.5%%)" % doc)
    first = {(re.sub(r"-S\d+$", "", r["kernel"]), int(r["B"]), int(r["N_q"])): float(r["time_ms"])
             for r in rows(os.path.join(R6, "phase6_sweep_b05d766.csv")) if r["device"] == "gpu" and r["sweep"] == "vsNq"}
    fq = lambda B, n: first[("fused", B, n)] / first[("split-pack", B, n)]
    claim(doc, "fusing every tile", flat, "took %s `split-pack`'s time with 4 or 8 rows a tile, %s with 16, and %s with 32 or 64" % (
        span([fq(B, n) for B in (1, 8) for n in (1, 2)]), span([fq(B, 4) for B in (1, 8)]), span([fq(B, n) for B in (1, 8) for n in (8, 16)])))
    # 8 warps, 128-key tiles, beside the default build in one call
    w8 = {(re.sub(r"-S\d+$", "", r["kernel"]), int(r["B"]), int(r["H_kv"]), int(r["N_kv"])): float(r["time_ms"])
          for r in rows(os.path.join(R6, "phase6_sweep_w8_b05d766.csv")) if r["device"] == "gpu" and r["sweep"] == "vsL"}
    w4 = {(re.sub(r"-S\d+$", "", r["kernel"]), int(r["B"]), int(r["H_kv"]), int(r["N_kv"])): float(r["time_ms"])
          for r in rows(os.path.join(R6, "phase6_sweep_b05d766.csv")) if r["device"] == "gpu" and r["sweep"] == "vsL"}
    wr = lambda k, grp: [w8[x] / w4[x] for x in w4 if x[0] == k and x[3] >= 16384 and grp(x[1], x[2])]
    claim(doc, "8 warps", flat, "it took %s `split-pack`'s time at B = 1 with GQA, %s on the other three row groups, and %s `fused`'s time" % (
        span(wr("split-pack", lambda B, h: (B, h) == (1, 8))), span(wr("split-pack", lambda B, h: (B, h) != (1, 8))), span(wr("fused", lambda B, h: True))))
    a, b = G[("split", 8, 8, 65536)], G[("split-pack", 8, 8, 65536)]
    claim(doc, "packing at B = 8", flat, "split %.1f us (%.0f \"GB/s\"), split-pack %.1f us (%.0f GB/s, %.0f%% of the copy bandwidth): packing bought %.2fx" % (
        a[0], a[2], b[0], b[2], 100 * b[2] / copy, a[0] / b[0]))
    a, b = G[("split", 1, 8, 65536)], G[("split-pack", 1, 8, 65536)]
    claim(doc, "packed bytes at L = 65536", flat, "by %.2fx at L = 65536" % (a[3] / b[3]))
    run = {r["kernel"]: r for r in rows(os.path.join(R6, "phase6_run_23d688f.csv")) if r["device"] == "gpu"}
    claim(doc, "packed bytes, default problem", flat, "drop by %.2fx on the default problem" % (float(run["split"]["hbm_model"]) / float(run["split-pack"]["hbm_model"])))

    # FlashDecoding++ beside split-pack at every point of the sweep
    got = table(text, "| B, heads | L | split-pack (S) | fdpp |")
    cells = []
    for r in got or []:
        B = int(r[0].split(",")[0])
        key = (B, 32 if "MHA" in r[0] else 8, int(r[1]))
        t, S, _, _ = pack(*key)
        f = G[("fdpp",) + key][0]
        m = re.match(r"([\d.]+) \((\d+)\)", r[2])
        cells += [(r[0] + " L=" + r[1] + " pack", m.group(1), t), (r[0] + " L=" + r[1] + " S", m.group(2), float(S)),
                  (r[0] + " L=" + r[1] + " fdpp", r[3], f), (r[0] + " L=" + r[1] + " ratio", r[4], f / t)]
    check_table(doc, "fdpp beside split-pack", got, cells)
    ratio = [G[("fdpp",) + k[1:]][0] / v[0] for k, v in G.items() if k[0] == "split-pack"]
    ratio16 = [x for k, v in G.items() if k[0] == "split-pack" and k[3] >= 16384 for x in [G[("fdpp",) + k[1:]][0] / v[0]]]
    ratio += [NQ[("fdpp",) + k[1:]][0] / v[0] for k, v in NQ.items() if k[0] == "split-pack"]   # vsNq: L = 16384
    ratio16 += [NQ[("fdpp",) + k[1:]][0] / v[0] for k, v in NQ.items() if k[0] == "split-pack"]
    claim(doc, "fdpp's share", flat, "FD++ takes %s split-pack's time over the whole sweep (%s from L = 16384 on)" % (
        span(ratio, 3 if min(ratio) < 0.9995 else 2), span(ratio16, 3 if min(ratio16) < 0.9995 else 2)))
    with open(os.path.join(R6, "phase6_sweep_49f3d94.txt")) as f:
        report(" recomputed (phi" not in f.read(), "%s: no row recomputed at any point of the sweep (phase6_sweep_49f3d94.txt prints none)" % doc)

    # several query tokens
    got = table(text, "| B | N_q | split | split-pack (S) | fused |")
    cells = []
    for r in got or []:
        B, n = int(r[0]), int(r[1])
        t, S, _, _ = NQ[("split-pack", B, n)]
        fu = NQ[("fused", B, n)][0]
        m = re.match(r"([\d.]+) \((\d+)\)", r[3])
        fl, cu = Pall[("flash", B, 8, n, 16384)], Pall[("cudnn", B, 8, n, 16384)]
        cells += [("B%d Nq%d split" % (B, n), r[2], NQ[("split", B, n)][0]), ("B%d Nq%d pack" % (B, n), m.group(1), t),
                  ("B%d Nq%d S" % (B, n), m.group(2), float(S)), ("B%d Nq%d fused" % (B, n), r[4], fu), ("B%d Nq%d fdpp" % (B, n), r[5], NQ[("fdpp", B, n)][0]),
                  ("B%d Nq%d flash" % (B, n), r[6], fl), ("B%d Nq%d cudnn" % (B, n), r[7], cu), ("B%d Nq%d vs best" % (B, n), r[8], min(fl, cu) / fu)]
    check_table(doc, "several query tokens", got, cells)
    claim(doc, "sixteen tokens over one", flat, "Sixteen tokens cost %.2fx one token's time at B = 1 and %.2fx at B = 8 (`split-pack`)" % (
        NQ[("split-pack", 1, 16)][0] / NQ[("split-pack", 1, 1)][0], NQ[("split-pack", 8, 16)][0] / NQ[("split-pack", 8, 1)][0]))
    claim(doc, "the peers with more tokens", flat, "to %s their one-token time, so with two or more tokens `fused` is %s the faster of them" % (
        span([Pall[(b, B, 8, n, 16384)] / Pall[(b, B, 8, 1, 16384)] for b in ("flash", "cudnn") for B in (1, 8) for n in (2, 4, 8, 16)]), span(nqv)))

    # the splits: time vs S and the heuristic's pick (parts vsS and vsSb)
    vs = {}
    for r in gpu:
        if r["sweep"].startswith("vsS"):
            part, _, pick = r["sweep"].partition("-")
            vs.setdefault((part, int(r["B"]), int(r["H_kv"]), int(r["N_q"]), int(r["N_kv"])), {})[pick or int(r["kernel"].rpartition("-S")[2])] = (
                int(r["kernel"].rpartition("-S")[2]), float(r["time_ms"]) * 1e3)
    shapes = {"B = 1, GQA 32:8": ("vsS", 1, 8, 1), "B = 1, MHA": ("vsSb", 1, 32, 1), "B = 8, GQA 32:8": ("vsSb", 8, 8, 1),
              "B = 8, GQA 32:8, N_q = 16": ("vsSb", 8, 8, 16)}
    got = table(text, "| shape | L | S = 4 |")
    cells = []
    worst = 0.0
    for r in got or []:
        d = vs[shapes[r[0]] + (int(r[1]),)]
        grid = {S: t for S, t in d.values() if isinstance(S, int)}
        grid = {k: v[1] for k, v in d.items() if isinstance(k, int)}
        lab = "%s L=%s" % (r[0], r[1])
        for i, S in enumerate((4, 8, 16, 32, 64)):
            cells.append((lab + " S=%d" % S, r[2 + i], grid.get(S)))
        pk = re.match(r"S = (\d+): ([\d.]+)", r[7])
        bs = re.match(r"S = (\d+): ([\d.]+)", r[8])
        best = min(grid, key=grid.get)
        cells += [(lab + " pick S", pk.group(1), d["pick"][0]), (lab + " pick", pk.group(2), d["pick"][1]),
                  (lab + " best S", bs.group(1), best), (lab + " best", bs.group(2), grid[best])]
        worst = max(worst, d["pick"][1] / grid[best])
    check_table(doc, "time vs S", got, cells)
    report(len(got or []) == 5, "%s: the time-vs-S table has the five shapes of vsS and vsSb" % doc)
    claim(doc, "the pick against the best S", flat, "The pick is within %d%% of the best S measured at each shape" % (int((worst - 1) * 100) + 1))
    sm = [d["pick-sm"][1] / d["pick"][1] for d in vs.values()]
    claim(doc, "the SM unit's pick", flat, "rows `-pick-sm`: %s the time of the default's pick here" % span(sm))
    smu = {(r["kernel"].rpartition("-S")[0], r["B"], r["H_kv"], r["N_q"], r["N_kv"]): (r["kernel"], float(r["time_ms"]))
           for r in rows(os.path.join(R6, "phase6_sweep_smunit_cb63234.csv")) if r["device"] == "gpu" and r["sweep"] in ("vsL", "vsNq")}
    fin = {(r["kernel"].rpartition("-S")[0], r["B"], r["H_kv"], r["N_q"], r["N_kv"]): (r["kernel"], float(r["time_ms"]))
           for r in rows(os.path.join(R6, "phase6_sweep_ad8981e.csv")) if r["device"] == "gpu" and r["sweep"] in ("vsL", "vsNq")}
    moved = [smu[k][1] / fin[k][1] for k in fin if k[0] == "split-pack" and k in smu and smu[k][0] != fin[k][0] and int(k[4]) >= 16384]
    claim(doc, "the SM unit as the default", flat, "each point whose S it changed ran %s the time of the next call's sweep" % span(moved))

    # paged rows
    pg = {}
    for r in gpu:
        if r["sweep"] == "paged":
            pg.setdefault(int(r["B"]), []).append((r["kernel"], float(r["time_ms"]) * 1e3))
    b1 = [t for k, t in pg[1] if k.startswith("paged")]
    s1 = next(t for k, t in pg[1] if k.startswith("split-pack"))
    b8 = [t for k, t in pg[8] if k.startswith("paged")]
    s8 = next(t for k, t in pg[8] if k.startswith("split-pack"))
    claim(doc, "paged at B = 1", flat, "take %.1f-%.1f us at B = 1" % (min(b1), max(b1)))
    claim(doc, "paged over split-pack at B = 1", flat, "%s the speed of `split-pack` at the same S (%.1f us)" % (span([s1 / t for t in b1]), s1))
    claim(doc, "paged at B = 8", flat, "take %.1f-%.1f us, %s `split-pack` at the same S" % (min(b8), max(b8), span([s8 / t for t in b8])))
    claim(doc, "paged's worst", flat, "A paged cache costs at most %.0f%% here" % (100 * (1 - min([s1 / t for t in b1] + [s8 / t for t in b8]))))

    # the L2 hint, beside the plain copy in one call
    def vsl(name):
        return {(r["kernel"], r["B"], r["H_kv"], r["N_kv"]): float(r["time_ms"]) for r in rows(os.path.join(R6, name))
                if r["device"] == "gpu" and r["sweep"] == "vsL"}
    hint, plain = vsl("phase6_sweep_pf_14dd621.csv"), vsl("phase6_sweep_14dd621.csv")
    both = [k for k in plain if k in hint and int(k[3]) >= 16384]
    claim(doc, "the hint on the packed kernels", flat, "the packed kernels took %s the time from L = 16384 on" % span(
        [hint[k] / plain[k] for k in both if k[0].startswith(("split-pack", "fdpp"))]))
    claim(doc, "the hint on the unpacked split", flat, "`split` on GQA took %s" % span([hint[k] / plain[k] for k in both if k[0].startswith("split-S") and k[2] == "8"]))

    # the profile beside cuDNN's decode kernel
    nc, ccol = read_ncu(os.path.join(R6, "phase6_ncu_deccudnn_cb63234.txt"))
    cmap = {"time (us, ncu's clocks)": ("time (ms, ncu's clocks)", 1e-3), "blocks": ("grid", 1), "registers / thread": ("registers / thread", 1),
            "DRAM busy (%)": ("DRAM busy (%)", 1), "warp instructions (M)": ("instructions (warp)", 1e6),
            "stall, waiting on memory": ("stall: long_scoreboard", 1), "stall, at a barrier": ("stall: barrier", 1),
            "shared store bank conflicts (k)": ("shared st bank conflicts", 1e3)}
    got = table(text, "| | ours, B = 8 MHA | cuDNN, B = 8 MHA |")
    cells = []
    for r in got or []:
        name, unit = cmap[r[0]]
        for i, kern in enumerate(("ours_b8mha", "cudnn_b8mha", "ours_b1gqa", "cudnn_b1gqa")):
            cells.append((r[0] + " " + kern, r[1 + i], float(nc[name][ccol[kern]]) / unit))
    check_table(doc, "decode beside cuDNN (ncu)", got, cells)
    cv = lambda name, kern: float(nc[name][ccol[kern]])
    claim(doc, "cuDNN's DRAM busy and instructions", flat, "cuDNN keeps DRAM busy %.1f%% of the time, ours %.1f%%, and ours issues %.2fx the instructions" % (
        cv("DRAM busy (%)", "cudnn_b8mha"), cv("DRAM busy (%)", "ours_b8mha"), cv("instructions (warp)", "ours_b8mha") / cv("instructions (warp)", "cudnn_b8mha")))
    claim(doc, "the B = 1 GQA room", flat, "(B = 1, GQA: %.0f%% of the copy bandwidth at L = 65536 in the sweep of record)" % (100 * ours(1, 8, 65536)[2] / copy))

    # the map's row of this chapter
    mha = [fa2((1, 32, L)) for L in (65536, 262144)]
    gq = [fa2((1, 8, L)) for L in (16384, 262144)]
    b8c = [100 * ours(8, h, L)[2] / copy for h in (32, 8) for L in Ls if L >= 65536]
    claim(doc, "the map's row", flat, "%.2f-%.2fx `fa2-mma` at B = 1 (MHA, L = 64k and 256k), %.2f-%.2fx with GQA 32:8 (16k to 256k), %.0f-%.0f%% of the copy bandwidth at B = 8 from 64k on; one token: %s PyTorch's faster backend from L = 16k on; 2-16 tokens: %s" % (
        mha[0], mha[1], gq[0], gq[1], min(b8c), max(b8c), span([vs_best(k) for k in longk]), span(nqv)))

    # the two rings
    def times(name):
        out = {}
        for r in rows(os.path.join(H100, "phase6/" + name)):
            if r["device"] == "gpu" and r["time_ms"] and not r["kernel"].startswith("fa2"):
                out[(r["kernel"].rpartition("-S")[0] or r["kernel"], r["sweep"], r["B"], r["H_kv"], r["N_kv"])] = float(r["time_ms"])
        return out
    t2, t3 = times("phase6_sweep_stages2_8516c60.csv"), times("phase6_sweep_stages3_8516c60.csv")
    both = [k for k in t2 if k in t3]
    mha = [k for k in both if k[3] == "32" and int(k[4]) >= 65536 and k[1] == "vsL"]
    claim(doc, "3 stages over 2", flat, "ranges from %.2fx to %.2fx, and on the MHA rows from L = 65536 on from %.2fx to %.2fx" % (
        min(t3[k] / t2[k] for k in both), max(t3[k] / t2[k] for k in both), min(t3[k] / t2[k] for k in mha), max(t3[k] / t2[k] for k in mha)))

    # Nsight Compute
    ncu, col = read_ncu(os.path.join(H100, "phase6/phase6_ncu_afbaa25.txt"))
    order = ["ours_contig", "ours_mha", "fa2_mha"]
    rowmap = {"time": ("time (ms, ncu's clocks)", 1e-3), "registers / thread": ("registers / thread", 1), "waves": ("waves / SM", 1),
              "DRAM bytes read": ("DRAM bytes read", 1e6), "DRAM busy": ("DRAM busy (%)", 1), "warp instructions": ("instructions (warp)", 1e6),
              "stall, waiting on memory (cycles per issued instr.)": ("stall: long_scoreboard", 1), "stall, at a barrier": ("stall: barrier", 1)}
    got = table(text, "| | split-pack, GQA 32:8 | split, MHA |")
    cells = []
    for r in got or []:
        for i, kern in enumerate(order):
            v = lambda name: float(ncu[name][col[kern]])
            if r[0] in rowmap:
                name, unit = rowmap[r[0]]
                cells.append((r[0] + " " + kern, re.sub(r"\s*(us|%|MB|M)$", "", r[1 + i]), v(name) / unit))
            elif r[0] == "blocks, per SM":
                g, per = r[1 + i].split(",")
                cells += [("grid " + kern, g, v("grid")), ("per SM " + kern, per, v("blocks / SM (limit: regs)"))]
    check_table(doc, "decode profiles", got, cells)
    claim(doc, "both kernels' warps", flat, "Both kernels are %d warps (%d threads)" % (
        int(ncu["block"][col["ours_mha"]]) // 32, int(ncu["block"][col["fa2_mha"]])))
    report(ncu["block"][col["ours_mha"]] == ncu["block"][col["fa2_mha"]], "%s: our split kernel and FA2's split-KV kernel have the same block size" % doc)


# ---- README: the chapter table's status of 4b and the decode range ----------------------
def readme():
    with open(os.path.join(DOCS, "..", "README.md")) as f:
        text = f.read()
    flat = " ".join(text.split())
    report("not yet profiled" not in flat, "README.md: chapter 4b's status does not say \"not yet profiled\" (it is: phase4_ncu_450175c.txt)")
    G = {}
    for r in rows(os.path.join(H100, "phase6/phase6_sweep_49f3d94.csv")):
        if r["device"] == "gpu" and r["sweep"] == "vsL":
            G[(r["kernel"].rpartition("-S")[0] or r["kernel"], int(r["B"]), int(r["H_kv"]), int(r["N_kv"]))] = float(r["time_ms"])
    P = {}
    for r in rows(os.path.join(H100, "phase6/phase6_peers_49f3d94.csv")):
        if r["N_q"] == "1":   # a shape timed twice (vsL's point and vsNq's): its faster time
            k = (r["backend"], int(r["B"]), int(r["H_kv"]), int(r["N_kv"]))
            P[k] = min(P.get(k, float("inf")), float(r["time_ms"]))
    v = {(B, h, L): min(P[("flash", B, h, L)], P[("cudnn", B, h, L)]) / t for (k, B, h, L), t in G.items() if k == "fused"}
    sweep = rows(os.path.join(H100, "phase4/phase4_sweep_450175c.csv"))
    T = {(r["kernel"], int(r["d"]), int(r["causal"])): float(r["tflops"]) for r in sweep
         if r["device"] == "gpu" and r["sweep"] == "tokens16k" and r["N_q"] == "4096"}
    Q = {(r["backend"], int(r["d"]), int(r["causal"])): float(r["tflops"]) for r in rows(os.path.join(H100, "phase4/phase4_peers_450175c.csv")) if r["N"] == "4096"}
    claim("README.md", "4b's wgmma-tma row", flat, "%.1f / %.1f TFLOP/s (%.2fx / %.2fx PyTorch's FA2 backend, %.2fx / %.2fx its cuDNN backend); causal %.1f / %.1f" % (
        T[("wgmma-tma", 128, 0)], T[("wgmma-tma", 64, 0)], T[("wgmma-tma", 128, 0)] / Q[("flash", 128, 0)], T[("wgmma-tma", 64, 0)] / Q[("flash", 64, 0)],
        T[("wgmma-tma", 128, 0)] / Q[("cudnn", 128, 0)], T[("wgmma-tma", 64, 0)] / Q[("cudnn", 64, 0)], T[("wgmma-tma", 128, 1)], T[("wgmma-tma", 64, 1)]))
    claim("README.md", "4b's wgmma-ws row", flat, "%.1f / %.1f TFLOP/s, causal %.1f / %.1f (%.2fx / %.2fx cuDNN; causal %.2fx / %.2fx)" % (
        T[("wgmma-ws", 128, 0)], T[("wgmma-ws", 64, 0)], T[("wgmma-ws", 128, 1)], T[("wgmma-ws", 64, 1)],
        T[("wgmma-ws", 128, 0)] / Q[("cudnn", 128, 0)], T[("wgmma-ws", 64, 0)] / Q[("cudnn", 64, 0)],
        T[("wgmma-ws", 128, 1)] / Q[("cudnn", 128, 1)], T[("wgmma-ws", 64, 1)] / Q[("cudnn", 64, 1)]))
    claim("README.md", "decode beside SDPA", flat, "beside PyTorch SDPA's faster backend %s over the whole sweep (B = 1 and 8, MHA and GQA 32:8, L = 1k-256k; %s from L = 16384 on)" % (
        span(v.values()), span([x for k, x in v.items() if k[2] >= 16384])))
    M = rows(os.path.join(H100, "masks/masks_abb770b.csv"))
    f = lambda name, pick: [float(r[name]) for r in M if pick(r)]
    claim("README.md", "4c's masks row", flat, "forward %s Flex's at d = 64 and %s on 11 masks at d = 128 (%.2fx on `random_eviction`); "
          "backward (`wgmma-ws`) %s Flex's at d = 128, %s at d = 64; %s dense SDPA at density <= 0.12" % (
              span(f("fwd_vs_flex", lambda r: r["d"] == "64")),
              span(f("fwd_vs_flex", lambda r: r["d"] == "128" and r["spec"] != "random_eviction:7")),
              f("fwd_vs_flex", lambda r: r["d"] == "128" and r["spec"] == "random_eviction:7")[0],
              span(f("bwd_vs_flex", lambda r: r["d"] == "128")), span(f("bwd_vs_flex", lambda r: r["d"] == "64")),
              span(f("fwd_vs_sdpa", lambda r: float(r["density"]) <= 0.12), 1)))


def self_test():
    """The checker must be able to fail: the same checks on a copy of the chapters with one
    recorded figure changed in each must fail once per chapter."""
    global DOCS, failures, checks
    import shutil
    import tempfile
    mutations = {"04b_hopper.md": "**648.3**", "05_backward.md": "| 216.4 |", "06_decoding.md": "| 23.86x |"}   # table cells
    tmp = tempfile.mkdtemp()
    try:
        for name, figure in mutations.items():
            text = chapter(name)
            if figure not in text:
                return False, "%s no longer quotes %s" % (name, figure)
            changed = figure.replace("6", "7", 1)   # each figure holds a 6
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text.replace(figure, changed, 1))
        shutil.copy(os.path.join(DOCS, "..", "README.md"), os.path.join(tmp, "README.md"))
        saved = (DOCS, failures, checks)
        DOCS = tmp
        out = sys.stdout
        sys.stdout = open(os.devnull, "w")
        caught = []
        try:
            for fn in (chapter_4b, chapter_5, chapter_6):
                before = failures
                try:
                    fn()
                except Exception:
                    failures += 1
                caught.append(failures > before)
        finally:
            sys.stdout.close()
            sys.stdout = out
            DOCS, failures, checks = saved
        return all(caught), "caught in %d of 3 chapters" % sum(caught)
    finally:
        shutil.rmtree(tmp)


# ---- every chapter: results tables followed by their command, embedded figures present ----
def structure():
    for name in ("04b_hopper.md", "04c_masks.md", "05_backward.md", "05b_hopper_backward.md", "06_decoding.md"):
        lines = chapter(name).splitlines()
        n, missing = 0, []
        while n < len(lines):
            if lines[n].startswith("|") and n + 1 < len(lines) and lines[n + 1].startswith("|---"):
                start, n = n, n + 2
                cells = []
                while n < len(lines) and lines[n].startswith("|"):
                    cells += lines[n].strip("|").split("|")
                    n += 1
                numeric = any(re.search(r"\d\.\d", c) for c in cells)
                # a results table is followed by its command (```sh), or by a table that is;
                # the map of chapters quotes the chapters' own figures
                after = n
                while after < len(lines) and not lines[after].strip():
                    after += 1
                chained = after < len(lines) and lines[after].startswith("|")
                if numeric and not chained and not lines[start].startswith("| chapter |") and \
                        not any(l.startswith("```sh") for l in lines[n:n + 3]):
                    missing.append("line %d" % (start + 1))
            else:
                n += 1
        report(not missing, "%s: every results table is followed by the command that reproduces it" % name, ", ".join(missing))
        figs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", "\n".join(lines))
        absent = [f for f in figs if not os.path.isfile(os.path.join(ROOT, "docs", f))]
        report(figs and not absent, "%s: %d embedded figures, each a recorded file" % (name, len(figs)),
               "missing: " + ", ".join(absent) if absent else "no figure")
        # each figure's caption (the next paragraph in italics) names the commit of its run
        text = "\n".join(lines)
        paras = re.split(r"\n\s*\n", text)
        uncaptioned = []
        for i, para in enumerate(paras):
            if para.startswith("!["):
                nxt = next((q for q in paras[i + 1:] if not q.startswith("![")), "")
                if not (nxt.startswith("*") and re.search(r"\b[0-9a-f]{7}\b", nxt)):
                    uncaptioned.append(para.split("(")[0])
        report(not uncaptioned, "%s: each figure's caption names the commit of its run" % name, ", ".join(uncaptioned))
        # commit hashes nowhere else: outside captions, code blocks and recorded file names
        prose = [q for q in paras if not q.startswith("*") and not q.startswith("![")]
        prose = re.sub(r"```.*?```", "", "\n\n".join(prose), flags=re.S)
        prose = re.sub(r"[\w./-]*_[0-9a-f]{7}[\w.]*", "", prose)
        hashes = [h for h in re.findall(r"\b[0-9a-f]{7}\b", prose) if re.search(r"\d", h) and re.search(r"[a-f]", h)]
        report(not hashes, "%s: no commit hash outside figure captions and file names" % name, ", ".join(hashes))


if __name__ == "__main__":
    for fn in (chapter_4b, chapter_4c, chapter_5, chapter_5b, chapter_6, readme, structure):
        try:
            fn()
        except (OSError, KeyError, ValueError, TypeError, AttributeError, IndexError, ZeroDivisionError) as e:
            report(False, "%s: could not run (%s: %s)" % (fn.__name__, type(e).__name__, e))
    ok, why = self_test()
    report(ok, "self-test: one recorded figure changed in each chapter's copy fails its check", why)
    print("check_chapters: %d checks, %d failed" % (checks, failures))
    sys.exit(1 if failures else 0)
