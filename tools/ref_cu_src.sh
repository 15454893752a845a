#!/usr/bin/env bash
# tools/ref_cu_src.sh DIR... - the .cu sources the GPU reference library (the Makefile's
# REF_CU_SRC) is built from: each with an exercise region, and each that includes a marked
# header (a kernel whose exercise regions sit in a .cuh beside it: fa2_mma_kernel.cuh, the
# decode headers) which no marked .cu of its folder includes already.
marked() { grep -lE '^[[:space:]]*/\* EXERCISE ' "$@" 2>/dev/null; }
for d in "$@"; do
    cus=$(ls "$d"/*.cu 2>/dev/null) || continue
    mcu=$(marked $cus)
    printf '%s\n' $mcu
    for h in $(marked "$d"/*.cuh "$d"/*.h); do
        b=$(basename "$h")
        [ -n "$mcu" ] && grep -lq "#include \"$b\"" $mcu && continue
        for f in $cus; do grep -q "#include \"$b\"" "$f" && echo "$f"; done
    done
done | sed '/^$/d' | LC_ALL=C sort -u
