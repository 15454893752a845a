# common/tests.sh - tests of the shared library (sourced by tools/run_tests.sh)
t_units "$BUILD/test_common"

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
