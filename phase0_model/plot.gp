# phase0_model/plot.gp - chapter 0's figures, from the CSVs build/phase0 writes.
#   gnuplot -e "outdir='results/phase0'" phase0_model/plot.gp    (or: make phase0 plot)
# memory_wall.png : bytes of S + P (fp16) vs N, log-log, against 80 GB of HBM
# roofline.png    : attainable TFLOP/s vs arithmetic intensity, with attention's points
if (!exists("outdir")) outdir = "results/phase0"
if (!exists("term")) term = (strstrt(GPVAL_TERMINALS, "pngcairo") > 0 ? "pngcairo" : "png")
eval "set terminal ".term." size 960,640"
set datafile separator comma
set datafile commentschars "#"
set key top left box opaque
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set logscale xy 2

# ---- (a) the memory wall ------------------------------------------------------------
# memory_wall.csv: N, s_1head_fp16, sp_1head_fp16, s_b32h8_fp16, sp_b32h8_fp16, sp_b32h8_fp32
f = outdir."/memory_wall.csv"
GiB = 1024.0**3
hbm = 80e9 / GiB                                   # 80 GB (decimal, as sold) = 74.5 GiB
set output outdir."/memory_wall.png"
set title "Memory wall: S and P of standard attention (fp16) vs sequence length"
set xlabel "sequence length N (N_q = N_{kv})"
set ylabel "bytes of S + P  [GiB]"
set logscale y 10
set format y "10^{%L}"
set yrange [1e-4:1e5]
set xrange [256:131072]
set xtics (256, 1024, 4096, 16384, 65536)
set arrow 1 from graph 0, first hbm to graph 1, first hbm nohead lw 2 lc rgb "#c00000" dt 2
set label 1 sprintf("80 GB of HBM (A100/H100 80GB) = %.1f GiB", hbm) at 300, hbm * 2.5 tc rgb "#c00000"
plot f every ::1 using 1:($5 / GiB) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "B=32, H=8 (fp16)", \
     f every ::1 using 1:($6 / GiB) with linespoints lw 1 pt 6 dt 3 lc rgb "#1f77b4" title "B=32, H=8 (fp32)", \
     f every ::1 using 1:($3 / GiB) with linespoints lw 2 pt 5 lc rgb "#2ca02c" title "one head (B=1, H=1)"
unset arrow 1
unset label 1
unset format y
unset yrange
unset xrange

# ---- (b) the roofline ---------------------------------------------------------------
# roofline_lines.csv: intensity, one column per GPU (attainable TFLOP/s)
# roofline.csv: gpu,source,bw_gbps,peak_tflops,ridge,kernel,d,N,B,H,flops,hbm_bytes,
#               intensity,attainable_tflops,bound,min_time_ms,primary,label
fl = outdir."/roofline_lines.csv"
fp = outdir."/roofline.csv"
ncol = int(system("grep -v '^#' '".fl."' | head -n 1 | tr ',' '\\n' | wc -l"))
set output outdir."/roofline.png"
set title "Roofline: forward attention, N = 4096, fp16 (B = 4, H = 2048/d)"
set xlabel "arithmetic intensity  [FLOP / byte of HBM traffic]"
set ylabel "attainable  [TFLOP/s]"
set logscale x 10
set logscale y 10
set xrange [1:10000]
set yrange [10:2000]
set xtics auto
set key bottom right box opaque
plot for [c=2:ncol] fl using 1:c with lines lw 2 title columnheader(c), \
     fp every ::1 using 13:($17 == 1 ? $14 : 1/0) with points pt 7 ps 1.6 lc rgb "black" title "attention (labelled roof)", \
     fp every ::1 using 13:($17 == 1 && strlen(strcol(18)) > 0 ? $14 : 1/0):18 with labels offset char -1,0.8 right font ",10" notitle, \
     fp every ::1 using 13:($17 == 1 ? 1/0 : $14) with points pt 6 ps 1.2 lc rgb "#666666" title "the same on the other roofs"
