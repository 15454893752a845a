# common/tests.sh - tests of the shared library (sourced by tools/run_tests.sh)
t_units "$BUILD/test_common"
t_units "$BUILD/test_mask"   # FlashMask's column-sparse masks (common/mask.h)

# --- cli_parse: outputs that cannot be written are refused before any work -------------
# Each: exit 2, exactly one line on stderr naming the problem, nothing on stdout.
TC=$(mktemp -d "${TMPDIR:-/tmp}/common-tests.XXXXXX")   # under testlib's run folder
ABS_BUILD=$(cd "$BUILD" && pwd)
for n in 1 2 3 4; do
    P="$BUILD/phase$n"
    [ -x "$P" ] || { t_skip "phase$n output-path checks" "$P not built"; continue; }
    t_exit2_says "phase$n rejects --csv /proc/x/y.csv (folder cannot be made)" "cannot write the CSV" \
        "$P" --cpu --quiet --csv /proc/x/y.csv
    t_exit2_says "phase$n rejects --csv /etc/passwd/x.csv (a file as folder)" "not a folder" \
        "$P" --cpu --quiet --csv /etc/passwd/x.csv
    t_exit2_says "phase$n rejects --csv '' (empty)" "empty" "$P" --cpu --quiet --csv ""
    t_exit2_says "phase$n rejects --csv naming a folder" "is a folder" "$P" --cpu --quiet --csv "$TC"
    t_exit2_says "phase$n probes its default CSV (run where results/ cannot be made)" "default" \
        bash -c "cd /proc && exec '$ABS_BUILD/phase$n' --cpu --quiet"
    t_exit2_says "phase$n says 'ambiguous' for --s (--seed or --sweep)" "ambiguous.*--seed.*--sweep" \
        "$P" --cpu --quiet --s 3 --csv "$TC/amb.csv"
    t_exit2_says "phase$n says 'ambiguous' for --c (--causal, --csv, --cpu)" "ambiguous" "$P" --c
    if [ "$n" = 2 ]; then
        # phase 2 writes no tensor dump: --dump is refused, not ignored
        t_exit2_says "phase2 refuses --dump (it writes no dump)" "dump" "$P" --cpu --quiet --dump "$TC/d2" --csv "$TC/p2.csv"
    else
        t_exit2_says "phase$n rejects --dump /proc/x/y" "cannot write the dump" \
            "$P" --cpu --quiet --dump /proc/x/y --csv "$TC/p.csv"
        t_exit2_says "phase$n rejects --dump /etc/passwd/x (a file as folder)" "not a folder" \
            "$P" --cpu --quiet --dump /etc/passwd/x --csv "$TC/p.csv"
        t_exit2_says "phase$n rejects --dump '' (empty)" "empty" "$P" --cpu --quiet --dump "" --csv "$TC/p.csv"
    fi
    # the CSV's probe passes (making and removing left$n/a/b), then the dump's fails. It
    # ends with a run that must PASS: in an exercise build (the student's code) only when
    # phase n itself is under test, so that no phase's tests need another phase solved
    if [ -n "${EX_BUILD:-}" ] && [[ " ${TEST_PHASES:-} " != *" phase$n "* ]]; then
        t_skip "phase$n output probe leaves nothing behind" "an exercise build: it runs phase $n's code, tested with make phase$n test"
        continue
    fi
    # (folders are made only under results/: common/cli.h)
    t_run "phase$n output probe leaves nothing behind" bash -c "
        cd '$TC' || exit 1
        '$ABS_BUILD/phase$n' --cpu --quiet --csv 'results/left$n/a/b/x.csv' --dump /proc/x 2>/dev/null; [ \$? -eq 2 ] || exit 1
        [ ! -e '$TC/results/left$n' ] || { echo 'the probe left $TC/results/left$n'; exit 1; }
        '$ABS_BUILD/phase$n' --cpu --quiet --csv 'results/ok$n/a/x.csv' --B 1 --H 1 --N 16 --d 16 || exit 1
        [ -s '$TC/results/ok$n/a/x.csv' ] || { echo 'no CSV written after a passing probe'; exit 1; }"
