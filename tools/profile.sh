#!/usr/bin/env bash
# tools/profile.sh BINARY CSV [MAX_N [FILTER]] - measured HBM traffic (Nsight Compute) into a CSV.
#
# For every row of CSV with device "gpu" and verdict PASS (and N_q <= MAX_N when given,
# and FILTER true: a Python expression on the row r, e.g. "r['d'] == '64'"),
# reruns BINARY on that row's problem and kernel under
#     ncu --profile-from-start off --metrics dram__bytes_read.sum,dram__bytes_write.sum
# and writes the sum over the profiled kernels into the row's hbm_measured column.
# Any phase can use it: its CSV needs the columns kernel, device, B, H, H_kv, N_q, N_kv,
# d, causal, hbm_model, hbm_measured, verdict, and its driver brackets ONE run of the
# selected kernel with cudaProfilerStart()/cudaProfilerStop() (phase 1: gpu_profile_range),
# so ncu sees exactly one iteration of each of the pipeline's kernels, not the timing loop.
# ncu flushes the caches before each kernel it profiles (--cache-control all, its default),
# so the bytes are those of a cold L2, as the timed runs are. The CSV keeps its header
# ('#' lines, common/csv.c) and gains one line saying which ncu measured which rows, when,
# at which commit, with which command.
#
# tools/profile.sh --stamp FILE PHASE COMMAND... - put the project's metadata header
# (common/csv.c's '#' lines: phase, GPU, CUDA, git, date, host, CPU, the command) on top
# of FILE, a raw CSV ncu wrote (e.g. make phase2 profile's phase2_ncu.csv), which has none.
set -u
NCU=${NCU:-ncu}
PYTHON=${PYTHON:-python3}

