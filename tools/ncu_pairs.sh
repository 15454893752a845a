#!/usr/bin/env bash
# tools/ncu_pairs.sh [SET...] - our kernels and their peers profiled by Nsight Compute on
# the same shapes, side by side (tools/ncu_compare.py), on the GPU machine. ncu names our
# kernels demangled with casts, bwd_mma_kernel<(int)128, (int)32, ...>: hence \(int\) below.
#
#   SET   ours                                      beside
#   bwd   phase 5 mma backward, d=128 and d=64       PyTorch SDPA flash backward (FA2's)
#   fwd   phase 4 fa2-mma forward, d=64, 128, 256  PyTorch SDPA flash forward (FA2's)
#         (and phase 4's wgmma at d=128, Hopper only)
#   dec   phase 6 split-pack, contiguous and paged   PyTorch SDPA flash (split-KV) decode
#   deccudnn phase 6 split-pack, N_q = 1, L = 64k,     PyTorch SDPA cuDNN decode (the faster
#         B = 8 MHA and B = 1 GQA; fused, B = 1 MHA  peer at these points)
#   hopper  phase 4's wgmma steps 2-5, 8, 9 and      PyTorch SDPA cuDNN forward (Hopper's
#           the FP8 step 7, d=128 and d=64          wgmma + TMA path)
#   hopper10 step 10 (wgmma-store) beside step 8,  PyTorch SDPA cuDNN forward at N = 2048
#           d=128 N=4096; step 8 at N = 2048
#   bwd2d phase 5's mma2d, d=128 and d=64            FA2's and cuDNN's backward (and wgmma-ws at d=64)
#   bwdh  phase 5's Hopper backward (wgmma,          PyTorch SDPA flash and cuDNN backward
#         wgmma-dq, wgmma-ws), mma2d, d=128, 64
#   masks phase 4's masked fa2-mma and wgmma-ws,      FlexAttention's forward (Triton) on the
#         d=128, N=8192: random_eviction (most      same masks (tools/mask_peers.py)
#         tiles partial), sliding:1024 (short rows)
#   masksbwd phase 5's masked wgmma-ws backward,    FlexAttention's backward (Triton), the
#         d=64, N=8192, causal as a mask            same mask
#
# $OUT (default results/ncu) receives one raw CSV per profile (in ncu_SET.tar.gz) and
# ncu_SET.txt, the side-by-side table; the tables are printed last.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-results/ncu}
T=$(mktemp -d "${TMPDIR:-/tmp}/ncu.XXXXXX"); trap 'rm -rf "$T"' EXIT
PY=${PYTHON:-python3}
NC="$PY tools/ncu_compare.py"
mkdir -p "$OUT"
command -v ncu >/dev/null || { echo "ncu_pairs: skipped: Nsight Compute (ncu) not found"; exit 0; }

# pair NAME REGEX COMMAND... : one profile into $T/NAME.csv
# NCU_ONLY="name ...": those profiles alone (the others of a set are skipped)
pair() {
    local n=$1 rx=$2; shift 2
    [ -n "${NCU_ONLY:-}" ] && [[ " $NCU_ONLY " != *" $n "* ]] && return
    echo "ncu_pairs: $n" >&2
    timeout "${NCU_TIMEOUT:-150}" $NC profile "$T/$n.csv" "$rx" -- "$@" >"$T/$n.log" 2>&1 || echo "ncu_pairs: $n failed (see $n.log)"
    grep -q 'No kernels were profiled' "$T/$n.log" && echo "ncu_pairs: $n: no kernel matched '$rx' (see $n.log)"
}
PEER="$PY tools/sdpa_peer.py --once"   # one SDPA call, nothing else
q() { echo "--quiet --iters 1 --csv $T/run.csv"; }
# cuDNN's backward process launches its forward first (cudnn_..._sdpa_sm90_flash_fprop_...):
# the backward's main kernel is the one named bprop. (Matching 'cudnn|sdpa' took the forward.)
CUDNN_BWD='sdpa.*bprop|bprop'

