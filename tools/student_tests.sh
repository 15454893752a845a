# tools/student_tests.sh - the handout as a student reads and drives it (sourced by
# tools/tests.sh after "make handout writes the student tarball", which left
# ${HO_BUILD:-$BUILD}/handout.tar.gz): README_STUDENT.md true of its tree, the exercise plan, which
# regions are unfilled, emulator tests of unfilled GPU regions skipped by name, make test's
# summary, make exercises and make grade in the handout, the chapters' paths, and stubs that
# compile without a warning. Fast: no phase's tests run here (tools/handout_test.sh does).
ST=$(mktemp -d "${TMPDIR:-/tmp}/student-tests.XXXXXX")
HO="$ST/flash-attention-from-scratch"
tar -xzf "${HO_BUILD:-$BUILD}/handout.tar.gz" -C "$ST" 2>/dev/null || rm -rf "$HO"

t_run "exercises_plan.txt: every exercise of the markers once, each with its minutes" bash -c '
    plan=$(grep -vE "^#|^$" tools/exercises_plan.txt)
    [ "$(awk "{ print \$1 }" <<<"$plan" | sort)" = "$(bash tools/exercises.sh list | awk "{ print \$1 }" | sort)" ] &&
    ! awk "\$2 !~ /^[0-9]+\$/ || NF != 2" <<<"$plan" | grep -q .'
if [ ! -d "$HO" ]; then
    t_skip "student tree: README, unfilled, emulator skips, summary, make exercises, make grade" "no ${HO_BUILD:-$BUILD}/handout.tar.gz"
