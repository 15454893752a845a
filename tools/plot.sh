#!/usr/bin/env bash
# tools/plot.sh SCRIPT OUTDIR - draw a phase's figures: runs gnuplot on SCRIPT with
# outdir='OUTDIR' (the folder holding the phase's CSV, where the PNGs go). Without
# gnuplot, or without the CSV the script reads, says what was skipped and why.
script=$1; outdir=$2
GNUPLOT=${GNUPLOT:-gnuplot}
if ! command -v "$GNUPLOT" >/dev/null 2>&1; then
    # offer `make deps` only to a user it can install for (root, or sudo without a password)
    if [ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
        echo "plots skipped: gnuplot not found (run make deps, or: apt-get install gnuplot-nox)"
    else
        echo "plots skipped: gnuplot not found (an administrator can install it: apt-get install gnuplot-nox)"
    fi
    exit 0
fi
if ! ls "$outdir"/*.csv >/dev/null 2>&1; then
    echo "plots skipped: no CSV in $outdir yet (run the phase first: make ${outdir##*/} run)"
    exit 0
fi
# pngcairo draws anti-aliased PNGs; the plain png terminal is the fallback.
term=png
"$GNUPLOT" -e 'set terminal' 2>&1 | grep -q pngcairo && term=pngcairo
"$GNUPLOT" -e "outdir='$outdir'; term='$term'" "$script" || { echo "plots FAILED: gnuplot $script"; exit 1; }
pngs=$(cd "$outdir" && ls -1 *.png 2>/dev/null | tr '\n' ' ')
if [ -n "$pngs" ]; then echo "plots: ${pngs}in $outdir/"; else echo "plots: none drawn yet in $outdir/ (see the line above)"; fi
