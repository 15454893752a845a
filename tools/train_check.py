#!/usr/bin/env python3
"""train_check.py - a model trains on our kernels: phase 4's forward and phase 5's backward
(build/libfa_train.so, make train-lib) as a torch.autograd.Function, beside PyTorch's
scaled_dot_product_attention on the same model, seeds and data. Optional: it runs only where
PyTorch with CUDA imports, and otherwise prints one line saying it skipped and exits 0.

    make train-check CUDA_ARCH=sm_90     (builds the library, runs this, draws the plot)
    python3 tools/train_check.py [--lib build/libfa_train.so] [--out results/train/train_check.csv]
                                 [--seeds 6] [--steps 1000] [--sync]
    python3 tools/train_check.py --device cpu --smoke [--steps 200 --seeds 2]
        a test of THIS SCRIPT on a machine without a GPU: SDPA stands in for our kernels
        (the "ours" runs are SDPA too), so it checks nothing about them; its CSV says SMOKE

1. Gradients first: on one batch (the first layer's Q, K, V of the seed-0 model; and
   N(0, 1) Q, K, V of the same shape, a sharper softmax), O, dQ, dK, dV of ours against
   SDPA's (rel L2 < 1e-2 each), and both against an fp32 reference, printed.
2. The model: a small causal transformer (pre-LayerNorm, 2 layers, d_model 256, 8 query
   heads over 2 KV heads (GQA, nothing repeated for our kernels), head dimension d = 64,
   learned positions, MLP 4x, fp32 weights). Attention takes fp16 Q, K, V and gives fp16 O
   both ways: ours is our fp32 O rounded to fp16, SDPA's is its own fp16 output; the
   gradients come back in fp16 both ways (--grads). The loss is scaled as fp16 training
   scales it (torch.amp.GradScaler, --loss-scale): unscaled, this model's dQ, dK, dV lie
   below fp16's smallest normal number (6.1e-5), where fp16 keeps fewer bits, and the two
   backwards lose different amounts of them (the gradient check's last rows measure it).
3. The task needs attention: reverse a sequence. Each example is 64 random symbols of 16,
   a separator, then the same 64 reversed; the model reads N = 128 tokens (two K/V blocks
   or more in both kernels: the causal skip runs) and is scored on the 64 predictions of the
   reversed half (teacher forcing). Data are generated from the seed; the held-out set (2048
   examples) from a seed no run trains on.
4. Seeds 0 .. K-1, each trained twice: ours and SDPA. A seed fixes the initial weights and
   the batches, so ours and SDPA on seed s start from the same model and see the same data.
   Per-step training loss of every run goes to OUT (one column a run), the final numbers to
   OUT's _summary.csv; both open with the project's metadata header (tools/sdpa_peer.py).
5. Noise, measured: the spread (max - min) over SDPA's K seeds of each final number: the
   mean training loss over all steps (how fast it learned: the task is learned early, and
   then the last numbers say little), the held-out loss and the held-out token accuracy. A tiny change to a training run (one bit of a
   gradient) ends as far away as a new seed does, so ours is compared with SDPA's seed
   spread, not with its same-seed twin: PASS when the gradients match, ours learned the task
   (held-out token accuracy >= --acc-min on every seed), and |mean ours - mean SDPA| of
   each of the three is within SDPA's spread (accuracy with a floor of 1e-3: below it both
   solved the task). How often a correct kernel FAILs that comparison by chance, each number, when every
   run is as random as a new seed (simulated with normal draws): K = 6 0.6%, K = 5 2%,
   K = 4 5%, K = 3 14%, K = 2 (one extra SDPA run) about 40%; hence K = 6 by default.
"""
import argparse
import ctypes
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):   # bad input: one line on stderr, exit 2 (as every driver here)
        print(f"train_check: {message}", file=sys.stderr)
        sys.exit(2)