done
# After a passing probe, a later exit 2 leaves neither folder nor file, and an existing
# CSV is left as it was (phase 4: --kernel mma with d=16 is refused after cli_parse).
t_run "output probe: a later exit 2 leaves no folder, an existing CSV untouched" bash -c "
    (cd '$TC' && exec '$ABS_BUILD/phase4' --cpu --quiet --kernel mma --d 16 --csv results/late/a/x.csv) 2>/dev/null; [ \$? -eq 2 ] || exit 1
    [ ! -e '$TC/results/late' ] || { echo 'left $TC/results/late'; exit 1; }
    printf 'keep\n' >'$TC/keep.csv'
    '$BUILD/phase4' --cpu --quiet --kernel mma --d 16 --csv '$TC/keep.csv' 2>/dev/null; [ \$? -eq 2 ] || exit 1
    [ \"\$(cat '$TC/keep.csv')\" = keep ] || { echo 'the existing CSV changed'; exit 1; }"

# A folder without write permission: as a normal user chmod 555 is enough; root writes
# anywhere, so as root the same run is made as user nobody (setpriv), when it can be.
RO="$TC/ro"; mkdir -p "$RO"; chmod 555 "$RO"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    if command -v setpriv >/dev/null 2>&1 && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null &&
       setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$ABS_BUILD/phase1"; then
        as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
        chmod 711 "$T_ROOT" "$TC"                     # let nobody reach $RO (and nothing more)
    else
        as_user=(skip)
    fi
fi
for n in 1 2 3 4; do
    if [ "${as_user[0]:-}" = skip ]; then
        t_skip "phase$n rejects a read-only folder for --csv/--dump" "running as root and cannot run as nobody (setpriv)"
        continue
    fi
    t_exit2_says "phase$n rejects --csv in a read-only folder" "Permission denied" \
        "${as_user[@]}" "$ABS_BUILD/phase$n" --cpu --quiet --csv "$RO/x.csv"
    t_exit2_says "phase$n rejects --csv under a read-only folder (results/ in it cannot be made)" "cannot create folder" \
        "${as_user[@]}" bash -c "cd '$RO' && exec '$ABS_BUILD/phase$n' --cpu --quiet --csv results/sub/x.csv"
    [ "$n" = 2 ] || t_exit2_says "phase$n rejects --dump under a read-only folder" "cannot write the dump" \
        "${as_user[@]}" "$ABS_BUILD/phase$n" --cpu --quiet --dump "$RO/dump" --csv /dev/null
done

# (The accepted cases run a driver to its PASS: t_run_for names the phases whose code that
# needs, skipped in an exercise build that does not test them: no phase's tests need another
# phase solved.)
# --- output paths: one length limit (OUT_PATH_MAX, common/path.h) checked up front ----------
# Each refused case exits 2 with one line and leaves the folder it ran in as it was (every
# name and every file's bytes compared before and after); each accepted case works.
P1="$ABS_BUILD/phase1"
tree_of() { (cd "$1" && find . | LC_ALL=C sort && find . -type f -exec cksum {} + | LC_ALL=C sort); }
# DIR CMD...: CMD run in DIR; when it changed anything there, one more stderr line (t_exit2 then fails)
in_dir_unchanged() {
    local d=$1 rc=0 before; shift
    before=$(tree_of "$d")
    (cd "$d" && "$@") || rc=$?
    [ "$before" = "$(tree_of "$d")" ] || echo "the run changed $d" >&2
    return $rc
}
rep() { local s=""; for ((i = 0; i < $2; i++)); do s+=$1; done; printf '%s' "$s"; }
PC="$TC/paths"; mkdir -p "$PC"
L1200=$(rep abcdefghi/ 120)           # 1200 characters: under PATH_MAX, over the limit
C1016=$(rep abcdefghi/ 80)$(rep x 212).csv   # 1016: the CSV would fit, its temporary (1027) not
C1012=$(rep abcdefghi/ 80)$(rep x 208).csv   # 1012: the temporary is 1023 bytes and its '\0'
D990=$(rep abcdefghi/ 98)abcdefgh     # 988: no room for params.txt inside
D980=$(rep abcdefghi/ 98)             # 980 (with its trailing '/'): room for every dump file
DEEP=$(rep a/ 400)x.csv               # 805 characters, 400 folders (the old probe undid 64)
Q="--cpu --quiet --B 1 --H 1 --N 16 --d 16"
t_exit2_says "paths: a 1200-character --csv is refused up front" "too long" \
    in_dir_unchanged "$PC" "$P1" $Q --csv "$L1200/x.csv"
t_exit2_says "paths: a --csv whose temporary would not fit is refused" "too long" \
    in_dir_unchanged "$PC" "$P1" $Q --csv "$C1016"
t_run_for phase1 "paths: a 1012-character --csv (the longest that fits) is written" bash -c "
    cd '$PC' && mkdir -p \"\$(dirname '$C1012')\" && '$P1' $Q --csv '$C1012' && [ -s '$C1012' ] && rm -rf '$PC/abcdefghi'"
t_exit2_says "paths: a 1200-character --dump is refused up front" "cannot write the dump.*too long" \
    in_dir_unchanged "$PC" "$P1" $Q --dump "$L1200" --csv /dev/null
t_exit2_says "paths: a --dump with no room for params.txt is refused" "cannot write the dump.*too long" \
    in_dir_unchanged "$PC" "$P1" $Q --dump "$D990" --csv /dev/null
t_run_for phase1 "paths: a 980-character --dump writes every file under its own name" bash -c "
    cd '$PC' && mkdir -p \"\$(dirname '$D980')\" && '$P1' $Q --dump '$D980' --csv /dev/null || exit 1
    for f in Q K V O L; do [ -s '$D980'\$f.npy ] || { echo \"no \$f.npy\"; exit 1; }; done
    grep -q '^d=16\$' '$D980'params.txt || { echo 'params.txt missing or cut'; exit 1; }
    rm -rf '$PC/abcdefghi'"
t_exit2_says "paths: a probe that made 400 folders removes all of them" "cannot write the dump" \
    in_dir_unchanged "$PC" "$P1" $Q --csv "results/$DEEP" --dump /proc/x
t_run_for phase1 "paths: a CSV 400 folders deep is written (under results/)" bash -c "
    cd '$PC' && '$P1' $Q --csv 'results/$DEEP' && [ -s 'results/$DEEP' ] && rm -rf '$PC/results'"

# --- the CSV in the dump's way: refused, paths compared normalised --------------------------
mkdir -p "$PC/D" "$PC/E"; ln -s E "$PC/L"
t_exit2_says "paths: --csv X --dump X is refused" "dump folder" in_dir_unchanged "$PC" "$P1" $Q --csv X --dump X
t_exit2_says "paths: --csv N/Q.npy --dump N is refused" "inside the dump folder" in_dir_unchanged "$PC" "$P1" $Q --csv N/Q.npy --dump N
t_exit2_says "paths: --csv ./D/../D/Q.npy --dump D/ is refused" "inside the dump folder" \
    in_dir_unchanged "$PC" "$P1" $Q --csv ./D/../D/Q.npy --dump D/
t_exit2_says "paths: --csv L/Q.npy --dump E (L links to E) is refused" "inside the dump folder" \
    in_dir_unchanged "$PC" "$P1" $Q --csv L/Q.npy --dump "$PC/E"
t_exit2_says "paths: --csv D/params.txt --dump D is refused" "inside the dump folder" \
    in_dir_unchanged "$PC" "$P1" $Q --csv D/params.txt --dump D
t_exit2_says "paths: --csv X --dump X/sub is refused" "folder above it" \
    in_dir_unchanged "$PC" "$P1" $Q --csv X --dump X/sub
t_run_for phase1 "paths: --csv D2/x.csv --dump D (side by side) works" bash -c "
    cd '$PC' && mkdir -p D2 && '$P1' $Q --csv D2/x.csv --dump D && [ -s D2/x.csv ] && [ -s D/params.txt ]"
t_exit2_says "paths: --csv E/run.csv --dump E (a CSV inside the dump folder) is refused" "inside the dump folder" \
    in_dir_unchanged "$PC" "$P1" $Q --csv E/run.csv --dump E

# Every file of the dump is probed before any work: a folder where Q.npy goes is refused up
# front (exit 2, one line), the folder left as it was (no half-written dump).
mkdir -p "$PC/DQ/Q.npy"
t_exit2_says "paths: --dump D with a folder D/Q.npy is refused up front, D unchanged" "DQ/Q.npy is a folder" \
    in_dir_unchanged "$PC" "$P1" $Q --dump "$PC/DQ" --csv /dev/null
# A dump that fails while it is written (ulimit -f with SIGXFSZ ignored: EFBIG) fails the
# run, never exit 0 and PASS after "could not write the dump", and leaves no partial file.
t_run "paths: a dump write that fails at run time fails the run (exit 1, FAIL, no .npy left)" bash -c "
    mkdir -p '$PC/DF'; rc=0
    out=\$(trap '' XFSZ; ulimit -f 1; exec '$P1' --cpu --quiet --B 1 --H 1 --N 64 --d 64 --dump '$PC/DF' --csv /dev/null 2>&1) || rc=\$?
    echo \"\$out\"
    [ \$rc -eq 1 ] && grep -q 'could not write the dump' <<<\"\$out\" && grep -q '^phase1: FAIL' <<<\"\$out\" || exit 1
    [ -z \"\$(ls '$PC/DF')\" ] || { echo 'left:'; ls '$PC/DF'; exit 1; }"
# A reused dump folder: the previous run's files that this run does not write (dQ, dK, dV
# of phase 5, mask_runs of a masked run) are removed, so check_numpy never reads them;
# files of other names are kept.
t_run_for phase1 "paths: a reused --dump folder keeps no stale dQ/dK/dV/mask_runs, and nothing else is touched" bash -c "
    mkdir -p '$PC/ST' && for f in dQ dK dV mask_runs; do echo stale >'$PC/ST/'\$f.npy; done && echo mine >'$PC/ST/notes.txt'
    '$P1' $Q --dump '$PC/ST' --csv /dev/null >/dev/null || exit 1
    for f in dQ dK dV mask_runs; do [ ! -e '$PC/ST/'\$f.npy ] || { echo \"stale \$f.npy kept\"; exit 1; }; done
    [ \"\$(cat '$PC/ST/notes.txt')\" = mine ] && [ -s '$PC/ST/Q.npy' ] || exit 1
    if ${PYTHON:-python3} -c 'import numpy' 2>/dev/null; then ${PYTHON:-python3} tools/check_numpy.py --tol 3e-3 '$PC/ST'; fi"

if ${PYTHON:-python3} -c 'import numpy' 2>/dev/null; then
    t_run_for "phase4 phase5" "paths: phase 4's masked dump then phase 5's into the same folder: check_numpy PASSes (no stale mask_runs.npy)" bash -c "
        '$ABS_BUILD/phase4' --cpu --quiet --B 1 --H 1 --N 32 --d 16 --mask sliding:8 --dump '$PC/RE' --csv /dev/null >/dev/null &&
        '$ABS_BUILD/phase5' --cpu --quiet --B 1 --H 2 --Hkv 1 --N 24 --d 16 --dump '$PC/RE' --csv /dev/null >/dev/null || exit 1
        [ ! -e '$PC/RE/mask_runs.npy' ] && ${PYTHON:-python3} tools/check_numpy.py '$PC/RE'"
fi
# A device that refuses writes is refused up front, before the work, in every phase
for n in 1 2 3 4 5 6; do
    [ -x "$BUILD/phase$n" ] || continue
    t_exit2_says "phase$n --csv /dev/full is refused up front (exit 2)" "cannot write the CSV /dev/full" \
        "$BUILD/phase$n" --cpu --quiet --B 1 --H 1 --N 16 --d 16 --csv /dev/full
done
# ... and a write that fails at run time still fails the run (ulimit -f, SIGXFSZ ignored)
t_run_for phase6 "paths: a CSV write that fails at run time fails the run (exit 1), no temporary, no file" bash -c "
    mkdir -p '$PC/FZ'; rc=0
    (trap '' XFSZ; ulimit -f 1; exec '$ABS_BUILD/phase6' $Q --csv '$PC/FZ/p6.csv') >/dev/null 2>'$PC/fz.err' || rc=\$?
    cat '$PC/fz.err'
    [ \$rc -eq 1 ] && grep -q 'could not write .*File too large' '$PC/fz.err' && [ -z \"\$(ls '$PC/FZ')\" ]"
# Control characters in a path (a newline would split the CSV's '# command:' line)
t_exit2_says "paths: a newline in --csv is refused" "control character" in_dir_unchanged "$PC" "$P1" $Q --csv "$(printf 'a\nb.csv')"
t_exit2_says "paths: a tab in --dump is refused" "control character" in_dir_unchanged "$PC" "$P1" $Q --dump "$(printf 'd\tx')" --csv /dev/null
# Folders are made only under results/ (and --dump DIR itself): a missing folder elsewhere is
# refused, not made (run as root, --csv /nonexistent/x.csv used to make /nonexistent)
NX="/fa-io-nonexistent-$$"
t_exit2_says "paths: --csv $NX/x.csv (a missing folder outside results/) is refused" "folder $NX does not exist" \
    "$P1" $Q --csv "$NX/x.csv"
t_run "paths: ... and $NX was not made" test ! -e "$NX"
t_exit2_says "paths: --dump $NX/a/b (missing folders above DIR) is refused" "folder $NX does not exist" \
    "$P1" $Q --dump "$NX/a/b" --csv /dev/null
t_run_for phase1 "paths: --dump DIR (DIR itself missing) and --csv results/a/b/x.csv are made" bash -c "
    cd '$PC' && '$P1' $Q --dump newdump --csv results/a/b/x.csv >/dev/null && [ -s newdump/Q.npy ] && [ -s results/a/b/x.csv ] &&
    rm -rf newdump results"

# --- the CSV is written to a temporary and renamed at the end --------------------------------
# An interrupted run (SIGTERM from timeout, SIGKILL) leaves the previous CSV byte for byte.
printf '# the previous run\nkernel,verdict\nx,PASS\n' >"$PC/keep.csv"; cp "$PC/keep.csv" "$PC/keep.ref"
t_run "paths: timeout 1 phase6 --cpu leaves the previous CSV intact, no temporary" bash -c "
    rc=0; timeout 1 '$ABS_BUILD/phase6' --cpu --quiet --csv '$PC/keep.csv' >/dev/null || rc=\$?
    [ \$rc -eq 124 ] || { echo \"phase6 --cpu was not interrupted (exit \$rc): pick a run longer than 1 s\"; exit 1; }
    cmp '$PC/keep.csv' '$PC/keep.ref' || exit 1
    ! ls '$PC'/keep.csv.tmp-* 2>/dev/null || { echo 'SIGTERM left the temporary'; exit 1; }"
# The same for the other signals that end a run, and one stderr line says what was dropped
for sig in PIPE QUIT USR1 ALRM; do
    # A signal ignored where the run starts stays ignored (nohup; and a background job of a
    # script starts with SIGQUIT ignored, the whole test run when it is itself one): env
    # --default-signal gives phase6 the default action, whatever the tests inherited
    DFL=""; env --default-signal=$sig true 2>/dev/null && DFL="env --default-signal=$sig"
    t_run "paths: SIG$sig leaves the previous CSV intact, no temporary, says the partial results were dropped" bash -c "
        set -m; ulimit -c 0; cp '$PC/keep.ref' '$PC/keep.csv'; rm -f '$PC'/keep.csv.tmp-*
        $DFL '$ABS_BUILD/phase6' --cpu --quiet --csv '$PC/keep.csv' >/dev/null 2>'$PC/sig.err' & pid=\$!
        # the CSV's temporary, seen twice (not the probe's, which lives a moment)
        for i in \$(seq 200); do t=\$(ls '$PC'/keep.csv.tmp-* 2>/dev/null); sleep 0.1
            [ -n \"\$t\" ] && [ \"\$t\" = \"\$(ls '$PC'/keep.csv.tmp-* 2>/dev/null)\" ] && break; done
        kill -s $sig \$pid; wait \$pid; rc=\$?; cat '$PC/sig.err'
        [ \$rc -eq \$((128 + \$(kill -l $sig))) ] || { echo \"phase6 --cpu did not die of SIG$sig (exit \$rc)\"; exit 1; }
        cmp '$PC/keep.csv' '$PC/keep.ref' || exit 1
        ! ls '$PC'/keep.csv.tmp-* 2>/dev/null || { echo 'SIG$sig left the temporary'; exit 1; }
        grep -q '^phase6: stopped by SIG$sig: the partial results were dropped' '$PC/sig.err'"
done
t_run "paths: SIGXFSZ in the middle of a dump leaves no truncated .npy, and says so" bash -c "
    rc=0; (ulimit -f 2; exec '$P1' --cpu --quiet --B 1 --H 1 --N 64 --d 64 --dump '$PC/XF' --csv '$PC/keep.csv') >/dev/null 2>'$PC/xf.err' || rc=\$?
    cat '$PC/xf.err'
    [ \$rc -eq 153 ] || { echo \"not killed by SIGXFSZ (exit \$rc)\"; exit 1; }
    [ ! -e '$PC/XF' ] || { echo 'left:'; ls -la '$PC/XF'; exit 1; }
    cmp '$PC/keep.csv' '$PC/keep.ref' && grep -q 'stopped by SIGXFSZ: the partial results were dropped' '$PC/xf.err'"
# (a loaded machine can start the run late or let it finish between the look and the kill:
# the look waits up to 120 s, and a run that ended first is tried again, three times at most)
t_run "paths: SIGKILL once the CSV is open leaves the previous CSV intact" bash -c "
    for attempt in 1 2 3; do
        '$ABS_BUILD/phase6' --cpu --quiet --csv '$PC/keep.csv' >/dev/null & pid=\$!; t0=\$SECONDS
        until ls '$PC'/keep.csv.tmp-* >/dev/null 2>&1 || [ \$((SECONDS - t0)) -ge 120 ]; do sleep 0.05; done
        ls '$PC'/keep.csv.tmp-* >/dev/null 2>&1 || { echo 'no temporary seen in 120 s'; kill -KILL \$pid; exit 1; }
        kill -KILL \$pid; wait \$pid; rc=\$?
        [ \$rc -eq 137 ] && break
        echo \"attempt \$attempt: the run ended (exit \$rc) before the kill\"; cp '$PC/keep.ref' '$PC/keep.csv'
        [ \$attempt -lt 3 ] || exit 1
    done
    rm -f '$PC'/keep.csv.tmp-*
    cmp '$PC/keep.csv' '$PC/keep.ref'"
t_run_for "phase0 phase1 phase2" "paths: a run that ends replaces the CSV and leaves no temporary (phases 0, 1, 2)" bash -c "
    cd '$PC' && mkdir -p p0 p2 && '$ABS_BUILD/phase0' --quiet --csv p0/p0.csv >/dev/null && '$P1' $Q --csv keep.csv >/dev/null &&
    '$ABS_BUILD/phase2' --cpu --quiet --csv p2/p2.csv >/dev/null || exit 1
    ! cmp -s keep.csv keep.ref || { echo 'the CSV was not replaced'; exit 1; }
    [ -s p0/roofline_lines.csv ] && [ -s p2/phase2_overflow.csv ] || { echo 'a CSV beside it is missing'; exit 1; }
    [ -z \"\$(find . -name '*.tmp-*')\" ] || { echo 'temporaries left:'; find . -name '*.tmp-*'; exit 1; }"

# --- the option parser: --flag=value, names as typed, plain decimal numbers ------------------
t_run_for phase1 "options: --causal=1 --B=1 --N=16 work" "$P1" --cpu --quiet --causal=1 --B=1 --H=1 --N=16 --d=16 --csv "$PC/o1.csv"
t_run_for phase1 "options: --causal=0 and --causal=true work" "$P1" --cpu --quiet --causal=true --causal=0 $Q --csv "$PC/o2.csv"
t_exit2_says "options: --causal=2 is refused, saying what a flag takes" "flag.*=0" "$P1" --causal=2
t_exit2_says "options: --sr names what was typed" "unknown option '--sr'" "$P1" --sr 3
t_exit2_says "options: --c=1 is ambiguous, named as typed" "ambiguous option '--c'" "$P1" --c=1
t_exit2_says "options: --B +2 is refused (plain decimal digits)" "decimal digits" "$P1" --B +2
t_exit2_says "options: --N ' 2' is refused" "decimal digits" "$P1" --N " 2"
t_exit2_says "options: --seed -0 is refused" "decimal digits" "$P1" --seed -0
t_exit2_says "options: --iters= (empty) is refused" "decimal digits" "$P1" --iters=
t_exit2_says "options: phase 1 does not take --sram" "not taken" "$P1" --sram 4096
# --phi (a real number) as strict as the integers: plain decimal only
for v in " 1" "+1" "0x10" "1e" "inf" "nan" "1.5x" "."; do
    t_exit2_says "options: --phi '$v' is refused (plain decimal)" "plain decimal" "$ABS_BUILD/phase6" --cpu --quiet --phi "$v"
done
t_run_for phase6 "options: --phi -1.5e1 and --phi .5 are taken" bash -c "
    '$ABS_BUILD/phase6' $Q --phi -1.5e1 --csv /dev/null >/dev/null && '$ABS_BUILD/phase6' $Q --phi .5 --csv /dev/null >/dev/null"

# --- the CSV's '# git:' line: the commit the binary was built from, wherever it runs ----------
# (run from another repository, it used to record that repository's commit)
t_run_for phase1 "csv: '# git:' is the build's commit (build/gen/git_commit.h), not the current folder's repository" bash -c "
    want=\$(sed -n 's/^#define FA_BUILD_COMMIT \"\\(.*\\)\"\$/\\1/p' '$ABS_BUILD/gen/git_commit.h'); [ -n \"\$want\" ] || exit 1
    [ \"\$want\" = unknown ] || git cat-file -e \"\${want%-dirty}^{commit}\" || { echo \"baked \$want: not a commit of this tree\"; exit 1; }
    other='$PC/otherrepo'; mkdir -p \"\$other\" && cd \"\$other\" && git init -q . && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m x || exit 1
    '$P1' $Q --csv run.csv >/dev/null || exit 1
    got=\$(sed -n 's/^# git: \\([^ ]*\\) .*/\\1/p' run.csv); echo \"baked \$want, recorded \$got, this folder's repository \$(git rev-parse --short HEAD)\"
    [ \"\$got\" = \"\$want\" ]"