# git commit of the tree: FA_GIT_COMMIT for a copy without .git (as common/csv.c does)
commit() { [ -n "${FA_GIT_COMMIT:-}" ] && { echo "$FA_GIT_COMMIT"; return; }
           git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
ncu_version() { "$NCU" --version 2>/dev/null | tail -n 1 | sed 's/^ *//'; }

if [ "${1:-}" = "--stamp" ]; then
    file=$2; phase=$3; shift 3
    [ -f "$file" ] || { echo "profile --stamp: no $file"; exit 1; }
    gpu=$(nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
    gpu=${gpu:-unknown, unknown}
    cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
    { echo "# phase: $phase (profile: Nsight Compute)"
      echo "# gpu: ${gpu%%,*} | sm_clock_mhz/mem_clock_mhz/driver: $(echo "${gpu#*,}" | sed 's/^ *//')"
      echo "# ncu: $(ncu_version || true)"
      echo "# git: $(commit) | date: $(now) | host: $(uname -n) | cpu: ${cpu:-unknown}"
      echo "# command: $*"
      cat "$file"; } >"$file.stamped" && mv "$file.stamped" "$file"
    exit 0
fi

bin=$1; csv=$2; maxn=${3:-}; filter=${4:-True}
if ! command -v "$NCU" >/dev/null 2>&1; then
    echo "profile skipped: Nsight Compute (ncu) not found; hbm_measured stays empty in $csv"
    exit 0
fi
[ -f "$csv" ] || { echo "profile: no CSV at $csv (run the phase first)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/profile.XXXXXX"); trap 'rm -rf "$tmp"' EXIT

# The rows to measure: "index args..." lines.
"$PYTHON" - "$csv" "$maxn" "$filter" >"$tmp/jobs" <<'PY'
import csv, sys
path, maxn, filt = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [l for l in open(path) if not l.startswith('#')]
rows = list(csv.DictReader(lines))
for i, r in enumerate(rows):
    if r.get('device') != 'gpu' or r.get('verdict') != 'PASS': continue
    if maxn and int(r['N_q']) > int(maxn): continue
    if not eval(filt, {}, {'r': r}): continue
    args = f"--B {r['B']} --H {r['H']} --Hkv {r['H_kv']} --N {r['N_q']} --Nkv {r['N_kv']} --d {r['d']}"
    if r['causal'] == '1': args += ' --causal'
    print(i, r['kernel'], args)
PY
[ -s "$tmp/jobs" ] || { echo "profile: no passing GPU rows in $csv"; exit 0; }

: >"$tmp/measured"
while read -r idx kernel args; do
    echo "profile: ncu $bin $args --kernel $kernel"
    # shellcheck disable=SC2086
    if ! "$NCU" --profile-from-start off --metrics dram__bytes_read.sum,dram__bytes_write.sum \
            --csv --print-units base --log-file "$tmp/ncu.csv" \
            "$bin" $args --kernel "$kernel" --iters 1 --quiet --csv "$tmp/run.csv" >"$tmp/run.log" 2>&1; then
        echo "profile: ncu failed on that row:"; tail -5 "$tmp/run.log"; tail -5 "$tmp/ncu.csv" 2>/dev/null
        continue
    fi
    bytes=$("$PYTHON" - "$tmp/ncu.csv" <<'PY'
import csv, sys
text = open(sys.argv[1]).read().splitlines()
start = next((i for i, l in enumerate(text) if l.startswith('"ID"')), None)
if start is None: sys.exit(1)
rows = list(csv.reader(text[start:]))
head, total, kernels = rows[0], 0.0, set()
scale = {'byte': 1, 'Kbyte': 1e3, 'Mbyte': 1e6, 'Gbyte': 1e9, 'Tbyte': 1e12}
if 'Metric Name' in head:          # "details" page: one row per (kernel, metric)
    n, u, v, k = (head.index(c) for c in ('Metric Name', 'Metric Unit', 'Metric Value', 'ID'))
    for r in rows[1:]:
        if len(r) > v and r[n].startswith('dram__bytes_'):
            total += float(r[v].replace(',', '')) * scale.get(r[u], 1); kernels.add(r[k])
else:                              # "raw" page: one row per kernel, a column per metric
    cols = [i for i, c in enumerate(head) if c.startswith('dram__bytes_')]
    for r in rows[1:]:
        try: total += sum(float(r[i].replace(',', '')) for i in cols); kernels.add(r[0])
        except ValueError: pass     # the units row
print(f"{total:.0f} {len(kernels)}")
PY
) || { echo "profile: could not read ncu's output"; tail -5 "$tmp/ncu.csv"; continue; }
    echo "$idx ${bytes% *}" >>"$tmp/measured"
    echo "         ${bytes% *} bytes over ${bytes#* } kernel launches"
done <"$tmp/jobs"

# Merge into the CSV (header lines kept, plus one saying how hbm_measured was measured)
# and show model vs measured.
stamp="# profile: hbm_measured of $(wc -l <"$tmp/measured") rows by $(ncu_version) (dram__bytes_read.sum + dram__bytes_write.sum) | git: $(commit) | date: $(now) | command: tools/profile.sh $*"
"$PYTHON" - "$csv" "$tmp/measured" "$stamp" <<'PY'
import csv, io, sys
path, meas, stamp = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(path).read().splitlines(keepends=True)
head = [l for l in lines if l.startswith('#')] + [stamp + '\n']
rows = list(csv.DictReader([l for l in lines if not l.startswith('#')]))
fields = list(csv.DictReader([l for l in lines if not l.startswith('#')]).fieldnames)
got = dict(l.split() for l in open(meas) if l.strip())
for i, r in enumerate(rows):
    if str(i) in got: r['hbm_measured'] = got[str(i)]
out = io.StringIO()
w = csv.DictWriter(out, fieldnames=fields, lineterminator='\n'); w.writeheader(); w.writerows(rows)
open(path, 'w').write(''.join(head) + out.getvalue())
print(f"{'kernel':<10} {'problem':<34} {'HBM model':>12} {'HBM measured':>13} {'meas/model':>10}")
for i, r in enumerate(rows):
    if str(i) not in got: continue
    prob = f"B{r['B']} H{r['H']}/{r['H_kv']} {r['N_q']}x{r['N_kv']} d{r['d']}{' causal' if r['causal'] == '1' else ''}"
    m, x = float(r['hbm_model']), float(r['hbm_measured'])
    print(f"{r['kernel']:<10} {prob:<34} {m/2**20:10.1f}Mi {x/2**20:11.1f}Mi {x/m:10.3f}")
print(f"profile: hbm_measured written into {path} ({len(got)} rows)")
PY