def parse(argv):
    ap = OneLineParser(description="train a small transformer on our kernels and on SDPA")
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "build", "libfa_train.so"))
    ap.add_argument("--out", default="results/train/train_check.csv")
    ap.add_argument("--seeds", type=int, default=6, help="seeds a side (>= 2: the noise needs two)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--acc-min", type=float, default=0.95, help="held-out token accuracy that counts as learned")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--smoke", action="store_true", help="SDPA in place of our kernels: tests the script only")
    ap.add_argument("--sync", action="store_true", help="synchronise around every call of ours (debugging)")
    ap.add_argument("--loss-scale", default="dynamic",
                    help="dynamic (default): torch.amp.GradScaler (start 2^16, doubled after 100 clean steps, "
                         "halved and the step skipped on an overflow), as fp16 training keeps its gradients "
                         "above fp16's smallest normal number; a number: that scale, never grown (an overflow "
                         "still halves it and skips the step, counted); 1: no scaling (this "
                         "model's attention gradients then fall below fp16's normal range: the gradient check's "
                         "last rows)")
    ap.add_argument("--grads", default="fp16", choices=("fp16", "fp32"),
                    help="the dtype our dQ, dK, dV are rounded to before they reach the model: fp16 (default) as "
                         "SDPA and the official FA2 return them for fp16 inputs, or fp32 as our kernels compute them")
    a = ap.parse_args(argv)
    if a.seeds < 2 or a.steps < 1 or a.batch < 1:
        ap.error("--seeds >= 2, --steps >= 1, --batch >= 1")
    if a.loss_scale != "dynamic":
        try:
            ok = float(a.loss_scale) >= 1.0 and math.isfinite(float(a.loss_scale))
        except ValueError:
            ok = False
        if not ok:
            ap.error(f"--loss-scale: 'dynamic' or a number >= 1, not '{a.loss_scale}'")
    if a.device == "cpu" and not a.smoke:
        ap.error("our kernels need CUDA: --device cpu only with --smoke")
    return a


ARGS = parse(sys.argv[1:])
LOSS_SCALE0 = 2.0 ** 16 if ARGS.loss_scale == "dynamic" else float(ARGS.loss_scale)   # the scale at step 0
try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception as e:
    print(f"train_check: skipped: PyTorch not importable ({e})")
    sys.exit(0)
if ARGS.device == "cuda" and not torch.cuda.is_available():
    print(f"train_check: skipped: PyTorch {torch.__version__} sees no CUDA device")
    sys.exit(0)

# ---- the model and task (fixed: the chapter quotes them) ---------------------------------
LAYERS, D_MODEL, H, H_KV, D_HEAD = 2, 256, 8, 2, 64
SYMBOLS, HALF = 16, 64                  # 64 symbols of 16, a separator, the 64 reversed
SEP, VOCAB, N = SYMBOLS, SYMBOLS + 1, 2 * HALF
SCALE = 1.0 / math.sqrt(D_HEAD)
HELDOUT, HELDOUT_SEED = 2048, 1_000_003
WARMUP, LAST = 100, 100                 # lr warm-up steps; the final train loss averages LAST steps
FP16_MIN_NORMAL = 2.0 ** -14           # 6.1e-5: below it fp16 is subnormal (fewer bits)
ACC_FLOOR = 1e-3                        # the smallest accuracy difference the verdict resolves
DEV = torch.device(ARGS.device)
ATT_DTYPE = torch.float16 if ARGS.device == "cuda" else torch.float32   # CPU SDPA: fp32


# ---- our kernels through ctypes -----------------------------------------------------------
class Lib:
    """build/libfa_train.so (tools/fa_train.h): raw device pointers and the shape."""

    def __init__(self, path, device_index):
        if not os.path.exists(path):
            print(f"train_check: FAIL: {path} not found (build it: make train-lib CUDA_ARCH=sm_90)")
            sys.exit(2)
        self.l = ctypes.CDLL(path)
        c_int, c_float, ptr = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
        self.l.fa_train_init.argtypes = [c_int]
        self.l.fa_train_config.argtypes = [c_int]
        self.l.fa_train_forward.argtypes = [c_int] * 7 + [c_float] + [ptr] * 5
        self.l.fa_train_backward.argtypes = [c_int] * 7 + [c_float] + [ptr] * 10
        self.l.fa_train_error.restype = ctypes.c_char_p
        self.check(self.l.fa_train_init(device_index), "fa_train_init")
        self.check(self.l.fa_train_config(D_HEAD), f"fa_train_config(d = {D_HEAD})")

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: {self.l.fa_train_error().decode()} (rc {rc})")

    def call(self, fn, shape, tensors):
        if torch.cuda.current_stream().cuda_stream != 0:
            raise RuntimeError("our kernels run on the legacy default stream: call them on torch's default stream")
        if ARGS.sync:
            torch.cuda.synchronize()
        self.check(fn(*shape, SCALE, *[t.data_ptr() for t in tensors]), fn.__name__)
        if ARGS.sync:
            torch.cuda.synchronize()


