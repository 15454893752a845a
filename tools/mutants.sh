# tools/mutants.sh - the grader's holes, each a test (sourced by tools/tests.sh).
#
# A mutant is the REFERENCE source with one plausible mistake in one exercise (a line or
# two of its solution edited), built as an exercise build (EX=1) from a copy holding only
# the edited file, and run as a student runs it (`make <phase> run EX=1`: the default
# problem and <phase>_EX_RUNS). It must FAIL, and every "exercises behind" line of the run
# must name that exercise and no other: a check that names five exercises for a one-line
# mistake in one of them has not found it.
#
# The edits name the K-th reference line of the exercise (tools/mkexercise --solutions)
# and a sed command on it: a handout holds this file, and must hold no solution line
# (tools/exercises.sh leaks), so no reference line is written here. In a handout (the
# reference cut out) every mutant is skipped.
#
# MUTANT_FILTER (a grep -E pattern on "<phase> <name>") runs a few of them.
# CPU mutants run everywhere (NO_CUDA=1). A mutant in a .cu file compiles here (the
# edited file, nvcc -c, sm_90) and runs where a GPU is (t_gpu: skipped without one).

# Write DIR/ex/FILE: FILE with each "K EDIT" applied to the K-th reference line of EX.
mutant_write() {   # FILE EX DIR K EDIT [K EDIT ...]
    local file=$1 ex=$2 dir=$3 k line n src script="" lines=(); shift 3
    while [ $# -ge 2 ]; do
        k=$1
        line=$("$BUILD/mkexercise" --only "$ex" --solutions "$file" | sed -n "${k}p")
        n=$(awk -v ex="/* EXERCISE $ex:" -v l="$line" 'index($0, ex) { on = 1 } on && $0 == l { print NR; exit }' "$file")
        [ -n "$line" ] && [ -n "$n" ] || { echo "no reference line $k of $ex in $file"; return 3; }
        script+="${n}${2}"$'\n'; lines+=("$n")
        shift 2
    done
    mkdir -p "$dir/ex/$(dirname "$file")"
    sed "$script" "$file" >"$dir/ex/$file"
    case "$file" in *.h|*.cuh)   # read only by the sources beside it that include it (exercises.sh cut): copy them
        for src in "$(dirname "$file")"/*.c "$(dirname "$file")"/*.cu; do
            [ -f "$src" ] && grep -q "#include \"$(basename "$file")\"" "$src" && cp "$src" "$dir/ex/$src"
        done ;;
    esac
    for n in "${lines[@]}"; do   # every edit must change its line
        [ "$(sed -n "${n}p" "$file")" != "$(sed -n "${n}p" "$dir/ex/$file")" ] || { echo "an edit changed nothing (line $n of $file)"; return 3; }
    done
}

# The run's "exercises behind" lines name EX alone (and at least one does).
names_only() {   # EX LOG
    local named
    named=$(grep -E "exercises behind (this check|it): " "$2" | sed -E 's/^.*exercises behind (this check|it): //' | sort -u)
    [ "$named" = "$1" ] && return 0
    echo "want every FAIL to name $1 alone; the run names:"; echo "${named:-(nothing)}"; return 1
}

# Code that is no exercise (a phase's own machinery): its run must FAIL and every
# "exercises behind" line name no exercise (tools/exercises.sh list) - a mistake there is
# not the student's, and a FAIL that sends them to an exercise of theirs misleads.
names_no_exercise() {   # LOG
    local named ex
    named=$(grep -E "exercises behind (this check|it): " "$1" | sed -E 's/^.*exercises behind (this check|it): //' | sort -u)
    [ -n "$named" ] || { echo "no FAIL line says what is behind it"; return 1; }
    while read -r ex _; do
        if grep -qE "(^|[ ,])${ex//./\\.}(,|$)" <<<"$named"; then echo "the run names the exercise $ex:"; echo "$named"; return 1; fi
    done < <(bash tools/exercises.sh list)
}

# Build the phase from the mutant and run it as a student does; exit 1 on anything but a
# FAIL that names EX alone (3: the mutant does not build). EX "-": FILE holds no exercise,
# each EDIT a sed command on the whole file, and the FAIL must name no exercise.
mutant_fails() {   # PHASE FILE EX BUILD "MAKE VARS" K EDIT [K EDIT ...]  (EX -: EDIT [EDIT ...])
    local phase=$1 file=$2 ex=$3 build=$4 vars=$5 dir rc=0 e; shift 5
    dir=$(mktemp -d "${TMPDIR:-/tmp}/mutant.XXXXXX")
    if [ "$ex" = - ]; then
        mkdir -p "$dir/ex/$(dirname "$file")"; cp "$file" "$dir/ex/$file"
        for e in "$@"; do sed -i "$e" "$dir/ex/$file"; done
        ! cmp -s "$file" "$dir/ex/$file" || { echo "the edits changed nothing in $file"; return 3; }
    else mutant_write "$file" "$ex" "$dir" "$@" || return 3; fi
    # shellcheck disable=SC2086  # vars: make variables, one word each
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j"${JOBS:-2}" NO_DEPS=1 $vars EX=1 \
        EXDIR="$dir/ex" BUILD="$build" "$phase-build" >"$dir/build.log" 2>&1 ||
        { echo "the mutant does not build:"; tail -20 "$dir/build.log"; return 3; }
    # shellcheck disable=SC2086
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory $vars NO_DEPS=1 EX=1 EXDIR="$dir/ex" \
        BUILD="$build" RESULTS="$dir/results" "$phase" run >"$dir/run.log" 2>&1 || rc=$?
    grep -E 'FAIL|exercises behind|rror|Segmentation|Abort' "$dir/run.log" | head -30
    [ $rc -ne 0 ] || { echo "make $phase run EX=1 passed with the mistake"; return 1; }
    grep -qE 'Segmentation|core dumped|Abort' "$dir/run.log" && { echo "the run crashed"; return 1; }
    if [ "$ex" = - ]; then names_no_exercise "$dir/run.log"; else names_only "$ex" "$dir/run.log"; fi
}

# One build folder per edited file: make rebuilds an object when its source is newer, and a
# mutant's copy always is, but a file the NEXT mutant leaves as the reference is older than
# the mutated object already there (a shared folder ran one mutant's kernel under the next).
mutant_build() { echo "$T_ROOT/mutants-$1-$(basename "$2" | tr . _)"; }   # cpu|gpu FILE

have_reference() { [ -n "$("$BUILD/mkexercise" --only "$2" --solutions "$1" 2>/dev/null)" ]; }   # FILE EX

# mutant NAME PHASE FILE EX K EDIT [K EDIT ...]: a CPU mutant (one build folder a phase).
mutant() {
    local name=$1 phase=$2 file=$3 ex=$4; shift 4
    grep -qE -- "${MUTANT_FILTER:-.}" <<<"$phase $name" || return 0
    if have_reference "$file" "$ex"; then
        t_run "mutant: $name FAILs naming $ex alone" mutant_fails "$phase" "$file" "$ex" "$(mutant_build cpu "$file")" NO_CUDA=1 "$@"
    else t_skip "mutant: $name" "the reference of $ex is not in this tree (a handout)"; fi
}

# mutant_plain NAME PHASE FILE EDIT [EDIT ...]: a mistake in code that is no exercise (each
# EDIT a sed command on FILE); the run must FAIL naming no exercise. The file ships in a
# handout as it is (no solution in it), so the edits may quote it.
mutant_plain() {
    local name=$1 phase=$2 file=$3; shift 3
    grep -qE -- "${MUTANT_FILTER:-.}" <<<"$phase $name" || return 0
    if [ -n "${EX_BUILD:-}" ] || [ ! -x "$BUILD/mkexercise" ] || [ -z "$(bash tools/exercises.sh list 2>/dev/null | head -n 1)" ]; then
        t_skip "mutant: $name" "a test of the grader: the repository's make test runs it"
    else t_run "mutant: $name FAILs naming no exercise" mutant_fails "$phase" "$file" - "$(mutant_build cpu "$file")" NO_CUDA=1 "$@"; fi
}

# mutant_gpu NAME PHASE FILE EX K EDIT [K EDIT ...]: a mutant in a .cu file. Compiles here
# (the edited file alone, nvcc -c for sm_90, as an exercise build); FAILs where a GPU is.
mutant_gpu() {
    local name=$1 phase=$2 file=$3 ex=$4; shift 4
    grep -qE -- "${MUTANT_FILTER:-.}" <<<"$phase $name" || return 0
    if ! have_reference "$file" "$ex"; then t_skip "mutant: $name" "the reference of $ex is not in this tree (a handout)"; return; fi
    if ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then t_skip "mutant: $name" "nvcc not found"; return; fi
    t_run "mutant: $name compiles (sm_90)" mutant_compiles "$file" "$ex" "$@"
    t_gpu "mutant: $name FAILs naming $ex alone" mutant_fails "$phase" "$file" "$ex" "$(mutant_build gpu "$file")" \
        "CUDA_ARCH=${EX_CUDA_ARCH:-sm_90}" "$@"
}
mutant_compiles() {   # FILE EX K EDIT [K EDIT ...]
    local file=$1 ex=$2 dir cu n=0; shift 2
    dir=$(mktemp -d "${TMPDIR:-/tmp}/mutant-cu.XXXXXX")
    mutant_write "$file" "$ex" "$dir" "$@" || return 3
    for cu in "$dir/ex/$(dirname "$file")"/*.cu; do   # the file, or the sources that include the header
        [ -f "$cu" ] || continue
        n=$((n + 1))
        # shellcheck disable=SC2046  # one -I a phase folder
        "${NVCC:-nvcc}" -std=c++17 -arch=sm_90 -Icommon $(printf -- '-I%s ' phase*_*) -DHAVE_CUDA=1 -DEX_BUILD=1 \
            -c "$cu" -o "$dir/x.o" || return 1
    done
    [ $n -gt 0 ]
}

# ---- phase 0: the fp64 oracle (oracle.c) ----------------------------------------------
F0=phase0_model/oracle.c
mutant "p0.softmax_row returning log(l) without m" phase0 $F0 p0.softmax_row 14 's| m + log(l)| log(l)|'
mutant "p0.softmax_row without the max subtracted" phase0 $F0 p0.softmax_row 10 's|exp(x\[j\] - m)|exp(x[j])|'
mutant "p0.softmax_row with L = -inf for a fully masked row" phase0 $F0 p0.softmax_row 6 's|return INFINITY;|return -INFINITY;|'
mutant "p0.dS with D = rowsum(dO) (O forgotten)" phase0 $F0 p0.dS 2 's|(double)g\[c\] \* o\[c\]|(double)g[c]|'
mutant "p0.dS without D" phase0 $F0 p0.dS 3 's|(dP\[j\] - D)|dP[j]|'

# ---- phase 1: the naive CPU softmax (naive_cpu.c) --------------------------------------
F1=phase1_naive/naive_cpu.c
mutant "naive.cpu_softmax summing e^s without the max" phase1 $F1 naive.cpu_softmax 3 's|expf(s\[j\] - m)|expf(s[j])|'

# ---- phase 2: the online softmax (online_cpu.c) ----------------------------------------
F2=phase2_online_softmax/online_cpu.c
mutant "p2.merge keeping a's max (float m = a->m)" phase2 $F2 p2.merge 1 's|fmaxf(a->m, b->m)|a->m|'
mutant "p2.merge scaling b by e^(m - b.m)" phase2 $F2 p2.merge 2 's|expf(b->m - m)|expf(m - b->m)|'
mutant "p2.merge forgetting to rescale o" phase2 $F2 p2.merge 4 's|a->o\[c\] \* ca + b->o\[c\] \* cb|a->o[c] + b->o[c]|'
mutant "p2.ml_update without rescaling l" phase2 $F2 p2.ml_update 2 's|\*l \* expf(\*m - m_new)|*l|'
mutant "p2.ml_update taking the new max from x alone" phase2 $F2 p2.ml_update 1 's|fmaxf(\*m, x)|x|'
mutant "p2.o_update without alpha" phase2 $F2 p2.o_update 1 's|s->o\[c\] \* alpha|s->o[c]|'

# ---- phase 3: FA1's CPU model (fa1_cpu.c) ----------------------------------------------
F3=phase3_fa1/fa1_cpu.c
mutant "fa1.ml without rescaling the old l" phase3 $F3 fa1.ml 2 's|fa1_rescale(mi\[r\], m_new) \* li\[r\]|li[r]|'
mutant "fa1.ml with m_new = m_t (the old max forgotten)" phase3 $F3 fa1.ml 1 's|fmaxf(mi\[r\], m_t)|m_t|'
mutant "fa1.rescale without undoing the old normalisation (a = e^(..) only)" phase3 $F3 fa1.rescale 1 's|(a \* o\[k\] + b \* pv) \* inv|(o[k] + b * pv) * inv|'
mutant "fa1.rescale never dividing by l_new" phase3 $F3 fa1.rescale 1 's|(a \* o\[k\] + b \* pv) \* inv|a * o[k] + b * pv|'
mutant "fa1.blocks with floor(M / 4d)" phase3 $F3 fa1.blocks 1 's|(M + 4 \* (size_t)d - 1) / (4 \* (size_t)d)|M / (4 * (size_t)d)|'

# ---- phase 4: the FA2 forward model (fa2_cpu.c): FlashMask's rules and the causal range --
F4=phase4_fa2/fa2_cpu.c
mutant "fa2.mask_tile fully masked from uts_min (not uts_max)" phase4 $F4 fa2.mask_tile 1 's|r0 >= mb->uts_max\[j\]|r0 >= mb->uts_min[j]|'
mutant "fa2.mask_tile unmasked only when r1 < lts_min (more partial tiles)" phase4 $F4 fa2.mask_tile 2 's|r1 <= mb->lts_min\[j\]|r1 < mb->lts_min[j]|'
mutant "fa2.mask_tile unmasked from lte_min (not lte_max)" phase4 $F4 fa2.mask_tile 2 's|r0 >= mb->lte_max\[j\]|r0 >= mb->lte_min[j]|'
mutant "fa2.mask_element with row <= lte" phase4 $F4 fa2.mask_element 1 's|row < m->lte\[key\]|row <= m->lte[key]|'
mutant "fa2.causal_range rounding last_key / Bc up" phase4 $F4 fa2.causal_range 4 's|last_key / Bc + 1|(last_key + Bc - 1) / Bc|'
mutant "fa2.mask_element with the upper run's start exclusive (row > uts)" phase4 $F4 fa2.mask_element 1 's|row >= m->uts\[key\]|row > m->uts[key]|'
mutant "fa2.mask_tile fully masked by the lower run alone" phase4 $F4 fa2.mask_tile 1 's| \|\| (r0 >= mb->uts_max\[j\] \&\& r1 <= mb->ute_min\[j\])||'
mutant "fa2.causal_range seeing no key when last_key = 0" phase4 $F4 fa2.causal_range 3 's|last_key < 0|last_key <= 0|'
mutant "fa2.rescale dividing by alpha" phase4 $F4 fa2.rescale 1 's|alpha \* o + pv|o / alpha + pv|'
mutant "fa2.normalise multiplying by l" phase4 $F4 fa2.normalise 1 's|1.0f / l|l|'
mutant "fa2.lse with log2" phase4 $F4 fa2.lse 1 's|logf(l)|log2f(l)|'

# fa2-mma (a .cu header): on a GPU its run FAILs naming it; without one, phase 4's test runs
# the same mistake, and one in each other GPU exercise of the file, on the CPU emulator,
# where each exercise's own check names it alone (phase4_fa2/tests.sh, fa2_units.h)
mutant_gpu "fa2.online_mma's P~ by expf (log2(e) twice)" phase4 phase4_fa2/fa2_mma_kernel.cuh fa2.online_mma \
    9 's|= sfu_ex2(fmaf(s\[mtile\]\[n\]\[e\], sl2, -msc));|= expf(fmaf(s[mtile][n][e], sl2, -msc));|'

# ---- phase 5: the FA2 backward model (bwd_cpu.c) --------------------------------------
F5=phase5_backward/bwd_cpu.c
mutant "bwd.recompute_P as exp(S) / exp(L) (overflows past 88)" phase5 $F5 bwd.recompute_P 1 's|expf(s - Li\[r\])|expf(s) / expf(Li[r])|'
mutant "bwd.recompute_P without the mask" phase5 $F5 bwd.recompute_P 1 's|attn_visible(p, i0 + r, j0 + c) ? \(.*\) : 0.0f;|\1;|'
mutant "bwd.D = rowsum(dO) (O forgotten)" phase5 $F5 bwd.D 1 's|g\[c\] \* o\[c\]|g[c]|'
mutant "bwd.D with its sign flipped" phase5 $F5 bwd.D 1 's|+=|-=|'
mutant "bwd.dS without D" phase5 $F5 bwd.dS 1 's| - Di\[r\]||'
mutant "bwd.dQ without the scale" phase5 $F5 bwd.dQ 1 's|scale \* s|s|'
mutant "bwd.dQ overwriting instead of adding" phase5 $F5 bwd.dQ 1 's|+=|=|'
mutant "bwd.causal_range off by one block" phase5 $F5 bwd.causal_range 4 's|row / Br|row / Br + 1|'
mutant "bwd.causal_range without clamping the first row to 0 (a negative Q block)" phase5 $F5 bwd.causal_range 2 'd'
mutant "bwd.causal_range adding the diagonal offset" phase5 $F5 bwd.causal_range 1 's|- (p->N_kv - p->N_q)|+ (p->N_kv - p->N_q)|'

# ---- phase 6: Flash-Decoding (decode_cpu.c, dec_*.cuh) --------------------------------
F6=phase6_decoding/decode_cpu.c
mutant "dec.combine weighting by exp(L_s), no max subtracted" phase6 $F6 dec.combine 6 's|expf(Ls\[s\] - m)|expf(Ls[s])|' 7 's|m + logf(l)|logf(l)|'
mutant "dec.page_lookup with / and % swapped" phase6 $F6 dec.page_lookup 1 's|j / c->page|j % c->page|' 2 's|(j % c->page)|(j / c->page)|'
mutant "dec.combine giving L = -inf for a row with no key" phase6 $F6 dec.combine 4 's|\*L = INFINITY|*L = -INFINITY|'
mutant "dec.split_range with floor(Tc / S) blocks a split" phase6 $F6 dec.split_range 1 's|(Tc + S - 1) / S|(Tc / S > 0 ? Tc / S : 1)|'
mutant "dec.combine weighting by e^(L_s - m) (not divided by l)" phase6 $F6 dec.combine 9 's|expf(Ls\[s\] - lse)|expf(Ls[s] - m)|'
mutant "dec.combine with L = log(l), m forgotten" phase6 $F6 dec.combine 7 's|m + logf(l)|logf(l)|'
mutant "dec.split_range with (Tc + S) / S blocks a split" phase6 $F6 dec.split_range 1 's|(Tc + S - 1) / S|(Tc + S) / S|'
mutant "dec.page_lookup striding the block table by page" phase6 $F6 dec.page_lookup 1 's|(size_t)b \* c->pages_per_seq|(size_t)b * c->page|'
# FlashDecoding++'s window and fallback (decode_fdpp_cpu.c): no exercise, but the run must catch them
FD6=phase6_decoding/decode_fdpp_cpu.c
mutant_plain "FD++ without the overflow flag (a score past phi + 10 not recomputed)" phase6 $FD6 '/if (z > DEC_PHI_ABOVE) \*flags |= FDPP_PASSED;/d'
mutant_plain "FD++ l_s without the passed flag's +inf" phase6 $FD6 '/if (flags & FDPP_PASSED) return INFINITY;/d'
mutant_plain "FD++ combine counting a split with no key (-0) as reached" phase6 $FD6 's/reached |= ls\[s\] > 0;/reached |= ls[s] >= 0;/'
mutant_plain "FD++ combine with L = log(l), phi forgotten" phase6 $FD6 's/\*L = phi + logf(l);/*L = logf(l);/'
mutant_gpu "dec.combine_gpu weighting by exp(L_s), no max subtracted" phase6 phase6_decoding/dec_combine.cuh dec.combine_gpu \
    9 's|expf(Lpart\[(size_t)s \* nrows + row\] - lmax)|expf(Lpart[(size_t)s * nrows + row])|' 12 's|lmax + logf(sum)|logf(sum)|'
mutant_gpu "dec.page_lookup_gpu with / and % swapped" phase6 phase6_decoding/dec_paged.cuh dec.page_lookup_gpu 1 's|(j >> page_shift(a))|(j \& (a.page - 1))|'

# ---- phase 5's GPU kernels (bwd_simple.cu, bwd_mma.cu) ---------------------------------
mutant_gpu "bwd.recompute_P_gpu as exp(S) / exp(L) (overflows past 88)" phase5 phase5_backward/bwd_simple.cu bwd.recompute_P_gpu \
    1 's|expf(p.scale \* s - Li\[r\])|expf(p.scale * s) / expf(Li[r])|'
FCU5=phase5_backward/bwd_mma.cu
mutant_gpu "bwd.recompute_P_mma as 2^S / 2^L (overflows past 88)" phase5 $FCU5 bwd.recompute_P_mma \
    1 's|sfu_ex2(fmaf(s\[n\]\[e\], sl2, -Li\[col\] \* BWD_LOG2E))|sfu_ex2(s[n][e] * sl2) / sfu_ex2(Li[col] * BWD_LOG2E)|'
mutant_gpu "bwd.dS_mma without D" phase5 $FCU5 bwd.dS_mma 1 's| - Di\[n \* 8 + 2 \* t + e % 2\]||'
mutant_gpu "bwd.dQ_mma without the scale" phase5 $FCU5 bwd.dQ_mma 2 's| \* p.scale||g' 4 's| \* p.scale||' 5 's| \* p.scale||'