else
    t_run "README_STUDENT.md is true of its tree: count, CPU/GPU per exercise, sample region with its END marker, chapter 4c, the emulator (tools/check_student_readme.sh)" \
        bash tools/check_student_readme.sh "$HO"
    t_fail "check_student_readme.sh FAILs a README whose table lists a GPU exercise as CPU" bash -c '
        d=$(mktemp -d "'"$ST"'/rd.XXXX") && cp -r "'"$HO"'" "$d/t" && sed -i -E "0,/\| GPU \|/s//| CPU |/" "$d/t/README_STUDENT.md" &&
        bash tools/check_student_readme.sh "$d/t"'
    t_fail "check_student_readme.sh FAILs a README without docs/04c_masks.md" bash -c '
        d=$(mktemp -d "'"$ST"'/rd.XXXX") && cp -r "'"$HO"'" "$d/t" && sed -i "s|docs/04c_masks.md|docs/04x.md|g" "$d/t/README_STUDENT.md" &&
        bash tools/check_student_readme.sh "$d/t"'
    # which regions are still the stub: all of an untouched tree; not one the student wrote
    # (a file copied from the solutions, a stub line edited); none in the repository's sources
    t_run "exercises.sh unfilled: every region of an untouched handout, none once written, none of the repository's sources" bash -c '
        d=$(mktemp -d "'"$ST"'/uf.XXXX") && cp -r "'"$HO"'" "$d/t" && cd "$d/t" &&
        [ "$(bash tools/exercises.sh unfilled | wc -l)" -eq "$(wc -l <ref/exercises.tsv)" ] || { echo "untouched: not all unfilled"; exit 1; }
        cp "'"$PWD"'/phase2_online_softmax/online_cpu.c" phase2_online_softmax/
        sed -i "0,/dS\[j\] = 0.0;/s//dS[j] = 1.0;/" phase0_model/oracle.c
        u=$(bash tools/exercises.sh unfilled); echo "$u"
        ! grep -qE "^(p2\.|p0\.dS )" <<<"$u" && grep -q "^p0.softmax_row " <<<"$u" &&
        [ "$(wc -l <<<"$u")" -eq $(( $(wc -l <ref/exercises.tsv) - 4 )) ] &&
        cd "'"$PWD"'" && [ -z "$(bash tools/exercises.sh unfilled .)" ] && [ -n "$(bash tools/exercises.sh unfilled exercises)" ]'
    # an emulator test of GPU regions: skipped naming them while they are stubs; once filled it
    # runs, and its FAIL names them (tools/testlib.sh t_emu; phases 4, 5, 6 use it)
    t_run "t_emu: an emulator test of unfilled GPU regions SKIPs naming them; filled, a FAIL names them" bash -c '
        d=$(mktemp -d "'"$ST"'/emu.XXXX") && cp -r "'"$HO"'" "$d/t" && cd "$d/t" || exit 1
        out=$(BUILD="$d/b" bash -c "source tools/testlib.sh; t_emu phase4_fa2/fa2_mma_kernel.cuh t_run \"emu test\" false; t_summary" 2>&1); echo "$out"
        grep -qE "SKIP  emu test: GPU exercises fa2.causal_range_mma, fa2.rowmax_mma, fa2.online_mma, fa2.finish_mma not filled in" <<<"$out" &&
            grep -q "0 passed, 0 failed, 1 skipped" <<<"$out" || exit 1
        cp "'"$PWD"'/phase4_fa2/fa2_mma_kernel.cuh" phase4_fa2/
        out=$(BUILD="$d/b" bash -c "source tools/testlib.sh; t_emu phase4_fa2/fa2_mma_kernel.cuh t_run \"emu test\" false; t_summary" 2>&1); echo "$out"
        grep -qE "FAIL  emu test \(exercises behind it: fa2.causal_range_mma, fa2.rowmax_mma, fa2.online_mma, fa2.finish_mma\)" <<<"$out"'
    # make test'\''s summary in an exercise build: one line per exercise not filled in (of the
    # phases under test), then the failed tests, the first 20 and a count, then the count line
    t_run "make test's summary: one line per unfilled exercise, failed names capped at 20 and counted" bash -c '
        cd "'"$HO"'" && out=$(BUILD="'"$ST"'/sb" EX_BUILD=1 TEST_PHASES="phase0 phase2" bash -c "source tools/testlib.sh
            for i in \$(seq 25); do t_run \"test \$i\" false >/dev/null; done; t_summary" 2>&1); echo "$out"
        [ "$(grep -c "^not filled in: exercise " <<<"$out")" -eq 5 ] && grep -q "^not filled in: exercise p0.softmax_row (phase0_model/oracle.c, CPU)$" <<<"$out" &&
        grep -q "^failed (25):$" <<<"$out" && [ "$(grep -c "^  test " <<<"$out")" -eq 20 ] && grep -q "^  \.\.\. and 5 more" <<<"$out" &&
        tail -n 1 <<<"$out" | grep -q "^0 passed, 25 failed, 0 skipped$" && ! awk "length > 200" <<<"$out" | grep -q .'
    t_run "handout: make exercises says in one line that there is nothing to generate (exit 0); make handout still refuses" bash -c '
        cd "'"$HO"'" && out=$(make --no-print-directory exercises) && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q "nothing to generate" <<<"$out" &&
        ! make --no-print-directory handout >/dev/null 2>&1'
    # make grade: one row per exercise and a total; untouched every row UNFILLED (no phase
    # runs); phase 0 filled from the solutions: its two rows PASS
    t_run "handout: make grade, one row per exercise and a total (untouched: all UNFILLED; phase 0 filled: PASS)" bash -c '
        d=$(mktemp -d "'"$ST"'/gr.XXXX") && cp -r "'"$HO"'" "$d/t" && cd "$d/t" || exit 1
        out=$(env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory NO_DEPS=1 NO_CUDA=1 BUILD="$d/b" grade 2>&1); echo "$out"
        n=$(wc -l <ref/exercises.tsv)
        [ "$(grep -cE "^[a-z0-9]+\.[A-Za-z0-9_]+ +(CPU|GPU) +UNFILLED +0/[12]$" <<<"$out")" -eq "$n" ] &&
            grep -qE "^total: 0/[0-9]+ points .*, $n UNFILLED" <<<"$out" || exit 1
        cp "'"$PWD"'/phase0_model/oracle.c" phase0_model/
        out=$(env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory NO_DEPS=1 NO_CUDA=1 BUILD="$d/b" phase0 grade 2>&1); echo "$out"
        grep -qE "^p0.softmax_row +CPU +PASS +1/1$" <<<"$out" && grep -qE "^p0.dS +CPU +PASS +1/1$" <<<"$out" && grep -qE "^total: 2/2 points" <<<"$out"'
    # the chapters' exercise paths: each exercises/<path> a chapter names is <path> in the
    # handout, and the chapter says so
    t_run "chapters 0-4: each exercises/<path> they name is <path> in the handout, and they say so" bash -c '
        bad=0; for c in docs/0*.md; do
            ps=$(grep -oE "\`exercises/[^\`]+\`" "$c" | tr -d "\`" | sed "s|^exercises/||") || continue
            [ -n "$ps" ] || continue
            grep -q "handout" "$c" || { echo "$c names exercises/ and not the handout"; bad=1; }
            for p in $ps; do [ -e "'"$HO"'/$p" ] || { echo "$c: $p is not in the handout"; bad=1; }; done
        done; exit $bad'