LIB = None


class FlashAttention(torch.autograd.Function):
    """O = softmax(scale Q K^T, causal) V through phase 4 (forward) and phase 5 (backward).
    q [B, H, N, d], k and v [B, H_kv, N, d], any float dtype: made contiguous fp16 (the
    kernels read [B][H][N][d] rows); O comes back as fp16 of our fp32 O; the gradients
    (fp32) come back in the inputs' dtypes."""

    @staticmethod
    def forward(ctx, q, k, v):
        B, Hq, Nq, d = q.shape
        Hk, Nk = k.shape[1], k.shape[2]
        q16, k16, v16 = (t.to(torch.float16).contiguous() for t in (q, k, v))
        o = torch.empty(B, Hq, Nq, d, dtype=torch.float32, device=q.device)
        L = torch.empty(B, Hq, Nq, dtype=torch.float32, device=q.device)
        shape = (B, Hq, Hk, Nq, Nk, d, 1)
        LIB.call(LIB.l.fa_train_forward, shape, (q16, k16, v16, o, L))
        ctx.save_for_backward(q16, k16, v16, o, L)
        ctx.shape, ctx.dtypes = shape, (q.dtype, k.dtype, v.dtype)
        return o.to(torch.float16)

    @staticmethod
    def backward(ctx, do):
        q16, k16, v16, o, L = ctx.saved_tensors
        do16 = do.to(torch.float16).contiguous()
        D = torch.empty_like(L)
        dq = torch.empty_like(o)
        dk = torch.empty(k16.shape, dtype=torch.float32, device=k16.device)
        dv = torch.empty_like(dk)
        LIB.call(LIB.l.fa_train_backward, ctx.shape, (q16, k16, v16, o, L, do16, D, dq, dk, dv))
        if ARGS.grads == "fp16":   # what an fp16 attention hands back (SDPA's, FA2's): the same rounding
            dq, dk, dv = (g.to(torch.float16) for g in (dq, dk, dv))
        return tuple(g.to(t) for g, t in zip((dq, dk, dv), ctx.dtypes))


def attn_sdpa(q, k, v):
    q, k, v = (t.to(ATT_DTYPE) for t in (q, k, v))
    try:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=SCALE, enable_gqa=True)
    except TypeError:   # a torch before enable_gqa (2.5): repeat the KV heads
        g = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                              is_causal=True, scale=SCALE)


def attn_ours(q, k, v):
    return attn_sdpa(q, k, v) if ARGS.smoke else FlashAttention.apply(q, k, v)


def attn_ref(q, k, v):
    """fp32 reference: the math on the fp16-rounded inputs, KV heads repeated."""
    g = q.shape[1] // k.shape[1]
    q, k, v = (t.to(torch.float16).float() for t in (q, k, v))
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) * SCALE
    n = s.shape[-1]
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


class Block(nn.Module):
    def __init__(self, attn):
        super().__init__()
        self.attn = attn
        self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.q = nn.Linear(D_MODEL, H * D_HEAD, bias=False)
        self.kv = nn.Linear(D_MODEL, 2 * H_KV * D_HEAD, bias=False)
        self.proj = nn.Linear(H * D_HEAD, D_MODEL, bias=False)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def qkv(self, x):
        B, n, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(B, n, H, D_HEAD).transpose(1, 2)                       # [B, H, n, d]
        k, v = self.kv(h).view(B, n, 2, H_KV, D_HEAD).permute(2, 0, 3, 1, 4)     # [B, H_kv, n, d]
        return q, k, v

    def forward(self, x):
        B, n, _ = x.shape
        y = self.attn(*self.qkv(x))
        x = x + self.proj(y.to(x.dtype).transpose(1, 2).reshape(B, n, H * D_HEAD))
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    def __init__(self, attn):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, D_MODEL), nn.Embedding(N, D_MODEL)
        self.blocks = nn.ModuleList(Block(attn) for _ in range(LAYERS))
        self.ln, self.head = nn.LayerNorm(D_MODEL), nn.Linear(D_MODEL, VOCAB)

    def embed(self, x):
        return self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))

    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln(h))


