# phase6_decoding/plot.gp - the figures of chapter 6 (CPU model only for now), from
# results/phase6/phase6_sweep.csv (make phase6 sweep).
#   tools/plot.sh phase6_decoding/plot.gp OUTDIR   (make phase6 plot)
# Columns: 1 kernel 2 device 3 sweep 4 B 5 H 6 H_kv 7 N_q 8 N_kv 9 d 10 causal 11 Br 12 Bc
# 13 time_ms 14 hbm_model 15 hbm_formula 16 max_abs 17 rel_l2 18 L_max_abs 19 rel_prev 20 verdict
if (!exists("outdir")) outdir = 'results/phase6'
if (!exists("term")) term = 'pngcairo'
f = outdir.'/phase6_sweep.csv'
fr = outdir.'/phase6.csv'
set datafile separator ','
set datafile commentschars '#'
set grid
set key top left
MiB = 1048576.0
Sof(c) = 0 + substr(c, strstrt(c, "S") + 1, 99)
set logscale x 2
set xlabel 'splits S'
set ylabel 'HBM bytes (MiB)'
set terminal term size 900,560
# 1. the default run (phase6.csv): the split rows' counted bytes vs S
if (int(system("cat '".fr."' 2>/dev/null | grep -c '^split-S'")) > 0) {
    set output outdir.'/phase6_run_bytes.png'
    set title 'Flash-Decoding CPU model, the default problem: HBM bytes vs splits S'
    plot sprintf("< grep '^split-S' '%s'", fr) using (Sof(stringcolumn(1))):($14/MiB) with linespoints title 'counted (= formula)'
}
# 2. the sweep (phase6_sweep.csv): bytes vs S at L = 4096 (counted) and 65536 (formula)
if (int(system("cat '".f."' 2>/dev/null | grep -c ',vsS,'")) > 0) {
    pts(L) = sprintf("< awk -F, '$3 == \"vsS\" && $8 == %d' '%s'", L, f)
    set output outdir.'/phase6_bytes_vs_S.png'
    set title 'Flash-Decoding CPU model: HBM bytes vs splits S'
    plot pts(4096) using (Sof(stringcolumn(1))):($15/MiB) with linespoints title 'L = 4096', \
         pts(65536) using (Sof(stringcolumn(1))):($15/MiB) with linespoints title 'L = 65536'
}