fi

# the stubs compile without a warning: the host code of a build from exercises/ (every
# region cut) with -Werror, and the front end of each cut .cu with nvcc's -Werror
t_run "every stub compiles warning-free: make EX=1 all from exercises/ with -Werror (gcc)" \
    make --no-print-directory -j"${JOBS:-2}" NO_CUDA=1 EX=1 BUILD="$ST/werror" CFLAGS="-O0 -Werror" all
# ... and a warning in the student's own code still shows: the stubs hide nothing (no pragma)
st_own_warning() {   # p2.merge's stub compiles clean; the same region with an unused variable of "mine" warns
    local f=exercises/phase2_online_softmax/online_cpu.c d; d=$(mktemp -d "$ST/w.XXXX")
    local cc=("${CC:-gcc}" -std=c11 -Wall -Wextra -Werror -D_DEFAULT_SOURCE -fsyntax-only -Icommon -Iphase2_online_softmax
              $(printf -- '-I%s ' phase*_*) -I"$ST/werror/gen" -DFA_BLOCKS_GEN -DHAVE_CUDA=0 -DEX_BUILD=1)
    "${cc[@]}" "$f" || { echo "the stub itself warns"; return 1; }
    awk '{ print } index($0, "/* END EXERCISE p2.merge */") { }
         index($0, "TODO EXERCISE p2.merge:") { getline; print; getline; print; print "    int unused_in_my_code = 0;" }' "$f" >"$d/online_cpu.c"
    grep -q unused_in_my_code "$d/online_cpu.c" || { echo "nothing planted"; return 1; }
    if "${cc[@]}" "$d/online_cpu.c" 2>"$d/err"; then echo "no warning for the student's unused variable"; return 1; fi
    cat "$d/err"; grep -q unused_in_my_code "$d/err"
}
t_run "a filled region's own warning still shows (an unused variable planted in p2.merge's region fails -Werror)" st_own_warning
if command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
    t_run "every stub compiles warning-free: each cut .cu's front end (nvcc -cuda -Werror all-warnings)" bash -c '
        n=0; for cu in $(cd exercises && ls */*.cu); do n=$((n + 1))
            '"${NVCC:-nvcc}"' -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra -Iexercises/$(dirname $cu) -Icommon \
                $(printf -- "-I%s " phase*_*) -I"'"$ST"'/werror/gen" -DFA_BLOCKS_GEN -DHAVE_CUDA=1 -DEX_BUILD=1 \
                -cuda exercises/$cu -o "'"$ST"'/stub.ii" || { echo "warnings in exercises/$cu"; exit 1; }
        done; [ $n -gt 0 ]'
else t_skip "every stub compiles warning-free: the cut .cu files" "nvcc not found"; fi
