# phase4_fa2/masks.gp - chapter 4c's figure: six FlashMask masks on N = 1024 tokens, each
# drawn as its mask (dark: masked, light: visible; query rows top to bottom, keys left to
# right) with its Br x Bc tiles over it by class: outlined green when unmasked (the plain
# loop), orange when partial (an element test), none when fully masked (skipped).
# Data: tools/mask_map.sh OUTDIR writes OUTDIR/mask_K.grid, mask_K.tiles and masks.csv (the
# specs and their census), then runs this script with outdir set.
if (!exists("outdir")) outdir = 'results/phase4'
if (!exists("term")) term = 'pngcairo'
if (term eq 'pngcairo') { set terminal pngcairo size 1500,1000 font ',10' } else { set terminal png size 1500,1000 }
set output outdir.'/phase4_masks.png'
N = 1024.0
G = 256.0          # the grid mask_map samples the mask to
set termoption noenhanced
set multiplot layout 2,3 title "FlashMask's masks, N = 1024, tiles of 128 x 64: green unmasked, orange partial, not drawn fully masked (skipped)"
set palette defined (0 '#3a3a3a', 1 '#f2f2f2')
unset colorbox
set cbrange [0:1]
set xrange [0:N]
set yrange [N:0]
set size ratio -1
set xtics 256
set ytics 256
set xlabel 'key j'
set ylabel 'query row i'
set linetype 1 lc rgb "#e07b00" lw 1.5
set linetype 3 lc rgb "#1a9850" lw 1.5
do for [k = 1:6] {
    spec = system(sprintf("awk -F';' 'NR == %d + 1 { print $1 }' '%s/masks.csv'", k, outdir))
    census = system(sprintf("awk -F';' 'NR == %d + 1 { printf \"density %%s: %%s fully, %%s partial, %%s unmasked\", $2, $3, $4, $5 }' '%s/masks.csv'", k, outdir))
    set title sprintf("%s\n%s", spec, census) noenhanced
    f = sprintf('%s/mask_%d', outdir, k)
    plot f.'.grid' matrix using (($1 + 0.5) * N / G):(($2 + 0.5) * N / G):3 with image notitle, \
         f.'.tiles' using ($5 == 2 ? NaN : ($3 + $4) / 2):(($1 + $2) / 2):(($4 - $3) / 2 - 2):(($2 - $1) / 2 - 2):($5 == 0 ? 3 : 1) \
             with boxxyerror fs empty lw 1.5 lc variable notitle
}
unset multiplot
