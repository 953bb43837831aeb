#!/usr/bin/env python3
"""Whole-model throughput in PyTorch, on the shapes `tfm bench` uses (tfm/perf/model_bench.h).

Models (tools/seed_models.py):
  seed004   the seeds' model: seed 004's layout (jadore801120), post-norm, tied output, separate
            source/target embeddings as the tfm presets have them;
  torch-nn  the nn.Transformer tutorial model (sequence-first torch.nn.Transformer).
Modes:
  train     batches of 64 sentences x 32 source and 32 target tokens (random ids), forward,
            label-smoothed (0.1) cross-entropy, backward, Adam step; tokens = source + target.
  greedy    32 sentences x 32 source tokens (+ EOS), exactly 32 generated tokens each (EOS
            forbidden before, forced after, as tfm's bench does), decoding the way the seeds do:
            encode once, re-run the decoder over the whole prefix at every step.
  beam      the same with a straightforward batched beam of 4 (rows = sentences x beams, the
            decoder re-run over each row's prefix, parents gathered with index_select).

    .venv/bin/python bench/compare_pytorch.py --model seed004 --preset small --mode train \
        --threads 2 [--repeat 5] [--precision fp32|bf16] [--device cpu|cuda] [--json]

--device cuda runs the model, the batches and the optimiser on the GPU (eager; torch-nn's
nn.MultiheadAttention goes through scaled_dot_product_attention, seed004 its own matmuls), with
bf16 as torch.autocast('cuda', torch.bfloat16); each repeat ends with torch.cuda.synchronize(),
and the ceiling is torch.mm of 8192^3 f32 (TF32 off, PyTorch's default) or bf16 on that GPU, as
`tfm bench --device cuda` measures its own (cuBLASLt) ones.

The useful GEMM FLOPs are counted as tfm counts them (incremental decoding: the work a KV-cached
decoder needs), so `mfu` is comparable; its denominator here is torch.mm's 2048^3 rate in this
process (`bench/compare.sh` also divides by tfm's dnnl_sgemm ceiling).
"""
import argparse
import contextlib
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from seed_models import Seed004Transformer, TorchNNSeq2Seq  # noqa: E402

PRESETS = {  # tfm's ModelConfig::preset
    "tiny": dict(d=32, heads=4, ff=64, layers=2),
    "small": dict(d=256, heads=4, ff=1024, layers=3),
    "base": dict(d=512, heads=8, ff=2048, layers=6),
    "big": dict(d=1024, heads=16, ff=4096, layers=6),
}
PAD, BOS, EOS = 0, 1, 2
DEV = torch.device("cpu")  # --device


def build(kind, p, vocab, dropout):
    if kind == "seed004":
        return Seed004Transformer(
            vocab, vocab, PAD, PAD, d_word_vec=p["d"], d_model=p["d"], d_inner=p["ff"],
            n_layers=p["layers"], n_head=p["heads"], d_k=p["d"] // p["heads"],
            d_v=p["d"] // p["heads"], dropout=dropout, n_position=200,
            trg_emb_prj_weight_sharing=True, emb_src_trg_weight_sharing=False,
            scale_emb_or_prj="emb")
    return TorchNNSeq2Seq(p["layers"], p["layers"], p["d"], p["heads"], vocab, vocab,
                          dim_feedforward=p["ff"], dropout=dropout, pad_idx=PAD)


class Seed004Decoder:
    """encode(src) -> memory state; decode(state, ys) -> last-position logits (rows, V)."""

    def __init__(self, m):
        self.m = m

    def encode(self, src):
        mask = (src != PAD).unsqueeze(-2)
        return self.m.encoder(src, mask), mask

    def repeat(self, state, k):
        enc, mask = state
        return enc.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)

    def decode(self, state, ys):
        enc, src_mask = state
        t = ys.size(1)
        sub = torch.tril(torch.ones((1, t, t), dtype=torch.bool, device=ys.device))
        trg_mask = (ys != PAD).unsqueeze(-2) & sub
        h = self.m.decoder(ys, trg_mask, enc, src_mask)[:, -1]
        logits = self.m.trg_word_prj(h)
        return logits * self.m.d_model ** -0.5 if self.m.scale_prj else logits


