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
    t_run "phase$n output probe leaves nothing behind" bash -c "
        '$P' --cpu --quiet --csv '$TC/left$n/a/b/x.csv' --dump /proc/x 2>/dev/null; [ \$? -eq 2 ] || exit 1
        [ ! -e '$TC/left$n' ] || { echo 'the probe left $TC/left$n'; exit 1; }
        '$P' --cpu --quiet --csv '$TC/ok$n/a/x.csv' --B 1 --H 1 --N 16 --d 16 || exit 1
        [ -s '$TC/ok$n/a/x.csv' ] || { echo 'no CSV written after a passing probe'; exit 1; }"
done
# After a passing probe, a later exit 2 leaves neither folder nor file, and an existing
# CSV is left as it was (phase 4: --kernel mma with d=16 is refused after cli_parse).
t_run "output probe: a later exit 2 leaves no folder, an existing CSV untouched" bash -c "
    '$BUILD/phase4' --cpu --quiet --kernel mma --d 16 --csv '$TC/late/a/x.csv' 2>/dev/null; [ \$? -eq 2 ] || exit 1
    [ ! -e '$TC/late' ] || { echo 'left $TC/late'; exit 1; }
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
    t_exit2_says "phase$n rejects --csv under a read-only folder" "cannot create folder" \
        "${as_user[@]}" "$ABS_BUILD/phase$n" --cpu --quiet --csv "$RO/sub/x.csv"
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
    cd '$PC' && '$P1' $Q --csv '$C1012' && [ -s '$C1012' ] && rm -rf '$PC/abcdefghi'"
t_exit2_says "paths: a 1200-character --dump is refused up front" "cannot write the dump.*too long" \
    in_dir_unchanged "$PC" "$P1" $Q --dump "$L1200" --csv /dev/null
t_exit2_says "paths: a --dump with no room for params.txt is refused" "cannot write the dump.*too long" \
    in_dir_unchanged "$PC" "$P1" $Q --dump "$D990" --csv /dev/null
t_run_for phase1 "paths: a 980-character --dump writes every file under its own name" bash -c "
    cd '$PC' && '$P1' $Q --dump '$D980' --csv /dev/null || exit 1
    for f in Q K V O L; do [ -s '$D980'\$f.npy ] || { echo \"no \$f.npy\"; exit 1; }; done
    grep -q '^d=16\$' '$D980'params.txt || { echo 'params.txt missing or cut'; exit 1; }
    rm -rf '$PC/abcdefghi'"
t_exit2_says "paths: a probe that made 400 folders removes all of them" "cannot write the dump" \
    in_dir_unchanged "$PC" "$P1" $Q --csv "$DEEP" --dump /proc/x
t_run_for phase1 "paths: a CSV 400 folders deep is written" bash -c "
    cd '$PC' && '$P1' $Q --csv '$DEEP' && [ -s '$DEEP' ] && rm -rf '$PC/a'"

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
    cd '$PC' && '$P1' $Q --csv D2/x.csv --dump D && [ -s D2/x.csv ] && [ -s D/params.txt ]"
t_exit2_says "paths: --csv E/run.csv --dump E (a CSV inside the dump folder) is refused" "inside the dump folder" \
    in_dir_unchanged "$PC" "$P1" $Q --csv E/run.csv --dump E

# A dump that fails at the end (here a folder stands where Q.npy goes) fails the run: never
# exit 0 and PASS after "could not write the dump".
mkdir -p "$PC/DQ/Q.npy"
t_run "paths: a dump that cannot be written fails the run (exit 1, FAIL)" bash -c "
    out=\$('$P1' $Q --dump '$PC/DQ' --csv /dev/null 2>&1); rc=\$?; echo \"\$out\"
    [ \$rc -eq 1 ] && grep -q 'could not write the dump' <<<\"\$out\" && grep -q '^phase1: FAIL' <<<\"\$out\""

t_run "paths: a CSV that cannot be written completely fails the run (/dev/full: exit 1)" bash -c "
    rc=0; '$P1' $Q --csv /dev/full >/dev/null 2>'$PC/full.err' || rc=\$?; cat '$PC/full.err'
    [ \$rc -eq 1 ] && grep -q 'could not write /dev/full' '$PC/full.err'"

# --- the CSV is written to a temporary and renamed at the end --------------------------------
# An interrupted run (SIGTERM from timeout, SIGKILL) leaves the previous CSV byte for byte.
printf '# the previous run\nkernel,verdict\nx,PASS\n' >"$PC/keep.csv"; cp "$PC/keep.csv" "$PC/keep.ref"
t_run "paths: timeout 1 phase6 --cpu leaves the previous CSV intact, no temporary" bash -c "
    rc=0; timeout 1 '$ABS_BUILD/phase6' --cpu --quiet --csv '$PC/keep.csv' >/dev/null || rc=\$?
    [ \$rc -eq 124 ] || { echo \"phase6 --cpu was not interrupted (exit \$rc): pick a run longer than 1 s\"; exit 1; }
    cmp '$PC/keep.csv' '$PC/keep.ref' || exit 1
    ! ls '$PC'/keep.csv.tmp-* 2>/dev/null || { echo 'SIGTERM left the temporary'; exit 1; }"
t_run "paths: SIGKILL once the CSV is open leaves the previous CSV intact" bash -c "
    '$ABS_BUILD/phase6' --cpu --quiet --csv '$PC/keep.csv' >/dev/null & pid=\$!
    for i in \$(seq 200); do ls '$PC'/keep.csv.tmp-* >/dev/null 2>&1 && break; sleep 0.05; done
    ls '$PC'/keep.csv.tmp-* >/dev/null 2>&1 || { echo 'no temporary seen'; kill -KILL \$pid; exit 1; }
    kill -KILL \$pid; wait \$pid; [ \$? -eq 137 ] || { echo 'the run ended before the kill'; exit 1; }
    rm -f '$PC'/keep.csv.tmp-*
    cmp '$PC/keep.csv' '$PC/keep.ref'"
t_run_for "phase0 phase1 phase2" "paths: a run that ends replaces the CSV and leaves no temporary (phases 0, 1, 2)" bash -c "
    cd '$PC' && '$ABS_BUILD/phase0' --quiet --csv p0/p0.csv >/dev/null && '$P1' $Q --csv keep.csv >/dev/null &&
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
