#!/usr/bin/env bash
# tools/sass_count.sh FILE [FILTER] - every kernel of FILE, one line each: its instruction
# count, its local-memory accesses (spills or run-time-indexed arrays) and its demangled name.
# FILE is an object or program with cubins (SASS through cuobjdump: the GPU machine has it) or
# a .ptx file (nvcc -ptx: every machine with nvcc; PTX instructions and ld/st.local). FILTER,
# a grep -E pattern, keeps the matching kernels. Two runs, before and after a restructuring,
# side by side say whether it changed the code the GPU runs.
set -eu
f=$1; filter=${2:-.}
if [ "${f%.ptx}" != "$f" ]; then
  awk '/^\.(visible )?\.entry / { if (name != "") print n, loc, name; name = $NF; sub(/\(.*/, "", name); n = 0; loc = 0; body = 0; next }
       name != "" && /^[[:space:]]+[a-z@]/ && !/^[[:space:]]+\.(reg|local|shared|param|loc|file|pragma)/ { n++; if ($0 ~ /(ld|st)\.local/) loc++ }
       END { if (name != "") print n, loc, name }' "$f"
else
  cuobjdump -sass "$f" | awk '
    /Function : / { if (name != "") print n, loc, name; name = $3; n = 0; loc = 0; next }
    /^ +\/\*[0-9a-f]{4}\*\/ / { n++; if ($0 ~ /(LDL|STL)/) loc++ }
    END { if (name != "") print n, loc, name }'
fi | while read -r n loc name; do printf '%6d %4d  %s\n' "$n" "$loc" "$(echo "$name" | c++filt)"; done | grep -E -- "$filter" || true
