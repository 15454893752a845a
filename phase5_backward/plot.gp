# phase5_backward/plot.gp - the figures of chapter 5, from results/phase5/phase5.csv (make
# phase5 run), phase5_sweep.csv (make phase5 sweep) and the peers' CSVs (tools/bwd_peers.py).
#   tools/plot.sh phase5_backward/plot.gp OUTDIR   (make phase5 plot)
# Columns: 1 kernel 2 device 3 sweep 4 B 5 H 6 H_kv 7 N_q 8 N_kv 9 d 10 causal 11 Br 12 Bc
# 13 time_ms 14 tflops 15 hbm_model 16 hbm_formula 17 hbm_std 18 sp_bytes 19 max_abs
# 20 rel_l2 21 rel_prev 22 speedup 23 verdict
# peers: 1 backend 2 B 3 H 4 N 5 d 6 causal 7 time_ms 8 tflops 9 note
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
    plot "< awk -F, '$3 == \"-\" && $2 == \"cpu\" && $15 != \"\"' '".f."'" using 0:($15 / MiB):xtic(1) with boxes
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
    plot sel('std-bwd$|std-formula', 0) using 7:16 with linespoints title 'standard (fp16 S, P, dP, dS)', \
         sel('fa2-bwd|fa2-formula', 0) using 7:16 with linespoints title 'FA2 Alg. 2', \
         sel('fa2-bwd|fa2-formula', 1) using 7:16 with linespoints title 'FA2 Alg. 2, causal'
    unset output
    unset logscale
}

# 3-5. the GPU sweep (the FA2 paper's setting: hidden 2048, B x N = 16k tokens)
fp = outdir.'/phase5_peers.csv'
fpb = outdir.'/phase5_peers_fwdbwd.csv'
gpu_of(file) = system("grep -m1 '^# gpu:' '".file."' 2>/dev/null | sed 's/^# gpu: //; s/ |.*//'")
rows(k, dd, c) = sprintf("< awk -F, '$3 == \"tokens16k\" && $1 == \"%s\" && $9 == %d && $10 == %d && $14 != \"\"' '%s'", k, dd, c, fs)
peer(file, b, dd, c) = sprintf("< awk -F, '$1 == \"%s\" && $5 == %d && $6 == %d && $8 != \"\"' '%s' 2>/dev/null", b, dd, c, file)
if (int(system("cat '".fs."' 2>/dev/null | grep -c ',tokens16k,'")) > 0) {
    set terminal term size 1200,800 font ',10'
    set output outdir.'/phase5_tflops.png'
    set multiplot layout 2,2 title sprintf("Backward pass on %s: TFLOP/s (2.5x the forward's FLOPs) vs N, fp16, hidden 2048, 16k tokens", gpu_of(fs))
    set logscale x 2
    set xlabel 'N'
    set ylabel 'TFLOP/s'
    set yrange [0:*]
    set key top left
    do for [c = 0:1] {
        do for [dd in "64 128"] {
            set title sprintf("d = %s, %s", dd, c ? 'causal' : 'not causal')
            plot rows('std', int(dd), c) using 7:14 with linespoints title 'std (cuBLAS, S P dP dS in HBM)', \
                 rows('simple', int(dd), c) using 7:14 with linespoints title 'simple', \
                 rows('mma', int(dd), c) using 7:14 with linespoints lw 2 title 'mma (dQ atomics)', \
                 rows('mma2d', int(dd), c) using 7:14 with linespoints lw 2 title 'mma2d (2-D warp grids)', \
                 rows('wgmma', int(dd), c) using 7:14 with linespoints lw 2 title 'wgmma (Hopper, FA3 step 1)', \
                 rows('wgmma-ws', int(dd), c) using 7:14 with linespoints lw 2 title 'wgmma-ws (Hopper, FA3 structure)', \
                 rows('two-pass', int(dd), c) using 7:14 with linespoints title 'two-pass (deterministic)', \
                 peer(fp, 'flash', int(dd), c) using 4:8 with linespoints dt 2 title 'PyTorch SDPA flash (FA2)', \
                 peer(fp, 'cudnn', int(dd), c) using 4:8 with linespoints dt 3 title 'PyTorch SDPA cuDNN'
        }
    }
    unset multiplot
    unset output

    set output outdir.'/phase5_fwdbwd.png'
    set multiplot layout 2,2 title sprintf("Training step (forward + backward) on %s: TFLOP/s (3.5x the forward's FLOPs) vs N", gpu_of(fs))
    do for [c = 0:1] {
        do for [dd in "64 128"] {
            set title sprintf("d = %s, %s", dd, c ? 'causal' : 'not causal')
            plot rows('fwd-bwd', int(dd), c) using 7:14 with linespoints lw 2 title 'phase 4 fa2-mma + phase 5 mma', \
                 peer(fpb, 'flash', int(dd), c) using 4:8 with linespoints dt 2 title 'PyTorch SDPA flash (FA2)', \
                 peer(fpb, 'cudnn', int(dd), c) using 4:8 with linespoints dt 3 title 'PyTorch SDPA cuDNN'
        }
    }
    unset multiplot
    unset output

    # 6. chapter 5b: the Hopper steps beside FA2 and cuDNN (rows absent off sm_90: no lines)
    if (int(system("grep -c '^wgmma-ws,gpu,tokens16k,.*PASS' '".fs."' 2>/dev/null")) > 0) {
        set output outdir.'/phase5_hopper.png'
        set multiplot layout 2,2 title sprintf("The backward on Hopper, step by step, on %s: TFLOP/s vs N, fp16, hidden 2048, 16k tokens", gpu_of(fs))
        do for [c = 0:1] {
            do for [dd in "64 128"] {
                set title sprintf("d = %s, %s", dd, c ? 'causal' : 'not causal')
                plot rows('mma2d', int(dd), c) using 7:14 with linespoints title 'mma2d (mma.sync, FA2 layouts)', \
                     rows('wgmma', int(dd), c) using 7:14 with linespoints lw 2 title 'step 1: wgmma', \
                     rows('wgmma-dq', int(dd), c) using 7:14 with linespoints lw 2 title 'step 2: wgmma-dq (bulk-reduced dQ)', \
                     rows('wgmma-ws', int(dd), c) using 7:14 with linespoints lw 3 title 'step 3: wgmma-ws (TMA, warp-specialised)', \
                     rows('wgmma-det', int(dd), c) using 7:14 with linespoints dt 4 title 'step 4: wgmma-det (deterministic dQ)', \
                     peer(fp, 'flash', int(dd), c) using 4:8 with linespoints dt 2 title 'PyTorch SDPA flash (FA2)', \
                     peer(fp, 'cudnn', int(dd), c) using 4:8 with linespoints dt 3 title 'PyTorch SDPA cuDNN'
            }
        }
        unset multiplot
        unset output
    }

    set terminal term size 800,450 font ',10'
    set output outdir.'/phase5_memory.png'
    set title "Extra memory of a backward vs N (B x N = 16k tokens, hidden 2048, d = 64)\nstd: S, P, dP, dS in fp16; flash: D (4 bytes a row)"
    set logscale xy 2
    set ylabel 'bytes'
    set yrange [*:*]
    mem(k) = sprintf("< awk -F, '$3 == \"tokens16k\" && $1 == \"%s\" && $9 == 64 && $10 == 0 && $18 != \"\"' '%s'", k, fs)
    plot mem('std') using 7:18 with linespoints title 'std', mem('mma') using 7:18 with linespoints title 'mma (flash)'
    unset output
}
