# phase4_fa2/masks_speed.gp - chapter 4c's speed figure: TFLOP/s of the visible (row, key) pairs
# on each mask at one N and d, ours beside FlexAttention and SDPA with a dense mask, forward
# and backward. Data: OUTDIR/masks_plot.dat, written by tools/masks_table.py from
# tools/masks_sweep.sh's rows (spec ours_fwd flex_fwd sdpa_dense_fwd ours_bwd flex_bwd).
if (!exists("outdir")) outdir = 'results/masks'
if (!exists("term")) term = 'pngcairo'
if (term eq 'pngcairo') { set terminal pngcairo size 1400,560 font ',11' } else { set terminal png size 1400,560 }
set output outdir.'/masks_speed.png'
set termoption noenhanced
point = system(sprintf("head -n 1 '%s/masks_plot.dat' | sed 's/^# //; s/:.*//'", outdir))
set title sprintf("FlashMask's masks, %s, B = 1, H = 16, fp16: TFLOP/s of the visible pairs (higher is better)", point)
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top right
set ylabel 'TFLOP/s (visible pairs)'
set yrange [0:*]
set grid ytics
set xtics rotate by -25 scale 0
plot outdir.'/masks_plot.dat' using 2:xtic(1) title 'ours, forward' lc rgb '#1f78b4', \
     '' using 3 title 'FlexAttention, forward' lc rgb '#a6cee3', \
     '' using 4 title 'SDPA dense mask, forward' lc rgb '#cccccc', \
     '' using 5 title 'ours, backward' lc rgb '#e31a1c', \
     '' using 6 title 'FlexAttention, backward' lc rgb '#fb9a99'
