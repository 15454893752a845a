# phase4_fa2/plot.gp - the figures of chapter 4, from results/phase4/phase4_sweep.csv (and
# phase4_peers.csv from tools/peers.py where PyTorch ran on the same GPU).
#   tools/plot.sh phase4_fa2/plot.gp OUTDIR   (make phase4 plot)
# Columns: 1 kernel 2 device 3 sweep 4 B 5 H 6 H_kv 7 N_q 8 N_kv 9 d 10 causal 11 Br 12 Bc
# 13 time_ms 14 tflops 15 hbm_model 16 hbm_formula 17 hbm_measured 18 nonmatmul 19 max_abs
# 20 rel_l2 21 L_max_abs 22 rel_prev 23 pipeline_max_abs 24 speedup 25 verdict
# peers: 1 backend 2 B 3 H 4 N 5 d 6 causal 7 time_ms 8 tflops 9 note
if (!exists("outdir")) outdir = 'results/phase4'
if (!exists("term")) term = 'pngcairo'
f = outdir.'/phase4_sweep.csv'
fp = outdir.'/phase4_peers.csv'
set datafile separator ','
set datafile commentschars '#'
set grid
set key top left
MiB = 1048576.0
rows(k, dd, c) = sprintf("< awk -F, '$3 == \"tokens16k\" && $1 == \"%s\" && $9 == %d && $10 == %d' '%s'", k, dd, c, f)
model(k, c) = sprintf("< awk -F, '$3 == \"vsN\" && $1 ~ /%s/ && $10 == %d' '%s'", k, c, f)
peer(b, dd, c) = sprintf("< awk -F, '$1 == \"%s\" && $5 == %d && $6 == %d && $8 != \"\"' '%s' 2>/dev/null", b, dd, c, fp)
npeer = int(system("cat '".fp."' 2>/dev/null | grep -c '^flash,'"))

# the GPU of a CSV, from its metadata header ('# gpu: NAME | ...')
gpu_of(file) = system("grep -m1 '^# gpu:' '".file."' 2>/dev/null | sed 's/^# gpu: //; s/ |.*//'")

# 0. the ablation ladder of `make phase4 run` (rows with sweep = ladder in phase4.csv: d = 64)
#    and of `build/phase4 --kernel ladder --d 128` (phase4_ladder128.csv), side by side
fl = outdir.'/phase4.csv'
fl128 = outdir.'/phase4_ladder128.csv'
nlad = int(system("cat '".fl."' 2>/dev/null | grep -c ',ladder,'"))
have128 = int(system("cat '".fl128."' 2>/dev/null | grep -c ',ladder,'")) > 0
if (nlad > 0) {
    set terminal term size 1000,600 font ',11'
    set output outdir.'/phase4_ladder.png'
    set title sprintf("Ablation ladder on %s: each FA2 change alone\n(fp16, causal, N = 4096, B = 4, hidden 2048; d = 64%s)", gpu_of(fl), have128 ? ' and d = 128' : '')
    set style data histogram
    set style histogram clustered gap 1
    set style fill solid 0.8 border -1
    set ylabel 'TFLOP/s (causal FLOPs)'
    set yrange [0:*]
    set xtics rotate by -20 nomirror
    set key top left
    set grid ytics
    # kernel, TFLOP/s at d = 64, TFLOP/s at d = 128 (empty without the d = 128 file), by row
    lad = sprintf("< awk -F, 'FNR == 1 {f++} $3 == \"ladder\" {if (f == 1) {k[++n] = $1; a[n] = $14} else b[++m] = $14} END {for (i = 1; i <= n; i++) print k[i] \",\" a[i] \",\" b[i]}' '%s' %s", fl, have128 ? "'".fl128."'" : '')
    if (have128) {
        plot lad using 2:xtic(1) lc rgb '#d62728' title 'd = 64', '' using 3 lc rgb '#1f77b4' title 'd = 128'
    } else {
        plot lad using 2:xtic(1) lc rgb '#d62728' title 'd = 64'
    }
    unset style data
    set style data lines
    set xtics norotate mirror
    set key top left
    set grid
}
MiB = 1048576.0
if (system("test -f '".f."' && echo y") ne "y") {
    # Without the sweep (make phase4 run, GPU or not): the FA1 / FA2 ratios from the closed
    # forms of docs/03_fa1.md and docs/04_fa2.md (fa1.h, fa2.h), one head, d = 64, FA1 at
    # M = 128 KiB (Bc = 127), FA2 with Br = 64, Bc = 128: no CSV and no GPU needed.
    print 'phase4 plots: no '.f.' (make phase4-sweep): drawing the FA1/FA2 model ratios from the closed forms only'
    dd = 64
    fa1b(n) = 4*n*(dd + 2) + 4*n*dd + ceil(n / 127.0) * (2*n*dd + 8*n*(dd + 2))
    keys(n, c) = c ? (sum [i=1:int(n / 64)] ceil(i * 64.0 / 128) * 128) : (n / 64) * n
    fa2b(n, c) = 2*n*dd + 4*dd*keys(n, c) + 4*n*(dd + 1)
    fa1f(n) = n * (5*n + ceil(n / 127.0) * (4*dd + 10) + 2)
    fa2f(n) = n * (5*n + ceil(n / 128.0) * (dd + 5) + dd + 3)
    set terminal term size 1400,550 font ',11'
    set output outdir.'/phase4_model.png'
    set multiplot layout 1,2 title 'FA1 / FA2, closed forms (d = 64, one head; FA1 with M = 128 KiB): how many times more FA1 does'
    set logscale x 2
    set xlabel 'N (= N_q = N_{kv})'
    set yrange [0:*]
    set ylabel 'FA1 bytes / FA2 bytes'
    set title 'HBM traffic'
    plot sample [k=8:14:1] '+' using (2**$1):(fa1b(2**$1) / fa2b(2**$1, 0)) with linespoints lw 2 pt 7 title 'not causal', \
         [k=8:14:1] '+' using (2**$1):(fa1b(2**$1) / fa2b(2**$1, 1)) with linespoints lw 2 pt 5 dt 2 title 'causal (FA2 skips masked K/V blocks)'
    set ylabel 'FA1 non-matmul FLOPs / FA2 non-matmul FLOPs'
    set title 'non-matmul FLOPs (exp, max, rescale, divide), not causal'
    plot sample [k=8:14:1] '+' using (2**$1):(fa1f(2**$1) / fa2f(2**$1)) with linespoints lw 2 pt 7 title 'not causal'
    unset multiplot
    exit
}

