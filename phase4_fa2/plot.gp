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

# 0. the ablation ladder of `make phase4 run` (rows with sweep = ladder in phase4.csv)
fl = outdir.'/phase4.csv'
nlad = int(system("cat '".fl."' 2>/dev/null | grep -c ',ladder,'"))
if (nlad > 0) {
    set terminal term size 1000,550 font ',11'
    set output outdir.'/phase4_ladder.png'
    set title 'Ablation ladder: each FA2 change alone (fp16, causal, N = 4096, B = 4, hidden 2048)'
    set style data histogram
    set style fill solid 0.8 border -1
    set boxwidth 0.7
    set ylabel 'TFLOP/s'
    set yrange [0:*]
    set xtics rotate by -20
    unset key
    plot "< awk -F, '$3 == \"ladder\"' '".fl."'" using 14:xtic(1) lc rgb '#d62728'
    unset style data
    set style data lines
    set xtics norotate
    set key top left
    set grid
}
if (system("test -f '".f."' && echo y") ne "y") { print 'phase4 plots: no '.f.' yet (make phase4-sweep): drew the ladder only'; exit }

# 1. the model: HBM bytes and non-matmul FLOPs of FA2 and FA1 vs N (d = 64, one head)
set terminal term size 1400,550 font ',11'
set output outdir.'/phase4_model.png'
set multiplot layout 1,2 title 'FA2 vs FA1, counted by the CPU models (d = 64, one head; FA1 with M = 128 KiB)'
set logscale xy 2
set xlabel 'N (= N_q = N_{kv})'
set ylabel 'HBM bytes (MiB)'
set title 'HBM traffic'
plot model('fa1-formula', 0) using 7:($16/MiB) with linespoints lw 2 pt 5 lc 1 title 'FA1', \
     model('fa1-formula', 1) using 7:($16/MiB) with linespoints lw 2 pt 5 dt 2 lc 1 title 'FA1 causal', \
     model('cpu-model|^formula', 0) using 7:($16/MiB) with linespoints lw 2 pt 7 lc 2 title 'FA2', \
     model('cpu-model|^formula', 1) using 7:($16/MiB) with linespoints lw 2 pt 7 dt 2 lc 2 title 'FA2 causal'
set ylabel 'non-matmul FLOPs'
set logscale y 10
set format y '10^{%T}'
set title 'non-matmul FLOPs (exp, max, rescale, divide)'
plot model('fa1-formula', 0) using 7:18 with linespoints lw 2 pt 5 lc 1 title 'FA1', \
     model('fa1-formula', 1) using 7:18 with linespoints lw 2 pt 5 dt 2 lc 1 title 'FA1 causal', \
     model('cpu-model|^formula', 0) using 7:18 with linespoints lw 2 pt 7 lc 2 title 'FA2', \
     model('cpu-model|^formula', 1) using 7:18 with linespoints lw 2 pt 7 dt 2 lc 2 title 'FA2 causal'
unset multiplot
unset logscale
set format y '%g'

ngpu = int(system("cat '".f."' 2>/dev/null | grep -c ',tokens16k,'"))
if (ngpu == 0) { print 'phase4 plots: no GPU rows in '.f.': drew the model figure only'; exit }

# 2. the headline: forward TFLOP/s vs N, d = 64 / 128, causal and not (the FA2 paper's Fig.)
set terminal term size 1400,1000 font ',11'
set output outdir.'/phase4_speed.png'
set multiplot layout 2,2 title 'Attention forward on the GPU: fp16, hidden 2048 (H = 2048/d), B x N = 16k tokens'
set logscale x 2
set xlabel 'sequence length N'
set ylabel 'TFLOP/s'
set yrange [0:*]
set offsets 0, 0, graph 0.4, 0   # room above the curves for the key
set key top left maxrows 4 font ',10' samplen 2
do for [c in "0 1"] { do for [dd in "64 128"] {
    set title sprintf('d = %s, %s', dd, c eq "1" ? 'causal' : 'not causal')
    if (npeer > 0) {
    plot rows('mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 7 lc rgb '#d62728' title 'fa2-mma', \
         rows('simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 6 lc rgb '#ff9896' title 'fa2-simple', \
         rows('fa1-mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 5 lc rgb '#1f77b4' title 'fa1-mma', \
         rows('fa1-simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 4 lc rgb '#aec7e8' title 'fa1-simple', \
         rows('cublas', dd+0, c+0) using 7:14 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'cuBLAS (phase 1)', \
         peer('flash', dd+0, c+0) using 4:8 with linespoints lw 2 pt 13 dt 2 lc rgb '#000000' title 'SDPA flash (FA2)', \
         peer('cudnn', dd+0, c+0) using 4:8 with linespoints lw 2 pt 11 dt 2 lc rgb '#7f7f7f' title 'SDPA cuDNN'
    } else {
    plot rows('mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 7 lc rgb '#d62728' title 'fa2-mma', \
         rows('simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 6 lc rgb '#ff9896' title 'fa2-simple', \
         rows('fa1-mma', dd+0, c+0) using 7:14 with linespoints lw 3 pt 5 lc rgb '#1f77b4' title 'fa1-mma', \
         rows('fa1-simple', dd+0, c+0) using 7:14 with linespoints lw 2 pt 4 lc rgb '#aec7e8' title 'fa1-simple', \
         rows('cublas', dd+0, c+0) using 7:14 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'cuBLAS (phase 1)'
    }
} }
unset multiplot
set offsets 0, 0, 0, 0

# 3. the FA2 / FA1 speedup vs N (fa2-mma over fa1-mma, same run)
set terminal term size 900,600 font ',11'
set output outdir.'/phase4_speedup.png'
set title 'FlashAttention-2 / FlashAttention-1 speedup (fa2-mma over fa1-mma, same inputs, same run)'
set ylabel 'speedup (x, log scale)'
set logscale y 2
set yrange [1:64]
set key top left
plot rows('mma', 64, 0) using 7:24 with linespoints lw 2 pt 7 lc 1 title 'd = 64', \
     rows('mma', 128, 0) using 7:24 with linespoints lw 2 pt 5 lc 2 title 'd = 128', \
     rows('mma', 64, 1) using 7:24 with linespoints lw 2 pt 7 dt 2 lc 1 title 'd = 64 causal', \
     rows('mma', 128, 1) using 7:24 with linespoints lw 2 pt 5 dt 2 lc 2 title 'd = 128 causal', \
     1.7 with lines lw 1 dt 3 lc rgb '#444444' title 'target 1.7x'
