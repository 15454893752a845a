#!/usr/bin/env bash
# tools/check_student_readme.sh TREE - is TREE/README_STUDENT.md true of the handout TREE?
#   - its count line ("N exercises: C on the CPU, G on the GPU") and its table (one row an
#     exercise: name, CPU or GPU, file) agree with the tree's manifest (ref/exercises.tsv),
#     and each row's CPU/GPU with its file (.cu/.cuh: GPU); every exercise's region is in
#     its file, still the stub (the tree is untouched: tools/exercises.sh unfilled);
#   - its sample region is the tree's own text: `/* TODO EXERCISE ...` to its
#     `/* END EXERCISE name */`, lines found in that order in the file it names;
#   - its chapter table names every chapter (docs/*.md) that names an exercise;
#   - where the tree's tests run GPU regions on the CPU emulator, it says so (it must not
#     promise that every GPU test is skipped without a GPU).
# One line per problem; exit 1 on any.
set -u
tree=${1:?usage: check_student_readme.sh TREE}
cd "$tree" || exit 2
r=README_STUDENT.md m=ref/exercises.tsv bad=0
no() { echo "README_STUDENT.md: $*"; bad=1; }
[ -f "$r" ] || { echo "no $tree/$r"; exit 1; }
[ -f "$m" ] || { echo "no $tree/$m"; exit 1; }
n=$(wc -l <"$m"); g=$(awk -F'\t' '$3 == "GPU"' "$m" | wc -l); c=$((n - g))
grep -qE "^$n exercises: $c on the CPU, $g on the GPU" "$r" || no "no line \"$n exercises: $c on the CPU, $g on the GPU\""
# the table's rows: | phase | order | `name` | CPU|GPU | `file` | ...
rows=$(grep -E '^\| [0-9]+ \| [0-9]+ \| `[^`]+` \| (CPU|GPU) \| `[^`]+` \|' "$r" | awk -F'|' '{ gsub(/[ `]/, "", $4); gsub(/ /, "", $5); gsub(/[ `]/, "", $6); print $4 " " $5 " " $6 }')
want=$(awk -F'\t' '{ print $1 " " $3 " " $2 }' "$m")
[ "$rows" = "$want" ] || no "the exercise table differs from the markers: $(diff <(echo "$want") <(echo "$rows") | grep '^[<>]' | head -3 | paste -sd' ')"
while read -r name kind file; do
    case "$file" in *.cu|*.cuh) k=GPU ;; *) k=CPU ;; esac
    [ "$k" = "$kind" ] || no "$name is in $file but listed as $kind"
done <<<"$rows"
u=$(bash tools/exercises.sh unfilled . | awk '{ print $1 }' | sort)
[ "$u" = "$(cut -f1 "$m" | sort)" ] || no "regions not found as stubs in the tree: $(comm -13 <(echo "$u") <(cut -f1 "$m" | sort) | paste -sd' ')"
# the sample: an indented block from a TODO EXERCISE line to its END EXERCISE line
sample=$(awk '/^    .*\/\* TODO EXERCISE /{ on = 1 } on { print } on && /\/\* END EXERCISE /{ exit }' "$r")
sfile=$(grep -oE 'one is in `[^`]+`' "$r" | head -n 1 | sed -E 's/.*`(.*)`/\1/')
if [ -z "$sample" ] || ! grep -qE '/\* END EXERCISE [^ ]+ \*/' <<<"$sample"; then no "no sample region from /* TODO EXERCISE to /* END EXERCISE name */"
elif [ ! -f "$sfile" ]; then no "the sample names no file of the tree ($sfile)"
else
    # its lines (less the block's 4-space indent) in that order in the file
    awk -v F="$sfile" 'BEGIN { while ((getline l < F) > 0) f[++n] = l }
        { sub(/^    /, ""); s[++k] = $0 }
        END { for (i = 1; i + k - 1 <= n; i++) { for (j = 1; j <= k && f[i + j - 1] == s[j]; j++); if (j > k) exit 0 } exit 1 }' <<<"$sample" ||
        no "its sample region is not the text of $sfile"
fi
grep -qF 'END EXERCISE' "$r" || no "does not say where a region ends"
for d in docs/*.md; do
    cut -f1 "$m" | grep -qwFf - "$d" 2>/dev/null || continue
    grep -qF "\`$d\`" "$r" || no "its chapter table lacks $d, which names exercises"
done
if grep -qlE 't_emu|mma_emu/run.sh' phase*_*/tests.sh 2>/dev/null; then
    grep -qi 'emulator' "$r" || no "the tests run GPU regions on the CPU emulator, and it does not say so"
    grep -qiE 'not filled in' "$r" || no "does not say that an emulator test of an unfilled GPU region is skipped as not filled in"
fi
[ $bad -eq 0 ] && echo "README_STUDENT.md: true of its tree ($n exercises: $c CPU, $g GPU)"
exit $bad
