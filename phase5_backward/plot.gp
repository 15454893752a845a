# phase5_backward/plot.gp - the figures of chapter 5 (CPU models; the GPU kernels come later).
#   tools/plot.sh phase5_backward/plot.gp OUTDIR   (make phase5 plot)
# Columns: 1 kernel 2 device 3 sweep 4 B 5 H 6 H_kv 7 N_q 8 N_kv 9 d 10 causal 11 Br 12 Bc
# 13 time_ms 14 hbm_model 15 hbm_formula 16 hbm_std 17 max_abs 18 rel_l2 19 rel_prev 20 verdict
if (!exists("outdir")) outdir = 'results/phase5'
if (!exists("term")) term = 'pngcairo'
set datafile separator ','
set datafile commentschars '#'
set grid
MiB = 1048576.0

# 1. `make phase5 run`: the HBM bytes of each model on the run's problem (phase5.csv)
f = outdir.'/phase5.csv'
if (int(system("cat '".f."' 2>/dev/null | grep -c ',cpu,'")) > 0) {
    set terminal term size 800,450
    set output outdir.'/phase5_bytes.png'
    set title "Backward pass, HBM bytes counted by the CPU models (".system("grep -m1 '^std-bwd,' '".f."' | awk -F, '{ printf \"B=%s H=%s N_q=%s N_kv=%s d=%s causal=%s\", $4, $5, $7, $8, $9, $10 }'").")"
    set style fill solid 0.6
    set boxwidth 0.6
    set ylabel 'MiB'
    set yrange [0:*]
    unset key
    plot "< awk -F, '$3 == \"-\" && $14 != \"\"' '".f."'" using 0:($14 / MiB):xtic(1) with boxes
    unset output
}

# 2. `make phase5 sweep`: bytes vs N, standard (fp16 S, P, dP, dS) against FA2's Alg. 2
fs = outdir.'/phase5_sweep.csv'
if (int(system("cat '".fs."' 2>/dev/null | grep -c ',vsN,'")) > 0) {
    set terminal term size 800,450
    set output outdir.'/phase5_sweep_bytes.png'
    set title 'Backward HBM bytes vs N (d = 64, one head): counted up to N = 512, formula beyond'
    set logscale xy 2
    set xlabel 'N'
    set ylabel 'bytes'
    set key top left
    set style fill empty
    set yrange [*:*]
    sel(k, c) = sprintf("< awk -F, '$3 == \"vsN\" && $1 ~ /%s/ && $10 == %d' '%s'", k, c, fs)
    plot sel('std-bwd$|std-formula', 0) using 7:15 with linespoints title 'standard (fp16 S, P, dP, dS)', \
         sel('fa2-bwd|fa2-formula', 0) using 7:15 with linespoints title 'FA2 Alg. 2', \
         sel('fa2-bwd|fa2-formula', 1) using 7:15 with linespoints title 'FA2 Alg. 2, causal'
    unset output
}