# 1. the model: how many times more HBM bytes and non-matmul FLOPs FA1 needs than FA2, vs N
#    (d = 64, one head), on a linear axis so that the ~1.3x shows. One line of the awk per
#    (N, causal): N, causal, FA1 bytes / FA2 bytes, FA1 non-matmul / FA2 non-matmul.
ratio(c) = sprintf("< awk -F, '$3 == \"vsN\" && $10 == %d {b = ($15 != \"\") ? $15 : $16; if ($1 ~ /fa1-formula/) {f1[$7] = b; n1[$7] = $18} else if ($1 ~ /cpu-model|^formula/) {f2[$7] = b; n2[$7] = $18}} END {for (n in f2) if (n in f1) print n \",\" f1[n] / f2[n] \",\" n1[n] / n2[n]}' '%s' | sort -t, -k1 -n", c, f)
set terminal term size 1400,550 font ',11'
set output outdir.'/phase4_model.png'
set multiplot layout 1,2 title 'FA1 / FA2, counted by the CPU models (d = 64, one head; FA1 with M = 128 KiB): how many times more FA1 does'
set logscale x 2
set xlabel 'N (= N_q = N_{kv})'
set yrange [0:*]
set ylabel 'FA1 bytes / FA2 bytes'
set title 'HBM traffic'
plot ratio(0) using 1:2 with linespoints lw 2 pt 7 lc 1 title 'not causal', \
     ratio(1) using 1:2 with linespoints lw 2 pt 5 dt 2 lc 2 title 'causal (FA2 skips masked K/V blocks)'
set ylabel 'FA1 non-matmul FLOPs / FA2 non-matmul FLOPs'
set title 'non-matmul FLOPs (exp, max, rescale, divide)'
plot ratio(0) using 1:3 with linespoints lw 2 pt 7 lc 1 title 'not causal', \
     ratio(1) using 1:3 with linespoints lw 2 pt 5 dt 2 lc 2 title 'causal (FA2 skips masked K/V blocks)'
unset multiplot
unset logscale
set yrange [*:*]

ngpu = int(system("cat '".f."' 2>/dev/null | grep -c ',tokens16k,'"))
if (ngpu == 0) { print 'phase4 plots: no GPU rows in '.f.': drew the model figure only'; exit }