def make_batch(gen, B):
    """B examples: inputs [B, 64] (32 symbols, SEP, the first 31 reversed), targets [B, 32]
    (the reversed 32, what positions 32..63 predict)."""
    x = torch.randint(0, SYMBOLS, (B, HALF), generator=gen)
    r = x.flip(1)
    inp = torch.cat([x, torch.full((B, 1), SEP), r[:, :-1]], 1)
    return inp.to(DEV), r.to(DEV)


def loss_of(model, inp, tgt):
    logits = model(inp)[:, HALF:]            # the predictions of the reversed half
    return F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1)), logits


def build(seed, attn):
    torch.manual_seed(seed)                   # the same weights for ours and SDPA
    return Model(attn).to(DEV)


def make_scaler():
    """--loss-scale: a GradScaler that grows (dynamic), or one that never grows (a number: its
    growth interval is past the last step; an overflow still halves it and skips the step,
    counted; GradScaler refuses a growth factor of 1), or none (1)."""
    if ARGS.loss_scale == "dynamic":
        return torch.amp.GradScaler(DEV.type, init_scale=LOSS_SCALE0, growth_interval=100)
    return torch.amp.GradScaler(DEV.type, init_scale=LOSS_SCALE0, growth_interval=ARGS.steps + 1,
                                enabled=LOSS_SCALE0 != 1.0)


def train(seed, attn):
    """One run: per-step losses (list), the final numbers (dict)."""
    model = build(seed, attn)
    gen = torch.Generator().manual_seed(seed)  # the same batches for ours and SDPA
    opt = torch.optim.AdamW(model.parameters(), lr=ARGS.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / WARMUP) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / ARGS.steps)))))
    losses = torch.empty(ARGS.steps, device=DEV)
    scaler = make_scaler()
    skipped = 0   # steps the scaler skipped (a scaled gradient overflowed fp16)
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.time()
    for step in range(ARGS.steps):
        inp, tgt = make_batch(gen, ARGS.batch)
        loss, _ = loss_of(model, inp, tgt)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)                  # the true gradients, before the clip
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scale_before = scaler.get_scale()
        scaler.step(opt)                      # skipped when a scaled gradient overflowed
        scaler.update()
        skipped += int(scaler.get_scale() < scale_before)
        sched.step()
        losses[step] = loss.detach()
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    secs = time.time() - t0
    losses = losses.cpu().tolist()
    ev = evaluate(model)
    ev.update(train_loss=sum(losses[-LAST:]) / len(losses[-LAST:]), mean_loss=sum(losses) / len(losses), seconds=secs,
              finite=all(math.isfinite(x) for x in losses), skipped=skipped)
    return losses, ev


