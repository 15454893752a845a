# phase6_decoding/plot.gp - the figures of chapter 6, from results/phase6/ (make phase6 sweep).
#   tools/plot.sh phase6_decoding/plot.gp OUTDIR   (make phase6 plot)
# phase6_sweep.csv columns: 1 kernel 2 device 3 sweep 4 B 5 H 6 H_kv 7 N_q 8 N_kv 9 d 10 causal
# 11 Br 12 Bc 13 time_ms 14 hbm_model 15 hbm_formula 16 max_abs 17 rel_l2 18 L_max_abs
# 19 rel_prev 20 verdict 21 gbps 22 speedup
# phase6_peers.csv (tools/decode_peers.py): backend,B,H,H_kv,N_q,N_kv,d,time_ms,gbps,note
if (!exists("outdir")) outdir = 'results/phase6'
if (!exists("term")) term = 'pngcairo'
f = outdir.'/phase6_sweep.csv'
fr = outdir.'/phase6.csv'
fp = outdir.'/phase6_peers.csv'
set datafile separator ','
set datafile commentschars '#'
set grid
set key top left
MiB = 1048576.0
Sof(c) = 0 + substr(c, strstrt(c, "-S") + 2, 99)
set terminal term size 900,560
# 1. the default run (phase6.csv): the split model's counted bytes vs S
if (int(system("cat '".fr."' 2>/dev/null | grep -c '^split-S'")) > 0) {
    set logscale x 2
    set xlabel 'splits S'
    set ylabel 'HBM bytes (MiB)'
    set output outdir.'/phase6_run_bytes.png'
    set title 'Flash-Decoding CPU model, the default problem: HBM bytes vs splits S'
    plot sprintf("< grep '^split-S' '%s'", fr) using (Sof(stringcolumn(1))):($14/MiB) with linespoints title 'counted (= formula)'
}
# 2. the model's bytes vs S at L = 4096 (counted) and 65536 (formula)
if (int(system("cat '".f."' 2>/dev/null | grep -c ',cpu,vsS,'")) > 0) {
    pts(L) = sprintf("< awk -F, '$2 == \"cpu\" && $3 == \"vsS\" && $8 == %d' '%s'", L, f)
    set logscale x 2
    set xlabel 'splits S'
    set ylabel 'HBM bytes (MiB)'
    set output outdir.'/phase6_bytes_vs_S.png'
    set title 'Flash-Decoding CPU model: HBM bytes vs splits S'
    plot pts(4096) using (Sof(stringcolumn(1))):($15/MiB) with linespoints title 'L = 4096', \
         pts(65536) using (Sof(stringcolumn(1))):($15/MiB) with linespoints title 'L = 65536'
}
# 3-4. the GPU sweep: GB/s and latency vs L, B = 1 and 8, MHA (H_kv = 32) and GQA 32:8
if (int(system("cat '".f."' 2>/dev/null | grep -c ',gpu,vsL,'")) > 0) {
    copy = 0 + system("grep -o 'copy_gbps: [0-9.]*' '".f."' | head -n 1 | cut -d' ' -f2")
    g(k, B, Hkv) = sprintf("< awk -F, '$2 == \"gpu\" && $3 == \"vsL\" && $1 ~ /^%s(-S[0-9]+)?$/ && $4 == %s && $6 == %d' '%s'", k, B, Hkv, f)
    pe(k, B, Hkv) = sprintf("< awk -F, '$1 == \"%s\" && $2 == %s && $4 == %d && $5 == 1 && $8 != \"\"' '%s' 2>/dev/null", k, B, Hkv, fp)   # N_q = 1: vsL's points (vsNq's have more tokens)
    havep = int(system("cat '".fp."' 2>/dev/null | grep -c '^flash,[0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9]'")) > 0
    set logscale x 2
    set format x '%.0s%c'
    set xlabel 'cache length L (keys), N_q = 1, H = 32, d = 128'
    do for [B in "1 8"] {
        set output outdir.sprintf('/phase6_gbps_B%s.png', B)
        set title sprintf('Flash-Decoding on the GPU, B = %s: achieved GB/s (the model''s bytes / time)', B)
        set ylabel 'GB/s'
        set key top left
        if (havep) {
            plot g('fa2-mma', B, 32) using 8:21 with linespoints title 'fa2-mma (phase 4), MHA', \
                 g('split', B, 32) using 8:21 with linespoints title 'split, MHA', \
                 g('split-pack', B, 8) using 8:21 with linespoints title 'split-pack, GQA 32:8', \
                 g('fdpp', B, 8) using 8:21 with linespoints title 'fdpp (FlashDecoding++), GQA 32:8', \
                 g('fused', B, 8) using 8:21 with linespoints title 'fused (the combine in the split kernel), GQA 32:8', \
                 pe('flash', B, 32) using 6:9 with linespoints dt 2 title 'SDPA flash, MHA', \
                 pe('cudnn', B, 32) using 6:9 with linespoints dt 2 title 'SDPA cuDNN, MHA', \
                 pe('flash', B, 8) using 6:9 with linespoints dt 3 title 'SDPA flash, GQA 32:8', \
                 copy with lines lw 2 lc rgb 'black' title sprintf('copy bandwidth %.0f GB/s (measured)', copy)
        } else {
            plot g('fa2-mma', B, 32) using 8:21 with linespoints title 'fa2-mma (phase 4), MHA', \
                 g('split', B, 32) using 8:21 with linespoints title 'split, MHA', \
                 g('split-pack', B, 8) using 8:21 with linespoints title 'split-pack, GQA 32:8', \
                 g('fdpp', B, 8) using 8:21 with linespoints title 'fdpp (FlashDecoding++), GQA 32:8', \
                 g('fused', B, 8) using 8:21 with linespoints title 'fused (the combine in the split kernel), GQA 32:8', \
                 copy with lines lw 2 lc rgb 'black' title sprintf('copy bandwidth %.0f GB/s (measured)', copy)
        }
        set output outdir.sprintf('/phase6_latency_B%s.png', B)
        set title sprintf('Flash-Decoding on the GPU, B = %s: time of one decoding step', B)
        set ylabel 'time (us)'
        set logscale y
        if (havep) {
            plot g('fa2-mma', B, 8) using 8:($13*1000) with linespoints title 'fa2-mma (phase 4), GQA 32:8', \
                 g('split', B, 8) using 8:($13*1000) with linespoints title 'split (no packing), GQA 32:8', \
                 g('split-pack', B, 8) using 8:($13*1000) with linespoints title 'split-pack, GQA 32:8', \
                 g('fdpp', B, 8) using 8:($13*1000) with linespoints title 'fdpp (FlashDecoding++), GQA 32:8', \
                 g('fused', B, 8) using 8:($13*1000) with linespoints title 'fused (the combine in the split kernel), GQA 32:8', \
                 pe('flash', B, 8) using 6:($8*1000) with linespoints dt 2 title 'SDPA flash, GQA 32:8', \
                 pe('cudnn', B, 8) using 6:($8*1000) with linespoints dt 2 title 'SDPA cuDNN, GQA 32:8'
        } else {
            plot g('fa2-mma', B, 8) using 8:($13*1000) with linespoints title 'fa2-mma (phase 4), GQA 32:8', \
                 g('split', B, 8) using 8:($13*1000) with linespoints title 'split (no packing), GQA 32:8', \
                 g('split-pack', B, 8) using 8:($13*1000) with linespoints title 'split-pack, GQA 32:8', \
                 g('fdpp', B, 8) using 8:($13*1000) with linespoints title 'fdpp (FlashDecoding++), GQA 32:8', \
                 g('fused', B, 8) using 8:($13*1000) with linespoints title 'fused (the combine in the split kernel), GQA 32:8'
        }
        unset logscale y
    }
    set format x '%g'
}
# 5. time vs the number of splits, the heuristic's pick marked
if (int(system("cat '".f."' 2>/dev/null | grep -c ',gpu,vsS,'")) > 0) {
    s(L, sw) = sprintf("< awk -F, '$2 == \"gpu\" && $3 == \"%s\" && $8 == %d' '%s'", sw, L, f)
    set logscale x 2
    set xlabel 'splits S'
    set ylabel 'time (us)'
    set key top right
    set output outdir.'/phase6_time_vs_S.png'
    set title 'split-pack, B = 1, H = 32, GQA 32:8, d = 128: time vs splits S'
    plot s(16384, 'vsS') using (Sof(stringcolumn(1))):($13*1000) with linespoints title 'L = 16384', \
         s(65536, 'vsS') using (Sof(stringcolumn(1))):($13*1000) with linespoints title 'L = 65536', \
         s(16384, 'vsS-pick') using (Sof(stringcolumn(1))):($13*1000) with points pt 7 ps 2 title 'heuristic pick, L = 16384', \
         s(65536, 'vsS-pick') using (Sof(stringcolumn(1))):($13*1000) with points pt 7 ps 2 title 'heuristic pick, L = 65536'
}
# 6. several query tokens a step (speculative decoding): time vs N_q, B = 1 and 8, GQA 32:8,
# L = 16384, ours beside the peers on the same shapes
if (int(system("cat '".f."' 2>/dev/null | grep -c ',gpu,vsNq,'")) > 0) {
    gq(k, B) = sprintf("< awk -F, '$2 == \"gpu\" && $3 == \"vsNq\" && $1 ~ /^%s(-S[0-9]+)?$/ && $4 == %s' '%s'", k, B, f)
    pq(k, B) = sprintf("< awk -F, '$1 == \"%s\" && $2 == %s && $4 == 8 && $6 == 16384 && $8 != \"\"' '%s' 2>/dev/null", k, B, fp)
    set logscale x 2
    set format x '%g'
    set xlabel 'query tokens a step N_q (H = 32, GQA 32:8, L = 16384, d = 128)'
    set ylabel 'time (us)'
    set key top left
    do for [B in "1 8"] {
        set output outdir.sprintf('/phase6_vsNq_B%s.png', B)
        set title sprintf('Several query tokens a decoding step, B = %s: time of one step', B)
        plot gq('split', B) using 7:($13*1000) with linespoints title 'split (no packing)', \
             gq('split-pack', B) using 7:($13*1000) with linespoints title 'split-pack', \
             gq('fdpp', B) using 7:($13*1000) with linespoints title 'fdpp (FlashDecoding++)', \
             gq('fused', B) using 7:($13*1000) with linespoints title 'fused (the combine in the split kernel)', \
             pq('flash', B) using 5:($8*1000) with linespoints dt 2 title 'SDPA flash', \
             pq('cudnn', B) using 5:($8*1000) with linespoints dt 2 title 'SDPA cuDNN'
    }
    unset logscale x
}
