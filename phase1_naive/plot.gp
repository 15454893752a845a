# phase1_naive/plot.gp - phase 1's figures, from the sweep CSV (build/phase1 --sweep).
# Run through tools/plot.sh, which sets outdir (the folder of the CSV, where the PNGs go)
# and term (pngcairo or png). Columns (see main.c): 1 kernel 2 device 3 sweep 4 B 5 H
# 6 H_kv 7 N_q 8 N_kv 9 d 10 causal 11 time_ms 12 tflops 13 gbps 14 hbm_model
# 15 hbm_measured 16 sp_bytes 17 free_bytes 18 max_abs 19 rel_l2 20 pipeline_max_abs 21 verdict
if (!exists("outdir")) outdir = "results/phase1"
if (!exists("term")) term = "png"
f = outdir."/phase1_sweep.csv"
GiB = 1073741824.0
set terminal @term size 1000,640
# Without the sweep (make phase1 run on any machine, GPU or not): the model's bytes from
# chapter 0's formula, e (2 N_q d + 2 N_kv d + 4 N_q N_kv) per head, in the sweep's
# setting (B = 16384 / N, H = 2048 / d, fp16), which needs no CSV and no GPU.
if (system("test -f '".f."' && echo 1 || echo 0") + 0 == 0) {
    print "phase1 plots: no ".f." (make phase1-sweep): drawing the model bytes from the formula only"
    set output outdir."/phase1_hbm.png"
    set title "HBM traffic of standard attention, the model (chapter 0's formula): fp16, hidden 2048, B x N = 16k tokens"
    set xlabel "sequence length N (B = 16384 / N, H = 2048 / d)"
    set ylabel "bytes moved (GiB)"
    set logscale xy 2
    set grid
    set key top left
    bytes(n, dd) = (16384.0 / n) * (2048.0 / dd) * 2 * (4 * n * dd + 4 * n * n)
    plot sample [k=9:14:1] '+' using (2**$1):(bytes(2**$1, 64) / GiB) with linespoints lw 2 pt 7 title "model d=64", \
         [k=9:14:1] '+' using (2**$1):(bytes(2**$1, 128) / GiB) with linespoints lw 2 pt 5 title "model d=128"
    exit
}
set datafile separator ","
set datafile missing ""
set key top left
set grid
set logscale x 2
set xlabel "sequence length N (B x N = 16k tokens, hidden 2048)"
gpu = system("grep -m1 '^# gpu:' '".f."' | sed 's/^# gpu: //; s/ |.*//'")
date = system("grep -m1 '^# git:' '".f."' | sed 's/.*date: //; s/T.*//'")
# PyTorch's SDPA on some of the same shapes (tools/sdpa_peer.py), when that CSV is there
peer = outdir."/phase1_sdpa_peer.csv"
if (system("test -f '".peer."' && echo 1 || echo 0") + 0 == 0) peer = f
# the rows of one line (kernel k, head dimension dd, causal c) of the B x N = 16k sweep,
# picked by awk so that gnuplot draws them as one connected line
rows(k, dd, c) = sprintf("< awk -F, '$1 == \"%s\" && $3 == \"tokens16k\" && $9 == %d && $10 == %d' '%s'", k, dd, c, f)