@torch.no_grad()
def evaluate(model):
    gen = torch.Generator().manual_seed(HELDOUT_SEED)
    tot_loss, tok, seq, n = 0.0, 0, 0, 0
    for _ in range(HELDOUT // 512):
        inp, tgt = make_batch(gen, 512)
        loss, logits = loss_of(model, inp, tgt)
        right = logits.argmax(-1) == tgt
        tot_loss += loss.item() * 512
        tok += right.sum().item()
        seq += right.all(1).sum().item()
        n += 512
    return {"heldout_loss": tot_loss / n, "token_acc": tok / (n * HALF), "seq_acc": seq / n}


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def grad_check():
    """O, dQ, dK, dV of ours against SDPA's and both against fp32, on two batches. Returns
    (pass, printed rows)."""
    model = build(0, attn_ours)
    inp, _ = make_batch(torch.Generator().manual_seed(0), ARGS.batch)
    with torch.no_grad():
        q, k, v = model.blocks[0].qkv(model.embed(inp))
    g = torch.Generator(device=DEV).manual_seed(1)
    rnd = [torch.randn(t.shape, generator=g, device=DEV) for t in (q, k, v)]
    do_loss = loss_dO(inp)
    ok, rows = True, []
    cases = (("layer-0 Q, K, V of the seed-0 model", (q, k, v), None),
             ("N(0, 1) Q, K, V", rnd, None),
             ("layer-0 Q, K, V, the loss's own dO", (q, k, v), do_loss))   # informational: see below
    for name, qkv, do in cases:
        base = [t.detach().to(torch.float16).contiguous() for t in qkv]
        if do is None:
            do = torch.randn(base[0].shape, generator=g, device=DEV).to(torch.float16)
        res = {}
        for who, fn in (("ours", attn_ours), ("sdpa", attn_sdpa), ("fp32", attn_ref)):
            leaves = [t.clone().requires_grad_(True) for t in base]
            o = fn(*leaves)
            o.backward(do.to(o.dtype))
            res[who] = [o.detach().float()] + [t.grad.float() for t in leaves]
        for i, t in enumerate(("O", "dQ", "dK", "dV")):
            r_os, r_of, r_sf = (rel_l2(res[a][i], res[b][i]) for a, b in (("ours", "sdpa"), ("ours", "fp32"), ("sdpa", "fp32")))
            tiny = (res["fp32"][i].abs() < FP16_MIN_NORMAL).float().mean().item()
            if name.startswith("layer-0 Q, K, V, the loss"):
                # The training loss's dO is tiny (a mean over B x 64 tokens): most gradients fall
                # below fp16's smallest normal number, where fp16 keeps fewer bits. Both fp16
                # results lose them alike; the rows show how much, and do not enter the verdict.
                rows.append((name, t, r_os, r_of, r_sf, None, tiny))
                continue
            good = r_os < 1e-2 and math.isfinite(r_os)
            ok &= good
            rows.append((name, t, r_os, r_of, r_sf, good, tiny))
    return ok, rows


def loss_dO(inp):
    """The dO that layer 0's attention receives from the seed-0 model's training loss (times
    --loss-scale) on the first batch (SDPA's forward), in fp16, as training hands it over."""
    seen = {}

    def attn_keep(q, k, v):
        o = attn_sdpa(q, k, v)
        if "o" not in seen:
            o.retain_grad()
            seen["o"] = o
        return o
    model = build(0, attn_keep)
    _, tgt = make_batch(torch.Generator().manual_seed(0), ARGS.batch)
    loss, _ = loss_of(model, inp, tgt)
    (loss * LOSS_SCALE0).backward()   # as training starts
    return seen["o"].grad.detach().to(torch.float16).contiguous()


def mean(x):
    return sum(x) / len(x)


def header(lines):
    """The project's metadata header (tools/sdpa_peer.py), or its CPU stand-in."""
    cmd = ["tools/train_check.py"] + sys.argv[1:]
    if DEV.type == "cuda":
        sys.path.insert(0, HERE)
        import sdpa_peer
        h = sdpa_peer.header("phase5 (training check)", cmd)
    else:
        h = (f"# phase: phase5 (training check) SMOKE TEST on the CPU: SDPA stands in for our kernels; not a result\n"
             f"# gpu: none | torch: {torch.__version__}\n"
             f"# git: {git_commit()} | date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n"
             f"# command: python3 {' '.join(cmd)}\n")
    return h + "".join(f"# {x}\n" for x in lines)


def git_commit():
    import subprocess
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def write_atomic(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main():
    global LIB
    t_start = time.time()
    if not ARGS.smoke:
        LIB = Lib(os.path.abspath(ARGS.lib), torch.cuda.current_device())
    ours_name = "ours(=sdpa, smoke)" if ARGS.smoke else "ours"
    where = torch.cuda.get_device_name() if DEV.type == "cuda" else "CPU"
    print(f"train_check: {where}, torch {torch.__version__}{'  SMOKE TEST: SDPA stands in for ours, not a result' if ARGS.smoke else ''}")

    gok, grows = grad_check()
    print("\ngradients on one batch (B=%d H=%d H_kv=%d N=%d d=%d causal), rel L2:" % (ARGS.batch, H, H_KV, N, D_HEAD))
    print(f"  {'inputs':38s} {'':3s} {'ours vs SDPA':>12s} {'ours vs fp32':>12s} {'SDPA vs fp32':>12s} {'< 6.1e-5':>9s}")
    for name, t, a, b, c, good, tiny in grows:
        print(f"  {name:38s} {t:3s} {a:12.2e} {b:12.2e} {c:12.2e} {100 * tiny:8.1f}%  "
              f"{'info' if good is None else 'ok' if good else 'FAIL (>= 1e-2)'}")
    print(f"  (< 6.1e-5: the share of the fp32 result below fp16's smallest normal; ours hands back "
          f"{ARGS.grads} gradients; the loss's-dO rows (loss scale {LOSS_SCALE0:g}) are information, not part of the check)")
    worst = max(r[2] for r in grows if r[5] is not None)
    print(f"gradient check: {'PASS' if gok else 'FAIL'} (ours vs SDPA: worst rel L2 {worst:.2e}, limit 1e-2)")

    runs = {}   # (impl, seed) -> (losses, final)
    seeds = list(range(ARGS.seeds))
    nparams = sum(p.numel() for p in build(0, attn_sdpa).parameters())
    print(f"\ntraining: {LAYERS} layers, d_model {D_MODEL}, {H} query heads over {H_KV} KV heads, d = {D_HEAD}, "
          f"{nparams / 1e6:.2f}M parameters; reverse {HALF} symbols of {SYMBOLS}; batch {ARGS.batch}, "
          f"{ARGS.steps} steps, loss scale {ARGS.loss_scale}, AdamW lr {ARGS.lr}; seeds {seeds}, ours and SDPA each")
    for seed in seeds:
        for impl, fn in (("ours", attn_ours), ("sdpa", attn_sdpa)):
            losses, fin = train(seed, fn)
            runs[impl, seed] = (losses, fin)
            print(f"  {impl:4s} seed {seed}: loss {losses[0]:.3f} -> {fin['train_loss']:.4f} (mean of the last {LAST}), "
                  f"held-out token accuracy {fin['token_acc']:.4f}, {fin['skipped']} steps skipped (overflow), "
                  f"{fin['seconds']:.1f} s", flush=True)

    # the verdict
    keys = (("mean_loss", "mean training loss"), ("heldout_loss", "held-out loss"), ("token_acc", "held-out token accuracy"))
    stats = {}
    for k, _ in keys:
        o = [runs["ours", s][1][k] for s in seeds]
        p = [runs["sdpa", s][1][k] for s in seeds]
        spread = max(p) - min(p)
        stats[k] = (mean(o), mean(p), spread, abs(mean(o) - mean(p)), max(spread, ACC_FLOOR if k == "token_acc" else 0.0))
    learned = min(runs["ours", s][1]["token_acc"] for s in seeds)
    finite = all(runs[i, s][1]["finite"] for i in ("ours", "sdpa") for s in seeds)
    within = all(st[3] <= st[4] for st in stats.values())
    ok = gok and finite and learned >= ARGS.acc_min and within
    noise = (f"noise: the spread (max - min) of SDPA's final numbers over its {len(seeds)} seeds (each seed: its own "
             f"initial weights and batch order; ours and SDPA share them seed by seed); tolerance: that spread "
             f"(accuracy: at least {ACC_FLOOR})")
    verdict = (f"{'SMOKE ' if ARGS.smoke else ''}{'PASS' if ok else 'FAIL'}: gradients {'match' if gok else 'DO NOT match'} SDPA's "
               f"(worst rel L2 {worst:.1e} < 1e-2); "
               f"{'learned' if learned >= ARGS.acc_min else 'NOT learned'} (min held-out token accuracy of ours "
               f"{learned:.4f} vs {ARGS.acc_min}); "
               + "; ".join(f"{label}: |mean ours - mean SDPA| {st[3]:.3g} {'<=' if st[3] <= st[4] else '>'} {st[4]:.3g}"
                           for (k, label), st in zip(keys, stats.values()))
               + ("" if finite else "; a loss went non-finite"))

    # the table
    print(f"\n{'run':20s} {'seed':>4s} {'mean loss':>10s} {'last loss':>10s} {'held-out loss':>13s} {'token acc':>9s} "
          f"{'seq acc':>8s} {'s':>6s}")
    for impl in ("ours", "sdpa"):
        for s in seeds:
            f = runs[impl, s][1]
            print(f"{ours_name if impl == 'ours' else 'sdpa':20s} {s:4d} {f['mean_loss']:10.3e} {f['train_loss']:10.3e} "
                  f"{f['heldout_loss']:13.3e} {f['token_acc']:9.4f} {f['seq_acc']:8.4f} {f['seconds']:6.1f}")
    for label, idx in (("mean ours", 0), ("mean sdpa", 1), ("SDPA seed spread", 2), ("|ours - sdpa|", 3)):
        print(f"{label:20s} {'':4s} {stats['mean_loss'][idx]:10.3e} {'':10s} {stats['heldout_loss'][idx]:13.3e} "
              f"{stats['token_acc'][idx]:9.4f}")
    print(noise)

    meta = [f"model: {LAYERS} layers, d_model {D_MODEL}, {H} query heads over {H_KV} KV heads (GQA), d = {D_HEAD}, "
            f"causal, {nparams} parameters, fp32 weights, attention fp16 in and out",
            f"task: reverse {HALF} symbols of {SYMBOLS} (loss on the {HALF} reversed tokens); batch {ARGS.batch}; "
            f"steps {ARGS.steps}; loss scale {ARGS.loss_scale} (dynamic: GradScaler from 2^16, growth interval 100; a number: static); AdamW lr {ARGS.lr} (warm-up {WARMUP}, cosine to 0.1x), clip 1.0; held-out "
            f"{HELDOUT} examples (seed {HELDOUT_SEED})",
            f"ours: {'SDPA (SMOKE TEST: not our kernels)' if ARGS.smoke else 'libfa_train.so: fa2_mma_launch(FA2_FULL) + bwd_mma_launch(BWD_ATOMIC)'}"
            f" (gradients handed back in {ARGS.grads})"
            f"; sdpa: torch.nn.functional.scaled_dot_product_attention(is_causal, enable_gqa), its own backend choice",
            "gradient check: " + "; ".join(f"{r[1]} {r[2]:.2e}" for r in grows[:4]) + " (layer-0 batch), "
            + "; ".join(f"{r[1]} {r[2]:.2e}" for r in grows[4:8]) + " (N(0,1)): rel L2 ours vs SDPA; with the loss's dO "
            "(information): " + "; ".join(f"{r[1]} ours {r[3]:.2e} SDPA {r[4]:.2e} vs fp32, {100 * r[6]:.0f}% below 6.1e-5"
                                          for r in grows[8:]),
            noise, f"verdict: {verdict}"]
    cols = [f"{i}_seed{s}" for i in ("ours", "sdpa") for s in seeds]
    body = "step," + ",".join(cols) + "\n" + "".join(
        f"{st}," + ",".join(f"{runs[i, s][0][st]:.6g}" for i in ("ours", "sdpa") for s in seeds) + "\n"
        for st in range(ARGS.steps))
    write_atomic(ARGS.out, header(meta) + body)
    base, ext = os.path.splitext(ARGS.out)
    summ = "impl,seed,mean_loss,train_loss,heldout_loss,token_acc,seq_acc,seconds,skipped\n" + "".join(
        f"{i},{s},{runs[i, s][1]['mean_loss']:.6g},{runs[i, s][1]['train_loss']:.6g},{runs[i, s][1]['heldout_loss']:.6g},{runs[i, s][1]['token_acc']:.5f},"
        f"{runs[i, s][1]['seq_acc']:.5f},{runs[i, s][1]['seconds']:.2f},{runs[i, s][1]['skipped']}\n" for i in ("ours", "sdpa") for s in seeds)
    write_atomic(base + "_summary" + ext, header(meta) + summ)
    print(f"wrote {ARGS.out} (per-step loss) and {base}_summary{ext}; {time.time() - t_start:.0f} s in all")
    print(f"train_check: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:   # a call of ours refused (fa_train_error's reason), or torch's own error
        print(f"train_check: FAIL: {e}")
        sys.exit(1)