set_bwd() {
    pair ours_bwd128  'bwd_mma_kernel<\(int\)128,' build/phase5 --kernel mma --B 2 --H 16 --N 8192 --d 128 $(q)
    pair fa2_bwd128   'flash_bwd_dq_dk_dv' $PEER bwd flash 2,16,16,8192,8192,128,0
    pair ours_bwd64   'bwd_mma_kernel<\(int\)64,' build/phase5 --kernel mma --B 2 --H 32 --N 8192 --d 64 $(q)
    pair fa2_bwd64    'flash_bwd_dq_dk_dv' $PEER bwd flash 2,32,32,8192,8192,64,0
    table bwd ours_bwd128 fa2_bwd128 ours_bwd64 fa2_bwd64
}
set_fwd() {
    pair ours_fwd64   'fa2_mma_kernel<\(int\)64,' build/phase4 --kernel mma --B 4 --H 32 --N 4096 --d 64 $(q)
    pair fa2_fwd64    'flash_fwd_kernel'   $PEER fwd flash 4,32,32,4096,4096,64,0
    pair ours_fwd128  'fa2_mma_kernel<\(int\)128,' build/phase4 --kernel mma --B 4 --H 16 --N 4096 --d 128 $(q)
    pair fa2_fwd128   'flash_fwd_kernel'   $PEER fwd flash 4,16,16,4096,4096,128,0
    pair ours_wgmma128 'fa2_wgmma_kernel<\(int\)128>' build/phase4 --kernel wgmma --B 4 --H 16 --N 4096 --d 128 $(q)
    pair ours_fwd256  'fa2_mma_kernel<\(int\)256,' build/phase4 --kernel mma --B 4 --H 8 --N 4096 --d 256 $(q)
    pair fa2_fwd256   'flash_fwd_kernel'   $PEER fwd flash 4,8,8,4096,4096,256,0
    table fwd ours_fwd64 fa2_fwd64 ours_fwd128 fa2_fwd128 ours_wgmma128 ours_fwd256 fa2_fwd256
}
set_dec() {
    pair ours_contig  'dec_split_kernel<\(int\)128,' build/phase6 --kernel paged --B 1 --H 32 --Hkv 8 --Nkv 16384 $(q)
    pair ours_paged   'dec_paged_kernel<\(int\)128,' build/phase6 --kernel paged --B 1 --H 32 --Hkv 8 --Nkv 16384 $(q)
    pair ours_mha     'dec_split_kernel<\(int\)128,' build/phase6 --kernel split --B 1 --H 32 --Nkv 16384 $(q)
    pair fa2_mha      'flash_fwd_splitkv_kernel'    $PEER fwd flash 1,32,32,1,16384,128,0
    table dec ours_contig ours_paged ours_mha fa2_mha
}
set_deccudnn() {   # the N_q = 1 points where cuDNN leads (B = 8 MHA, B = 1 GQA; L = 64k)
    local ours='dec_split_kernel<\(int\)128,' cud='cudnn|sdpa|fprop|fmha'
    pair ours_b8mha   "$ours" build/phase6 --kernel split-pack --B 8 --H 32 --Hkv 32 --Nkv 65536 $(q)
    pair cudnn_b8mha  "$cud"  $PEER fwd cudnn 8,32,32,1,65536,128,0
    pair ours_b1gqa   "$ours" build/phase6 --kernel split-pack --B 1 --H 32 --Hkv 8 --Nkv 65536 $(q)
    pair cudnn_b1gqa  "$cud"  $PEER fwd cudnn 1,32,8,1,65536,128,0
    # the fused combine at B = 1 MHA (the decode table's first point: 0.91x cuDNN on the H200)
    pair ours_b1mha   "$ours" build/phase6 --kernel fused --B 1 --H 32 --Hkv 32 --Nkv 65536 $(q)
    pair cudnn_b1mha  "$cud"  $PEER fwd cudnn 1,32,32,1,65536,128,0
    table deccudnn ours_b8mha cudnn_b8mha ours_b1gqa cudnn_b1gqa ours_b1mha cudnn_b1mha
}
set_hopper() {
    # the kernels' names: hopper/steps.cuh (fa2_wgmma_tma_kernel for step 2; fa2_ws_kernel<D, StepN<D, ...>> for the
    # warp-specialised steps, FP8's Step7 among them)
    local wg='fa2_wgmma_tma_kernel<\(int\)' ws='fa2_ws_kernel<\(int\)' f8='fa2_ws_kernel<\(int\)'
    local s128="--B 4 --H 16 --N 4096 --d 128" s64="--B 4 --H 32 --N 4096 --d 64"
    pair tma128       "${wg}128>"  build/phase4 --kernel wgmma-tma      $s128 $(q)
    pair ws128        "${ws}128,"  build/phase4 --kernel wgmma-ws       $s128 $(q)
    pair pingpong128  "${ws}128,"  build/phase4 --kernel wgmma-pingpong $s128 $(q)
    pair overlap128   "${ws}128,"  build/phase4 --kernel wgmma-overlap  $s128 $(q)
    pair fa3order128  "${ws}128,"  build/phase4 --kernel wgmma-fa3order $s128 $(q)
    pair fa3_128      "${ws}128,"  build/phase4 --kernel wgmma-fa3      $s128 $(q)
    pair fp8_128      "${f8}128, Step7"  build/phase4 --kernel wgmma-fp8      $s128 $(q)
    pair cudnn128     'cudnn|sdpa|fprop|fmha' $PEER fwd cudnn 4,16,16,4096,4096,128,0
    pair tma64        "${wg}64>"   build/phase4 --kernel wgmma-tma      $s64 $(q)
    pair ws64         "${ws}64,"   build/phase4 --kernel wgmma-ws       $s64 $(q)
    pair fa3order64   "${ws}64,"   build/phase4 --kernel wgmma-fa3order $s64 $(q)
    pair cudnn64      'cudnn|sdpa|fprop|fmha' $PEER fwd cudnn 4,32,32,4096,4096,64,0
    table hopper tma128 ws128 pingpong128 overlap128 fa3order128 fa3_128 fp8_128 cudnn128 tma64 ws64 fa3order64 cudnn64
}
set_hopper10() {   # step 10 beside step 8 (N = 4096), and step 8 beside cuDNN at N = 2048, where it trails most
    local ws='fa2_ws_kernel<\(int\)' s128="--B 4 --H 16 --N 4096 --d 128" s2k="--B 8 --H 16 --N 2048 --d 128"
    pair fa3order128  "${ws}128,"  build/phase4 --kernel wgmma-fa3order $s128 $(q)
    pair store128     "${ws}128,"  build/phase4 --kernel wgmma-store    $s128 $(q)
    pair fa3order2k   "${ws}128,"  build/phase4 --kernel wgmma-fa3order $s2k $(q)
    pair cudnn2k      'cudnn|sdpa|fprop|fmha' $PEER fwd cudnn 8,16,16,2048,2048,128,0
    table hopper10 fa3order128 store128 fa3order2k cudnn2k
}
set_bwdh() {
    local wg='bwd_wgmma_kernel<\(int\)' s128="--B 2 --H 16 --N 8192 --d 128" s64="--B 2 --H 32 --N 8192 --d 64"
    pair wgmma128     "${wg}128, \(int\)64, \(int\)128, \(bool\)0" build/phase5 --kernel wgmma    $s128 $(q)
    pair wgmmadq128   "${wg}128, \(int\)64, \(int\)128, \(bool\)1" build/phase5 --kernel wgmma-dq $s128 $(q)
    pair wgmmaws128   'bwd_wgmma_ws_kernel<\(int\)128,'            build/phase5 --kernel wgmma-ws $s128 $(q)
    pair mma2d128     'bwd_mma2d_kernel<\(int\)128,'                 build/phase5 --kernel mma2d    $s128 $(q)
    pair fa2b128      'flash_bwd_dq_dk_dv' $PEER bwd flash 2,16,16,8192,8192,128,0
    pair cudnnb128    "$CUDNN_BWD" $PEER bwd cudnn 2,16,16,8192,8192,128,0
    pair wgmma64      "${wg}64, \(int\)64, \(int\)128, \(bool\)0"  build/phase5 --kernel wgmma    $s64 $(q)
    pair wgmmadq64    "${wg}64, \(int\)64, \(int\)128, \(bool\)1"  build/phase5 --kernel wgmma-dq $s64 $(q)
    pair wgmmaws64    'bwd_wgmma_ws_kernel<\(int\)64,'             build/phase5 --kernel wgmma-ws $s64 $(q)
    pair cudnnb64     "$CUDNN_BWD" $PEER bwd cudnn 2,32,32,8192,8192,64,0
    table bwdh wgmma128 wgmmadq128 wgmmaws128 mma2d128 fa2b128 cudnnb128 wgmma64 wgmmadq64 wgmmaws64 cudnnb64
}
set_masks() {
    local s="--B 1 --H 16 --N 8192 --d 128" m n
    for m in random_eviction:7 sliding:1024; do
        n=${m%%:*}
        pair ws_$n   'fa2_wgmma_ws_mask_kernel<\(int\)128>' \
            build/phase4 --kernel wgmma-ws $s --mask "$m" $(q)
        pair mma_$n  'fa2_mma_kernel<\(int\)128,.*\(bool\)1, \(bool\)1>' build/phase4 --kernel mma $s --mask "$m" $(q)
        pair flex_$n 'triton_tem' env MASK_PEERS_MODES=fwd MASK_PEERS_IMPLS=flex MAP=build/mask_map \
            $PY tools/mask_peers.py "$T/peer_$n.csv" 1 16 8192 128 "$m"
    done
    table masks ws_random_eviction mma_random_eviction flex_random_eviction ws_sliding mma_sliding flex_sliding
}
# The backward at d = 64 on a mask whose tiles sit in long runs (causal through the mask
# path), where Flex's backward comes closest. Flex's process runs its forward kernel first
# (also triton_tem...): the backward is the second launch that matches.
set_masksbwd() {
    local s="--B 1 --H 16 --N 8192 --d 64" m=causal
    pair ws_bwd64_causal 'bwd_wgmma_ws_kernel<\(int\)64,' build/phase5 --kernel wgmma-ws $s --mask "$m" $(q)
    NCU_LAUNCH_SKIP=1 pair flex_bwd64_causal 'triton_tem' env MASK_PEERS_MODES=bwd MASK_PEERS_IMPLS=flex MAP=build/mask_map \
        $PY tools/mask_peers.py "$T/peer_bwd.csv" 1 16 8192 64 "$m"
    table masksbwd ws_bwd64_causal flex_bwd64_causal
}
set_bwd2d() {
    local s128="--B 2 --H 16 --N 8192 --d 128" s64="--B 2 --H 32 --N 8192 --d 64"
    pair mma2d128     'bwd_mma2d_kernel<\(int\)128,' build/phase5 --kernel mma2d $s128 $(q)
    pair fa2b128      'flash_bwd_dq_dk_dv' $PEER bwd flash 2,16,16,8192,8192,128,0
    pair cudnnb128    "$CUDNN_BWD" $PEER bwd cudnn 2,16,16,8192,8192,128,0
    pair mma2d64      'bwd_mma2d_kernel<\(int\)64,'  build/phase5 --kernel mma2d $s64 $(q)
    pair fa2b64       'flash_bwd_dq_dk_dv' $PEER bwd flash 2,32,32,8192,8192,64,0
    pair wgmmaws64    'bwd_wgmma_ws_kernel<\(int\)64,' build/phase5 --kernel wgmma-ws $s64 $(q)
    pair cudnnb64     "$CUDNN_BWD" $PEER bwd cudnn 2,32,32,8192,8192,64,0
    table bwd2d mma2d128 fa2b128 cudnnb128 mma2d64 fa2b64 wgmmaws64 cudnnb64
}
table() {
    local s=$1; shift
    local files=(); for n in "$@"; do [ -s "$T/$n.csv" ] && files+=("$T/$n.csv"); done
    [ ${#files[@]} -gt 0 ] || { echo "ncu_pairs: $s: nothing profiled"; return; }
    $NC table "${files[@]}" >"$OUT/ncu_$s.txt" 2>&1
    tar -czf "$OUT/ncu_$s.tar.gz" -C "$T" $(cd "$T" && ls *.csv *.log | grep -v '^run')
    rm -f "$T"/*.csv "$T"/*.log
}

sets=("$@"); [ ${#sets[@]} -eq 0 ] && sets=(bwd fwd dec)
for s in "${sets[@]}"; do
    declare -F "set_$s" >/dev/null || { echo "ncu_pairs: unknown set '$s' (bwd, bwd2d, fwd, dec, deccudnn, hopper, hopper10, bwdh, masks, masksbwd)" >&2; exit 2; }
    "set_$s"
done
for s in "${sets[@]}"; do echo "==== ncu_$s"; cat "$OUT/ncu_$s.txt" 2>/dev/null; done
