#!/usr/bin/env bash
# tools/kernels.sh LIST [--names] - a kernel family's rows, one a line, read from its table by
# the C preprocessor (the table the launchers are generated from, so the list cannot drift):
#   phase4-hopper   the Hopper forward ladder's fp16 steps (phase4_fa2/hopper/steps.h):
#                   NAME STEP D256 "what it adds"
#   phase4-fp8      its FP8 rows:  NAME PINGPONG FMA_EX2 QUANTISE "what it adds"
#   phase6-decode   the decode variants (phase6_decoding/decode.h):  NAME FILE
# --names: the first column alone (for k in $(tools/kernels.sh phase4-fp8 --names) ...)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
phase4-hopper) hdr=hopper/steps.h; table=FA2_HOPPER_STEPS; row='X(ID, NAME, STEP, D256, WHAT) @@ROW NAME STEP D256 WHAT' ;;
phase4-fp8)    hdr=hopper/steps.h; table=FA2_HOPPER_FP8_ROWS; row='X(ID, NAME, PP, FMA, QUANT, WHAT) @@ROW NAME PP FMA QUANT WHAT' ;;
phase6-decode) hdr=decode.h; table=DEC_VARIANTS; row='X(ID, NAME, FILE) @@ROW NAME FILE' ;;
*) echo "tools/kernels.sh: unknown list '${1:-}' (phase4-hopper, phase4-fp8, phase6-decode)" >&2; exit 2 ;;
esac
inc=(-I"$root/common" -I"$root/build/gen"); for d in "$root"/phase*_*/; do inc+=(-I"$d"); done
printf '#include "%s"\n#define %s\n%s(X)\n' "$hdr" "$row" "$table" |
    cpp -P -DFA2_TABLE_ONLY -DHAVE_CUDA=0 "${inc[@]}" - 2>/dev/null |
    grep -o '@@ROW[^@]*' | sed 's/^@@ROW *//; s/ *$//; s/"\([^"]*\)"/\1/' |
    if [ "${2:-}" = --names ]; then awk '{ print $1 }'; else cat; fi
