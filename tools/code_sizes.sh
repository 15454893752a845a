#!/usr/bin/env bash
# tools/code_sizes.sh [DIR...] - the sizes a reader can take in one sitting, checked: in each DIR
# (default: the kernel families' phases 4, 5, 6; exercises/ and generated files are not
# looked at) no function of a .cu or .cuh file over 120 lines (from ctags' line to the line
# that closes it), no source file over 600 lines, and no step file (hopper/stepNN_*) over 200.
# Prints each one over, and exits 1 if any is.
set -u
cd "$(dirname "$0")/.." || exit 2
dirs=("$@"); [ ${#dirs[@]} -gt 0 ] || dirs=(phase4_fa2 phase5_backward phase6_decoding)
FN_MAX=120 FILE_MAX=600 STEP_MAX=200 bad=0
command -v ctags >/dev/null || { echo "code_sizes: ctags not found (apt-get install universal-ctags)"; exit 2; }
for f in $(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort); do
    n=$(wc -l <"$f")
    lim=$FILE_MAX; case $(basename "$f") in step[0-9]*|*_step[0-9]*|dec_split*|dec_fused*|dec_paged*|dec_ragged*|dec_fdpp.cuh) lim=$STEP_MAX ;; esac
    if [ "$n" -gt "$lim" ]; then echo "$f: $n lines (at most $lim)"; bad=1; fi
    case $f in *.cu|*.cuh) ;; *) continue ;; esac
    # each function's first line (ctags), then its end: the first line after it that closes
    # the brace depth it opened (strings and comments are rare enough in kernels to ignore)
    while read -r name line; do
        len=$(awk -v s="$line" 'NR >= s { for (i = 1; i <= length($0); i++) { c = substr($0, i, 1);
                  if (c == "{") { d++; open = 1 } else if (c == "}") d-- }
                  if (open && d == 0) { print NR - s + 1; exit } }' "$f")
        if [ -n "$len" ] && [ "$len" -gt "$FN_MAX" ]; then echo "$f:$line: $name is $len lines (at most $FN_MAX)"; bad=1; fi
    done < <(ctags -x --c++-kinds=f --language-force=c++ "$f" 2>/dev/null | awk '{ print $1, $3 }')
done
[ $bad -eq 0 ] && echo "code_sizes: every function <= $FN_MAX lines, every file <= $FILE_MAX, every step file <= $STEP_MAX"
exit $bad
