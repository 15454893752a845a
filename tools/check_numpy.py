#!/usr/bin/env python3
"""tools/check_numpy.py DIR - the independent NumPy cross-check of a phase's --dump.

Loads Q, K, V, O, L (and dO, dQ, dK, dV, mask_runs when params.txt says the dump holds
them: grads=1, mask=SPEC) plus params.txt from DIR, as
written by any driver's `--dump DIR` (common/dump.h), recomputes O, L and the gradients
in float64 NumPy with its own implementation (nothing here calls the project's code),
and prints one line per tensor with its relative L2 error, then PASS or FAIL.

Conventions it checks independently (common/problem.h):
  * layout [B][H][N][d]; GQA: query head h reads KV head h // (H // H_kv);
  * causal is bottom-right aligned: row i sees column j iff j <= i + (N_kv - N_q);
  * a fully masked row has O = 0 and L = +inf, and contributes no gradient.
Tolerance: the dumped tensors are fp32 (a CPU model, or the fp64 oracle rounded to fp32),
so rel L2 < 1e-5 (docs/design.md, "Checks and tolerances"). GPU dumps (fp16 kernels):
--tol 3e-3 --gtol 1e-2.

Exit: 0 PASS, 1 FAIL, 2 bad usage or missing/malformed files (a file the dump should
hold and does not, or whose size is not what its header announces).
"""
import os
import sys


def die(msg):
    print("check_numpy: " + msg, file=sys.stderr)
    sys.exit(2)


def read_params(path):
    want = ("B", "H", "H_kv", "N_q", "N_kv", "d", "causal", "scale")
    p = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    p[k] = v
    except OSError as e:
        die("cannot read %s: %s" % (path, e.strerror))
    missing = [k for k in want if k not in p]
    if missing:
        die("%s lacks %s" % (path, ", ".join(missing)))
    try:
        out = {k: int(p[k]) for k in want if k != "scale"}
        out["scale"] = float(p["scale"])
        out["grads"] = int(p["grads"]) != 0 if "grads" in p else None
    except ValueError:
        die("%s holds a value that is not a number" % path)
    out["mask"] = p.get("mask") or None
    return out


def reference(np, p, Q, K, V, dO):
    """O, L (and dQ, dK, dV if dO is not None) in float64, straight from the definitions."""
    B, H, Hkv, Nq, Nkv = p["B"], p["H"], p["H_kv"], p["N_q"], p["N_kv"]
    g = H // Hkv
    Kh = np.repeat(K, g, axis=1)              # [B][H][Nkv][d]: each query head's KV head
    Vh = np.repeat(V, g, axis=1)
    S = p["scale"] * np.einsum("bhid,bhjd->bhij", Q, Kh)
    if p["causal"]:
        i = np.arange(Nq)[:, None]
        j = np.arange(Nkv)[None, :]
        S = np.where(j <= i + (Nkv - Nq), S, -np.inf)
    if p.get("mask_runs") is not None:          # a FlashMask mask: two masked runs per key column
        lts, lte, uts, ute = (p["mask_runs"][k].astype(np.int64)[None, :] for k in range(4))
        i = np.arange(Nq)[:, None]
        hidden = ((i >= lts) & (i < lte)) | ((i >= uts) & (i < ute))
        S = np.where(hidden, -np.inf, S)
    m = S.max(axis=-1, keepdims=True)
    masked = np.isneginf(m)                    # rows that see no key at all
    m_safe = np.where(masked, 0.0, m)
    E = np.exp(S - m_safe)                     # exp(-inf) = 0 on masked entries
    l = E.sum(axis=-1, keepdims=True)
    l_safe = np.where(masked, 1.0, l)
    P = E / l_safe
    O = P @ Vh
    L = np.where(masked, np.inf, m_safe + np.log(l_safe))[..., 0]
    if dO is None:
        return O, L, None, None, None
    dVh = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(Vh, -1, -2)
    D = (dO * O).sum(axis=-1, keepdims=True)
    dS = P * (dP - D)
    dQ = p["scale"] * dS @ Kh
    dKh = p["scale"] * np.swapaxes(dS, -1, -2) @ Q
    # GQA: the gradient of a shared KV head is the sum over its query heads
    dK = dKh.reshape(B, Hkv, g, Nkv, -1).sum(axis=2)
    dV = dVh.reshape(B, Hkv, g, Nkv, -1).sum(axis=2)
    return O, L, dQ, dK, dV


