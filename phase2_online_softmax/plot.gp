# phase2_online_softmax/plot.gp - phase 2's figures, from the CSVs build/phase2 writes.
#   make phase2 plot   (tools/plot.sh runs: gnuplot -e "outdir='results/phase2'; term='pngcairo'" this file)
#
#   phase2_accesses.png  memory accesses per element of naive / safe / online (counted)
#   phase2_overflow.png  the naive softmax breaks once scores pass ln(FLT_MAX) = 88.7
#   phase2_gbps.png      GPU row softmax GB/s vs row length, safe vs online, copy bandwidth
#                        (only when phase2_sweep.csv exists: `build/phase2 --sweep` on a GPU)
if (!exists("outdir")) outdir = 'results/phase2'
if (!exists("term")) term = 'pngcairo'
set datafile separator ','
set key autotitle columnhead
main = outdir.'/phase2.csv'
ovf  = outdir.'/phase2_overflow.csv'
swp  = outdir.'/phase2_sweep.csv'
have(f) = system('test -f "'.f.'" && echo 1 || echo 0') eq "1"

# ---- 1. accesses per element ---------------------------------------------------------
if (have(main)) {
    eval('set terminal '.term.' size 720,480 font ",11"')
    set output outdir.'/phase2_accesses.png'
    set title "Softmax of one row: memory accesses per element (counted by the HBM meter)"
    set style fill solid 0.7 border -1
    set boxwidth 0.55
    set yrange [0:5]
    set ylabel 'loads + stores per element'
    set grid ytics
    set xtics nomirror
    unset key
    # data rows 1..3 of phase2.csv are the three CPU softmaxes (row 0: the streaming example)
    plot main every ::1::3 using 0:5:xtic(1) with boxes lc rgb '#4a7ebb', \
         ''   every ::1::3 using 0:($5 + 0.2):(sprintf('%.0f', $5)) with labels
    unset title; unset yrange; unset ylabel; unset grid
    set key
}

# ---- 2. the overflow demonstration ---------------------------------------------------
if (have(ovf)) {
    eval('set terminal '.term.' size 800,480 font ",11"')
    set output outdir.'/phase2_overflow.png'
    set title "Softmax of 1024 scores c + u, u in [-1, 1): finite outputs (left) and error (right)"
    set xlabel 'score offset c'
    set ylabel 'finite outputs (fraction)'
    set yrange [-0.05:1.1]
    set y2label 'rel L2 error vs fp64 (NaN: not drawn)'
    set logscale y2
    set y2range [1e-8:10]
    set format y2 '10^{%L}'
    set y2tics
    set ytics nomirror
    set arrow 1 from 88.72, graph 0 to 88.72, graph 1 nohead dt 2 lc rgb 'gray40'
    set label 1 'ln(FLT\_MAX) = 88.7' at 89.5, graph 0.5
    set key center left
    plot ovf using 1:2 with linespoints pt 7 lw 2 title 'naive: finite outputs', \
         ''  using 1:3 with lines lw 6 lc rgb '#9ecae1' title 'safe: finite outputs', \
         ''  using 1:4 with lines lw 2 dt 2 lc rgb '#08519c' title 'online: finite outputs', \
         ''  using 1:($5 > 0 ? $5 : NaN) axes x1y2 with points pt 7 ps 1.5 lc rgb '#756bb1' title 'naive: rel L2 error', \
         ''  using 1:($6 > 0 ? $6 : NaN) axes x1y2 with points pt 4 lc rgb '#e6550d' title 'safe: rel L2 error', \
         ''  using 1:($7 > 0 ? $7 : NaN) axes x1y2 with points pt 6 lc rgb '#31a354' title 'online: rel L2 error'
    set format y2; unset arrow 1; unset label 1; unset logscale y2; unset y2tics; unset y2label
    unset title; unset xlabel; unset ylabel; unset yrange; unset y2range
    set ytics mirror
}

# ---- 3. GPU GB/s vs row length -------------------------------------------------------
if (have(swp)) {
    gpu = system('grep -m1 "^# gpu:" "'.swp.'" | cut -d"|" -f1 | cut -c8- | sed "s/ *$//"')
    copy = real(system('awk -F, ''!/^#/ && $1 ~ /^[0-9]/ {print $9; exit}'' "'.swp.'"'))
    eval('set terminal '.term.' size 900,640 font ",11"')
    set output outdir.'/phase2_gbps.png'
    set title sprintf("Row softmax, 4096 fp32 rows, on %s: bytes each algorithm moves / time", gpu)
    set xlabel 'row length n (elements)'
    set logscale x 2
    set format x '%.0f'
    set ylabel 'GB/s'
    set yrange [0:*]
    set y2label 'speedup online / safe'
    set y2range [0:2]
    set y2tics 0.25
    set ytics nomirror
    set grid
    set key below maxrows 4
    plot swp using 1:6 with linespoints pt 7 lw 2 lc rgb '#08519c' title 'online (2-pass), 12 B/elem', \
         ''  using 1:5 with linespoints pt 5 lw 2 lc rgb '#e6550d' title 'safe (3-pass), 16 B/elem', \
         ''  using 1:8 with linespoints pt 6 dt 2 lc rgb '#08519c' title 'online, effective (8 B/elem)', \
         ''  using 1:7 with linespoints pt 4 dt 2 lc rgb '#e6550d' title 'safe, effective (8 B/elem)', \
         copy with lines lw 2 lc rgb 'black' title sprintf('measured copy bandwidth %.0f GB/s', copy), \
         0.7 * copy with lines dt 3 lc rgb 'gray40' title '70% of copy', \
         swp using 1:10 axes x1y2 with linespoints pt 9 lc rgb '#31a354' title 'speedup online/safe (right axis)'
}
