#!/usr/bin/env bash
# tools/kernels.sh LIST - a kernel family's rows, one a line, read from its table by the C
# preprocessor (the table the launchers are generated from, so the list cannot drift):
#   phase4-hopper   the Hopper forward ladder's fp16 steps:  NAME STEP D256 "what it adds"
#   phase4-fp8      its FP8 rows:                           NAME PINGPONG FMA_EX2 QUANTISE "what"
#   names: add --names for the first column alone (e.g. for k in $(tools/kernels.sh phase4-fp8 --names))
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
phase4-hopper) table=FA2_HOPPER_STEPS; row='X(ID, NAME, STEP, D256, WHAT) NAME STEP D256 WHAT @@' ;;
phase4-fp8)    table=FA2_HOPPER_FP8_ROWS; row='X(ID, NAME, PP, FMA, QUANT, WHAT) NAME PP FMA QUANT WHAT @@' ;;
*) echo "tools/kernels.sh: unknown list '${1:-}' (phase4-hopper, phase4-fp8)" >&2; exit 2 ;;
esac
printf '#include "steps.h"\n#define %s\n%s(X)\n' "$row" "$table" | cpp -P -DFA2_TABLE_ONLY -I"$root/phase4_fa2/hopper" - |
    sed 's/ *@@ */\n/g' | sed '/^ *$/d; s/^"\([^"]*\)"/\1/' |
    if [ "${2:-}" = --names ]; then awk '{ print $1 }'; else cat; fi