class TorchNNDecoder:
    def __init__(self, m):
        self.m = m

    def encode(self, src):
        s = src.transpose(0, 1)
        pad = (src == PAD)
        emb = self.m.positional_encoding(self.m.src_tok_emb(s))
        return self.m.transformer.encoder(emb, None, pad), pad  # (S, B, C)

    def repeat(self, state, k):
        mem, pad = state
        return mem.repeat_interleave(k, 1), pad.repeat_interleave(k, 0)

    def decode(self, state, ys):
        mem, pad = state
        t = ys.size(1)
        tgt_mask = torch.triu(torch.full((t, t), float("-inf"), device=ys.device), diagonal=1)
        emb = self.m.positional_encoding(self.m.tgt_tok_emb(ys.transpose(0, 1)))
        h = self.m.transformer.decoder(emb, mem, tgt_mask, None, ys == PAD, pad)[-1]
        return self.m.generator(h)


def masked_log_probs(logits, generated, length):
    lp = torch.log_softmax(logits, dim=-1)
    if generated >= length:  # the last position: EOS only
        eos = lp[:, EOS].clone()
        lp.fill_(float("-inf"))
        lp[:, EOS] = eos
        return lp
    lp[:, PAD] = float("-inf")
    lp[:, BOS] = float("-inf")
    lp[:, EOS] = float("-inf")  # min_length = length
    return lp


def greedy(dec, src, length):
    state = dec.encode(src)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=src.device)
    for step in range(length + 1):
        lp = masked_log_probs(dec.decode(state, ys), step, length)
        ys = torch.cat([ys, lp.argmax(-1, keepdim=True)], 1)
    out = ys[:, 1:-1]
    assert out.size(1) == length and bool((ys[:, -1] == EOS).all())
    return out