def rel_l2(np, out, ref):
    """||out - ref|| / ||ref|| over finite reference entries; +inf entries must match."""
    out = out.astype(np.float64)
    if out.shape != ref.shape:
        return None, "shape %s, expected %s" % (out.shape, ref.shape)
    if np.isnan(out).any():
        return None, "%d NaN values" % int(np.isnan(out).sum())
    inf = np.isinf(ref)
    if (np.isinf(out) != inf).any() or (out[inf] != ref[inf]).any():
        return None, "the +inf entries (fully masked rows) differ"
    diff = np.linalg.norm(out[~inf] - ref[~inf])
    norm = np.linalg.norm(ref[~inf])
    return (diff / norm if norm > 0 else diff), ""


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="check_numpy.py",
                                 description="NumPy float64 cross-check of a driver's --dump DIR")
    ap.add_argument("dir", help="folder written by a driver's --dump")
    ap.add_argument("--tol", type=float, default=1e-5, help="rel L2 bound for O and L (1e-5)")
    ap.add_argument("--gtol", type=float, default=1e-5, help="rel L2 bound for dQ, dK, dV (1e-5)")
    a = ap.parse_args(argv[1:])             # bad usage: argparse exits 2
    tol, gtol, d = a.tol, a.gtol, a.dir
    if not os.path.isdir(d):
        die("%s is not a folder (write one with e.g. build/phase0 --dump %s)" % (d, d))
    try:
        import numpy as np
    except ImportError:
        die("NumPy is missing: install it with '%s -m pip install numpy'" % (sys.executable or "python3"))

    p = read_params(os.path.join(d, "params.txt"))
    if p["H_kv"] < 1 or p["H"] % p["H_kv"]:
        die("params.txt: H=%d is not a multiple of H_kv=%d" % (p["H"], p["H_kv"]))

    def load(name, required):
        path = os.path.join(d, name + ".npy")
        if not os.path.exists(path):
            if required:
                die("%s is missing" % path)
            return None
        try:
            with open(path, "rb") as f:   # the header, then exactly the data it announces
                fmt = np.lib.format
                version = fmt.read_magic(f)
                read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                shape, _, dtype = read(f)
                want = f.tell() + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            size = os.path.getsize(path)
            if size != want:
                die("%s holds %d bytes, its header announces %d (%s)" %
                    (path, size, want, "truncated" if size < want else "bytes past the data"))
            return np.load(path)
        except SystemExit:
            raise
        except Exception as e:  # a foreign file
            die("cannot load %s: %s" % (path, e))

    # what the dump holds: params.txt says (grads=, mask=); a file it does not list is not read,
    # so a reused folder's older files neither pass nor fail a dump. A dump without grads=
    # (written before the key) holds gradients when it holds dO, and then all three.
    has_grads = p["grads"] if p["grads"] is not None else os.path.exists(os.path.join(d, "dO.npy"))
    Q, K, V, O, L = (load(n, True) for n in ("Q", "K", "V", "O", "L"))
    dO, dQ, dK, dV = (load(n, True) if has_grads else None for n in ("dO", "dQ", "dK", "dV"))
    B, H, Hkv, Nq, Nkv, dd = (p[k] for k in ("B", "H", "H_kv", "N_q", "N_kv", "d"))
    for name, x, shape in (("Q", Q, (B, H, Nq, dd)), ("K", K, (B, Hkv, Nkv, dd)), ("V", V, (B, Hkv, Nkv, dd))):
        if x.shape != shape:
            die("%s.npy has shape %s, params.txt says %s" % (name, x.shape, shape))
    if dO is not None and dO.shape != Q.shape:
        die("dO.npy has shape %s, expected %s" % (dO.shape, Q.shape))
    grads = has_grads
    # [4][N_kv]: lts, lte, uts, ute (a FlashMask mask), there when params.txt names a mask
    p["mask_runs"] = load("mask_runs", True) if p["mask"] else None
    if p["mask_runs"] is not None and p["mask_runs"].shape != (4, Nkv):
        die("mask_runs.npy has shape %s, expected %s" % (p["mask_runs"].shape, (4, Nkv)))

    Q64, K64, V64 = (x.astype(np.float64) for x in (Q, K, V))
    rO, rL, rdQ, rdK, rdV = reference(np, p, Q64, K64, V64, dO.astype(np.float64) if grads else None)

    print("check_numpy: %s  B=%d H=%d Hkv=%d Nq=%d Nkv=%d d=%d%s%s scale=%g" %
          (d, B, H, Hkv, Nq, Nkv, dd, " causal" if p["causal"] else "",
           " mask" if p["mask_runs"] is not None else "", p["scale"]))
    rows = [("O", O, rO, tol), ("L", L, rL, tol)]
    if grads:
        rows += [(n, x, r, gtol) for n, x, r in (("dQ", dQ, rdQ), ("dK", dK, rdK), ("dV", dV, rdV))
                 if x is not None]
    masked = int(np.isinf(rL).sum())
    ok = True
    for name, out, ref, t in rows:
        err, why = rel_l2(np, out, ref)
        good = err is not None and err < t
        ok &= good
        if err is None:
            print("  %-3s FAIL  %s" % (name, why))
        else:
            print("  %-3s rel L2 %.3e  (tol %.0e)  %s" % (name, err, t, "PASS" if good else "FAIL"))
    if masked:
        # a fully masked row must hold exactly O = 0 (rel L2 alone would hide a small value)
        zero = np.abs(O.astype(np.float64)[np.isinf(rL)]).max(initial=0.0) == 0.0
        ok &= zero
        print("  %d fully masked rows: L = +inf, O = 0 there: %s" % (masked, "PASS" if zero else "FAIL"))
    if not grads:
        print("  (no dO/dQ/dK/dV in the dump: forward only)")
    print("check_numpy: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
