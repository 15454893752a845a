# phase3_fa1/plot.gp - the figures of chapter 3, from results/phase3/phase3_sweep.csv.
#   tools/plot.sh phase3_fa1/plot.gp OUTDIR   (make phase3 plot)
# Columns: 1 kernel 2 device 3 sweep 4 B 5 H 6 H_kv 7 N_q 8 N_kv 9 d 10 causal 11 sram
# 12 Br 13 Bc 14 time_ms 15 tflops 16 hbm_model 17 hbm_formula 18 hbm_std 19 hbm_measured
# 20 max_abs 21 rel_l2 22 rel_prev 23 pipeline_max_abs 24 verdict
if (!exists("outdir")) outdir = 'results/phase3'
if (!exists("term")) term = 'pngcairo'
f = outdir.'/phase3_sweep.csv'
set datafile separator ','
set datafile commentschars '#'
set terminal term size 900,600 font ',11'
set grid
set key top left
MiB = 1048576.0
# Without the sweep (make phase3 run, GPU or not): HBM bytes vs N from the closed form of
# docs/03_fa1.md (fa1.h), one head, d = 64, M = 128 KiB (Bc = 127), against standard
# attention's e (4 N d + 4 N^2): no CSV and no GPU needed.
if (system("test -f '".f."' && echo y") ne "y") {
    print 'phase3 plots: no '.f.' (make phase3-sweep): drawing HBM bytes vs N from the closed form only'
    fa1(n, dd, bc) = 4*n*(dd + 2) + 4*n*dd + ceil(n / bc) * (2*n*dd + 8*n*(dd + 2))
    std(n, dd) = 2 * (4*n*dd + 4*n*n)
    set output outdir.'/phase3_hbm_vs_N.png'
    set title 'HBM traffic vs N, closed forms (M = 128 KiB so Bc = 127, d = 64, one head)'
    set xlabel 'N (= N_q = N_{kv})'
    set ylabel 'HBM bytes (MiB)'
    set logscale xy 2
    plot sample [k=8:14:1] '+' using (2**$1):(fa1(2**$1, 64, 127) / MiB) with linespoints lw 2 pt 7 title 'FlashAttention-1 (closed form)', \
         [k=8:14:1] '+' using (2**$1):(std(2**$1, 64) / MiB) with linespoints lw 2 dt 2 pt 5 title 'standard attention (phase 0)'
    exit
}
# the GPU of the recorded run, from the CSV's metadata header
gpu = system("grep -m1 '^# gpu:' '".f."' | sed 's/^# gpu: //; s/ |.*//'")
is(col, s) = strcol(col) eq s
# The GPU rows of one kernel, d and mask, without the rows in between (so lines join up)
rows(k, dd, c) = sprintf("< awk -F, '$3 == \"tokens16k\" && $1 == \"%s\" && $9 == %d && $10 == %d' '%s'", k, dd, c, f)

# 1. HBM bytes vs M (N = 1024, d = 64, one head): Theta(N^2 d^2 / M) against standard
#    attention's fixed Theta(N d + N^2)
set output outdir.'/phase3_hbm_vs_M.png'
set title 'HBM traffic vs SRAM size M (N = 1024, d = 64, one head, fp16 Q/K/V, fp32 O/l/m)'
set xlabel 'M (KiB of SRAM)'
set ylabel 'HBM bytes (MiB)'
set logscale xy 2
plot f using ($11/1024):(is(3,'vsM') ? $16/MiB : 1/0) with points pt 7 ps 1.5 title 'CPU model (counted)', \
     f using ($11/1024):(is(3,'vsM') ? $17/MiB : 1/0) with lines lw 2 title 'closed form (docs/03\_fa1.md)', \
     f using ($11/1024):(is(3,'vsM') ? $18/MiB : 1/0) with lines lw 2 dt 2 title 'standard attention (phase 0)'