# a sweep without a GPU has the model columns only: draw what they hold
ngpu = int(system("awk -F, '$2 == \"gpu\" && $11 != \"\"' '".f."' | wc -l"))
if (ngpu == 0) {
    print "phase1 plots: ".f." has no GPU rows (a sweep without a GPU): drawing the model bytes only"
    set output outdir."/phase1_hbm.png"
    set title "HBM traffic of standard attention: the model (phase-0 formula)"
    set ylabel "bytes moved (GiB)"
    set logscale y 2
    plot for [dd in "64 128"] sprintf("< awk -F, '$1 == \"model\" && $9 == %s' '%s'", dd, f) using 7:($14/GiB) with linespoints lw 2 title "model d=".dd
    exit
}
set output outdir."/phase1_time.png"
set title sprintf("standard attention (S, P in HBM), forward time - %s, %s", gpu, date)
set ylabel "time (ms, median)"
set logscale y 10
plot for [dd in "64 128"] rows("cublas", dd+0, 0) using 7:11 with linespoints lw 2 title "cublas d=".dd, \
     for [dd in "64 128"] rows("simple", dd+0, 0) using 7:11 with linespoints lw 2 dt 2 title "simple d=".dd, \
     for [dd in "64 128"] rows("cublas", dd+0, 1) using 7:11 with linespoints lw 1 title "cublas d=".dd." causal", \
     peer using ((strcol(1) eq "math" && $2 * $4 == 16384 && $5 == 64 && $6 == 0) ? $4 : 1/0):7 with points pt 6 ps 2 lw 2 lc rgb "black" title "PyTorch SDPA math, d=64 (same GPU)", \
     peer using ((strcol(1) eq "math" && $2 * $4 == 16384 && $5 == 128 && $6 == 0) ? $4 : 1/0):7 with points pt 4 ps 2 lw 2 lc rgb "#7f7f7f" title "PyTorch SDPA math, d=128 (same GPU)"
unset logscale y

set output outdir."/phase1_tflops.png"
set title sprintf("standard attention, forward TFLOP/s - %s, %s", gpu, date)
set ylabel "TFLOP/s (4 B H N^2 d / time; halved when causal)"
set yrange [0:*]
plot for [dd in "64 128"] rows("cublas", dd+0, 0) using 7:12 with linespoints lw 2 title "cublas d=".dd, \
     for [dd in "64 128"] rows("simple", dd+0, 0) using 7:12 with linespoints lw 2 dt 2 title "simple d=".dd, \
     for [dd in "64 128"] rows("cublas", dd+0, 1) using 7:12 with linespoints lw 1 title "cublas d=".dd." causal", \
     for [dd in "64 128"] rows("simple", dd+0, 1) using 7:12 with linespoints lw 1 dt 2 title "simple d=".dd." causal"
set yrange [*:*]

set output outdir."/phase1_hbm.png"
set title sprintf("HBM traffic: the model (phase-0 formula) and Nsight Compute - %s, %s", gpu, date)
set ylabel "bytes moved (GiB)"
set logscale y 2
plot for [dd in "64 128"] rows("cublas", dd+0, 0) using 7:($14/GiB) with linespoints lw 2 title "model d=".dd, \
     rows("cublas", 64, 0) using 7:($15/GiB) with points pt 7 ps 1.5 title "measured cublas d=64", \
     rows("simple", 64, 0) using 7:($15/GiB) with points pt 9 ps 1.5 title "measured simple d=64"
unset logscale y

free = real(system("awk -F, '$3 == \"wall_B4\" && $17 > 0 {print $17; exit}' '".f."'"))
set output outdir."/phase1_memory.png"
set title sprintf("memory of S + P (fp16) vs N, and the free device memory - %s, %s", gpu, date)
set xlabel "sequence length N"
set ylabel "GiB"
set logscale y 2
set key bottom right box opaque
wall(dd) = sprintf("< awk -F, '$3 == \"wall_B4\" && $9 == %d' '%s' | sort -t, -k7 -n", dd, f)
plot wall(64) using 7:($16/GiB) with linespoints lw 2 pt 7 title "S+P, B=4 H=32 d=64", \
     wall(128) using 7:($16/GiB) with linespoints lw 2 pt 5 title "S+P, B=4 H=16 d=128", \
     rows("cublas", 64, 0) using 7:($16/GiB) with linespoints lw 2 dt 2 title "S+P, B x N = 16k tokens, d=64", \
     f using (strcol(3) eq "wall_B4" && strcol(21) eq "OOM" ? $7 : 1/0):($16/GiB) with points pt 2 ps 3 lw 2 lc rgb "red" title "does not fit: the driver exits 2", \
     f using (strcol(3) eq "wall_B4" && $17 > 0 ? $7 : 1/0):($17/GiB) with points pt 1 lc rgb "black" notitle, \
     wall(128) using 7:(free / GiB) with lines lw 3 lc rgb "black" title sprintf("free device memory (%.1f GiB)", free / GiB)