# 2. the headline: forward TFLOP/s vs N, d = 64 / 128, causal and not (the FA2 paper's Fig.)
set terminal term size 1400,1000 font ',11'
set output outdir.'/phase4_speed.png'
set multiplot layout 2,2 title sprintf('Attention forward on %s: fp16, hidden 2048 (H = 2048/d), B x N = 16k tokens', gpu_of(f))
set logscale x 2
set xlabel 'sequence length N'
set ylabel 'TFLOP/s'
set yrange [0:*]
set offsets 0, 0, graph 0.4, 0   # room above the curves for the key
set key top left maxrows 5 font ',10' samplen 2
do for [c in "0 1"] { do for [dd in "64 128"] {
    set title sprintf('d = %s, %s', dd, c eq "1" ? 'causal' : 'not causal')
    if (npeer > 0) {
    plot rows('mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 7 lc rgb '#d62728' title 'fa2-mma', \
         rows('wgmma-tma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 15 lc rgb '#9467bd' title 'fa2-wgmma-tma (Hopper)', \
         rows('wgmma-ws', dd+0, c+0) using 7:14 with linespoints lw 3 pt 3 lc rgb '#8c564b' title 'fa2-wgmma-ws (Hopper)', \
         rows('wgmma', dd+0, c+0) using 7:14 with linespoints lw 2 pt 14 lc rgb '#c5b0d5' title 'fa2-wgmma (Hopper)', \
         rows('simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 6 lc rgb '#ff9896' title 'fa2-simple', \
         rows('fa1-mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 5 lc rgb '#1f77b4' title 'fa1-mma', \
         rows('fa1-simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 4 lc rgb '#aec7e8' title 'fa1-simple', \
         rows('cublas', dd+0, c+0) using 7:14 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'cuBLAS (phase 1)', \
         peer('flash', dd+0, c+0) using 4:8 with linespoints lw 2 pt 13 dt 2 lc rgb '#000000' title 'SDPA flash (FA2)', \
         peer('cudnn', dd+0, c+0) using 4:8 with linespoints lw 2 pt 11 dt 2 lc rgb '#7f7f7f' title 'SDPA cuDNN'
    } else {
    plot rows('mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 7 lc rgb '#d62728' title 'fa2-mma', \
         rows('wgmma-tma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 15 lc rgb '#9467bd' title 'fa2-wgmma-tma (Hopper)', \
         rows('wgmma-ws', dd+0, c+0) using 7:14 with linespoints lw 3 pt 3 lc rgb '#8c564b' title 'fa2-wgmma-ws (Hopper)', \
         rows('wgmma', dd+0, c+0) using 7:14 with linespoints lw 2 pt 14 lc rgb '#c5b0d5' title 'fa2-wgmma (Hopper)', \
         rows('simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 6 lc rgb '#ff9896' title 'fa2-simple', \
         rows('fa1-mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 5 lc rgb '#1f77b4' title 'fa1-mma', \
         rows('fa1-simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 4 lc rgb '#aec7e8' title 'fa1-simple', \
         rows('cublas', dd+0, c+0) using 7:14 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'cuBLAS (phase 1)'
    }
} }
unset multiplot
set offsets 0, 0, 0, 0

# 3. the FA2 / FA1 speedup vs N (fa2-mma over fa1-mma, same run); causal and not differ
#    by line style AND point type (filled / open), with long legend samples
set terminal term size 900,600 font ',11'
set output outdir.'/phase4_speedup.png'
set title sprintf("FlashAttention-2 / FlashAttention-1 speedup on %s\n(fa2-mma over fa1-mma, same inputs, same run)", gpu_of(f))
set ylabel 'speedup (x, log scale)'
set xlabel 'sequence length N'
set logscale x 2
set logscale y 2
set yrange [1:64]
set key top left box opaque samplen 5 spacing 1.2
plot rows('mma', 64, 0) using 7:24 with linespoints lw 2 pt 7 ps 1.3 lc 1 title 'd = 64, not causal', \
     rows('mma', 128, 0) using 7:24 with linespoints lw 2 pt 5 ps 1.3 lc 2 title 'd = 128, not causal', \
     rows('mma', 64, 1) using 7:24 with linespoints lw 2 pt 6 ps 1.3 dt 2 lc 1 title 'd = 64, causal', \
     rows('mma', 128, 1) using 7:24 with linespoints lw 2 pt 4 ps 1.3 dt 2 lc 2 title 'd = 128, causal'