# 2. HBM bytes vs N (M = 128 KiB, d = 64, one head)
set output outdir.'/phase3_hbm_vs_N.png'
set title 'HBM traffic vs N (M = 128 KiB, d = 64, one head)'
set xlabel 'N (= N_q = N_{kv})'
plot f using 7:(is(3,'vsN') ? $16/MiB : 1/0) with points pt 7 ps 1.5 title 'CPU model (counted)', \
     f using 7:(is(3,'vsN') ? $17/MiB : 1/0) with lines lw 2 title 'closed form', \
     f using 7:(is(3,'vsN') ? $18/MiB : 1/0) with lines lw 2 dt 2 title 'standard attention'

# The GPU figures need the GPU sweep's rows (tokens16k); a CPU-only sweep has none.
ngpu = int(system("grep -c ',tokens16k,' '".f."' 2>/dev/null || true"))
if (ngpu == 0) { print 'phase3 plots: no GPU rows in '.f.': drew the model figures only'; exit }
nmeas = int(system("grep ',tokens16k,' '".f."' | awk -F, '$19 != \"\"' | wc -l"))

# 3. model vs measured (Nsight Compute) on the GPU, FA2 setting, d = 64, not causal
if (nmeas > 0) {
set output outdir.'/phase3_hbm_measured.png'
set title sprintf('GPU HBM traffic: model vs measured (d = 64, hidden 2048, 16k tokens) - %s', gpu)
set ylabel 'HBM bytes (MiB)'
plot rows('mma', 64, 0) using 7:($16/MiB) with lines lw 2 lc 1 title 'fa1-mma model', \
     rows('mma', 64, 0) using 7:($19/MiB) with points pt 7 ps 1.5 lc 1 title 'fa1-mma measured', \
     rows('simple', 64, 0) using 7:($16/MiB) with lines lw 2 lc 2 title 'fa1-simple model', \
     rows('simple', 64, 0) using 7:($19/MiB) with points pt 5 ps 1.5 lc 2 title 'fa1-simple measured', \
     rows('cublas', 64, 0) using 7:($16/MiB) with lines lw 2 lc 3 title 'cuBLAS (phase 1) model', \
     rows('cublas', 64, 0) using 7:($19/MiB) with points pt 9 ps 1.5 lc 3 title 'cuBLAS (phase 1) measured'
}

# 4. speed: TFLOP/s and time vs N, d = 64 and 128, not causal (solid) and causal (dashed)
unset logscale
set logscale x 2
set output outdir.'/phase3_speed.png'
set terminal term size 1400,1000 font ',11'
set multiplot layout 2,2 title sprintf('FlashAttention-1 on %s: fp16, hidden 2048 (H = 2048/d), B x N = 16k tokens, not causal', gpu)
# the non-causal setting (make phase3-sweep); causal masking costs FA1 the same work
do for [dd in "64 128"] {
    set title sprintf('TFLOP/s, d = %s', dd)
    set ylabel 'TFLOP/s'
    set xlabel 'N'
    set logscale y 10
    plot rows('mma', dd+0, 0) using 7:15 with linespoints lw 2 pt 7 lc 1 title 'fa1-mma', \
         rows('simple', dd+0, 0) using 7:15 with linespoints lw 2 pt 5 lc 2 title 'fa1-simple', \
         rows('cublas', dd+0, 0) using 7:15 with linespoints lw 2 pt 9 lc 3 title 'cuBLAS pipeline (phase 1)'
}
do for [dd in "64 128"] {
    set title sprintf('time per forward pass, d = %s', dd)
    set ylabel 'ms'
    plot rows('mma', dd+0, 0) using 7:14 with linespoints lw 2 pt 7 lc 1 title 'fa1-mma', \
         rows('simple', dd+0, 0) using 7:14 with linespoints lw 2 pt 5 lc 2 title 'fa1-simple', \
         rows('cublas', dd+0, 0) using 7:14 with linespoints lw 2 pt 9 lc 3 title 'cuBLAS pipeline (phase 1)'
}
unset multiplot
