# tools/train_check.gp - the loss curves of tools/train_check.py: every run's training loss
# per step (ours solid, SDPA dashed, one colour a seed pair), from OUTDIR/train_check.csv.
#   tools/plot.sh tools/train_check.gp OUTDIR   (make train-plot; make train-check runs it)
# Columns: 1 step, then ours_seed0 .. ours_seed<K-1>, then sdpa_seed0 .. sdpa_seed<K-1>.
if (!exists("outdir")) outdir = 'results/train'
if (!exists("term")) term = 'pngcairo'
f = outdir.'/train_check.csv'
ncols = int(system("grep -m1 '^step,' '".f."' 2>/dev/null | awk -F, '{ print NF }'"))
if (ncols >= 3) {
    K = (ncols - 1) / 2
    gpu = system("grep -m1 '^# gpu:' '".f."' | sed 's/^# gpu: //; s/ |.*//'")
    smoke = int(system("grep -c 'SMOKE' '".f."' | head -n 1")) > 0 ? ' - SMOKE TEST on the CPU: SDPA stands in for ours, not a result' : ''
    set datafile separator ','
    set datafile commentschars '#'
    set terminal term size 900,500
    set output outdir.'/train_check_loss.png'
    set title sprintf("Training loss: ours vs SDPA, %d seeds each (sequence reversal, 2-layer GQA transformer, d = 64)\n%s%s", K, gpu, smoke) font ',10'
    set grid
    set logscale y
    set xlabel 'step'
    set ylabel 'cross-entropy (nats), training batch'
    set key top right
    plot for [i=1:K] f using 1:(column(1 + i)) with lines lw 1.5 lc i dt 1 title sprintf('ours, seed %d', i - 1), \
         for [i=1:K] f using 1:(column(1 + K + i)) with lines lw 1.5 lc i dt 2 title sprintf('SDPA, seed %d', i - 1)
    unset output
} else {
    print 'train_check.gp: no '.f.' yet (make train-check writes it)'
}