def beam(dec, src, length, k):
    b = src.size(0)
    state = dec.repeat(dec.encode(src), k)
    ys = torch.full((b * k, 1), BOS, dtype=torch.long, device=src.device)
    scores = torch.full((b, k), float("-inf"), device=src.device)
    scores[:, 0] = 0  # one live hypothesis per sentence at the start
    for step in range(length + 1):
        lp = masked_log_probs(dec.decode(state, ys), step, length)  # (b·k, V)
        v = lp.size(1)
        cand = (scores.unsqueeze(-1) + lp.view(b, k, v)).view(b, k * v)
        scores, idx = cand.topk(k, dim=1)
        parent = (idx // v + torch.arange(b, device=src.device).unsqueeze(1) * k).view(-1)
        ys = torch.cat([ys.index_select(0, parent), (idx % v).view(-1, 1)], 1)
    best = ys.view(b, k, -1)[:, 0, 1:-1]
    assert best.size(1) == length and bool((ys[:, -1] == EOS).all())
    return best


def forward_flops(p, vocab, batch, s, t):
    d, ff, layers = p["d"], p["ff"], p["layers"]
    ns, nt = batch * s, batch * t
    enc = layers * (2 * ns * (4 * d * d + 2 * d * ff) + 4 * ns * s * d)
    dec = layers * (2 * nt * (4 * d * d + 2 * d * ff) + 4 * nt * t * d
                    + 2 * nt * 2 * d * d + 2 * ns * 2 * d * d + 4 * nt * s * d)
    return enc + dec + 2 * nt * d * vocab


def decode_flops(p, vocab, batch, s, step_rows):
    d, ff, layers = p["d"], p["ff"], p["layers"]
    ns = batch * s
    f = layers * (2 * ns * (4 * d * d + 2 * d * ff) + 4 * ns * s * d) + layers * 2 * ns * 2 * d * d
    for i, r in enumerate(step_rows):
        layer = 2 * r * (4 * d * d + 2 * d * ff) + 4 * r * (i + 1) * d + 2 * r * 2 * d * d + 4 * r * s * d
        f += layers * layer + 2 * r * d * vocab
    return f


def sync():
    if DEV.type == "cuda":
        torch.cuda.synchronize()


def mm_ceiling(n=2048, runs=5, dtype=torch.float32):
    a = torch.rand(n, n, device=DEV).to(dtype) - 0.5
    b = torch.rand(n, n, device=DEV).to(dtype) - 0.5
    torch.mm(a, b)
    best = 0.0
    for _ in range(runs):
        sync()
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync()
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t0) / 1e9)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["seed004", "torch-nn"], default="seed004")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="small")
    ap.add_argument("--mode", choices=["train", "greedy", "beam"], default="train")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=0, help="0: 64 train, 32 decoding")
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--beam-size", type=int, default=4)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: torch.autocast('cpu', torch.bfloat16) around the forward and "
                         "loss (training) or the search (decoding), PyTorch's mixed precision")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--compile", action="store_true",
                    help="training step's forward and loss through torch.compile (train mode only; "
                         "the compilation happens in the warm-up)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global DEV
    DEV = torch.device(args.device)
    if args.repeat < 1 or args.seq_len < 1 or args.vocab <= 4:
        ap.error("--repeat and --seq-len must be positive, --vocab > 4")
    if args.compile and (args.mode != "train" or args.warmup < 1):
        ap.error("--compile takes --mode train and --warmup >= 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    p, V, L = PRESETS[args.preset], args.vocab, args.seq_len
    B = args.batch_size or (64 if args.mode == "train" else 32)
    model = build(args.model, p, V, dropout=0.1).to(DEV)
    if args.precision == "bf16":
        # PyTorch 1.13's CPU autocast leaves layer_norm out of its fp32 list, and the seeds'
        # in-place residual add (q += residual) hands it a bf16 input with f32 weights, which
        # it rejects; later PyTorch runs layer_norm in f32 under autocast, as done here.
        for mod in model.modules():
            if isinstance(mod, torch.nn.LayerNorm):
                mod.register_forward_pre_hook(lambda _m, inp: tuple(i.float() for i in inp))
    ids = lambda *shape: torch.randint(4, V, shape).to(DEV)
    autocast = (lambda: torch.autocast(args.device, dtype=torch.bfloat16)) \
        if args.precision == "bf16" else contextlib.nullcontext

    if args.mode == "train":
        model.train()
        src, y = ids(B, L), ids(B, L + 1)
        trg_in, trg_out = y[:, :-1].clone(), y[:, 1:].clone()
        trg_in[:, 0] = BOS
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        fwd = (lambda: model(src, trg_in)) if args.model == "seed004" else \
              (lambda: model.logits(src, trg_in))
        if args.compile:
            fwd = torch.compile(fwd)

        def run():
            with autocast():
                logits = fwd()
                loss = F.cross_entropy(logits.reshape(-1, V), trg_out.reshape(-1),
                                       ignore_index=PAD, label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return 2 * B * L
        flops = 3 * forward_flops(p, V, B, L, L)
    else:
        model.eval()
        dec = Seed004Decoder(model) if args.model == "seed004" else TorchNNDecoder(model)
        src = torch.cat([ids(B, L), torch.full((B, 1), EOS, device=DEV)], 1)
        k = args.beam_size if args.mode == "beam" else 1

        def run():
            with torch.no_grad(), autocast():
                out = greedy(dec, src, L) if k == 1 else beam(dec, src, L, k)
            return out.numel()
        flops = decode_flops(p, V, B, L + 1, [B] + [B * k] * L)

    for _ in range(args.warmup):
        run()
    sync()
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        tokens = run()
        sync()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gpu = DEV.type == "cuda"
    ceiling = mm_ceiling(8192) if gpu else mm_ceiling()
    bf16_ceiling = mm_ceiling(8192, dtype=torch.bfloat16) if gpu and args.precision == "bf16" \
        else 0.0
    res = dict(mode=args.mode, preset=args.preset, model=args.model, compiled=args.compile,
               device=torch.cuda.get_device_name() if gpu else "cpu",
               precision=args.precision,
               threads=args.threads, tokens_per_second=tokens / med, peak_rss_mb=rss,
               gflops=flops / med / 1e9, mm_gflops=ceiling, mfu=flops / med / 1e9 / ceiling,
               gemm_flops_per_repeat=flops, tokens_per_repeat=tokens, times_s=times, median_s=med,
               repeats=args.repeat, warmup=args.warmup, batch_size=B, seq_len=L, vocab=V,
               torch=torch.__version__,
               blas=torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]
               if "BLAS_INFO=" in torch.__config__.show()
               else os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"),
               load_average_1m=os.getloadavg()[0],
               omp_wait_policy=os.environ.get("OMP_WAIT_POLICY", ""))
    if args.mode == "beam":
        res["beam_size"] = args.beam_size
    if bf16_ceiling:
        res["bf16_mm_gflops"] = bf16_ceiling
        res["mfu_bf16"] = flops / med / 1e9 / bf16_ceiling
    print(f"{args.model} {args.preset} {args.mode} ({args.precision}): median {med:.4f} s, "
          f"{res['tokens_per_second']:.1f} tokens/s, {res['gflops']:.1f} GFLOP/s, "
          f"MFU {100 * res['mfu']:.1f} % of torch.mm {ceiling:.1f} GFLOP/s, "
          f"peak RSS {rss:.0f} MiB" +
          (f", MFU(bf16) {100 * res['mfu_bf16']:.1f} % of {bf16_ceiling:.0f}" if bf16_ceiling
           else ""))
    if args.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
