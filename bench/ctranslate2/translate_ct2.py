#!/usr/bin/env python3
"""Translates a plain-text file with a CTranslate2 model made by convert_tfm.py, the way
`tfm translate` does, and reports tokens/s on stderr.

  .venv/bin/python bench/ctranslate2/translate_ct2.py --model CT2_DIR --input test.de --output hyp.en \
      [--beam-size 4] [--length-penalty A] [--batch-size 32] [--threads 2] [--compute-type int8]

Mirrors tfm translate (src/tfm/cli/translate.cpp, src/tfm/decode/search.*):
  * SentencePiece encode (the model's vocab.spm / vocab.src.spm), ids -> pieces (<unk> for id 3),
    sources truncated to max_length - 1; CT2 appends EOS (add_source_eos); empty lines -> empty;
  * windows of 8 batches, each sorted by source length (stable), batches of --batch-size;
  * max output length (with EOS) = floor(F * src_len + 10), capped by the model's max_length, as
    tfm: CT2 decodes up to the batch's largest limit - 1 tokens and each hypothesis is cut to its
    own limit - 1 (exactly tfm's result for greedy, whose tokens do not depend on the limit);
  * min length 0 (CT2's default is 1); PAD and BOS are never generated (suppress_sequences);
  * greedy = beam_size 1.
Not the same: the length penalty. tfm's --length-penalty is GNMT's ((5 + len) / 6)^a with len
counting EOS; CT2's length_penalty divides by len^a with len not counting EOS. With 0 (the
default of both here) both rank by the raw log-probability. --length-penalty is passed to CT2 as is.

tokens/s = generated target tokens (without EOS) / wall seconds of translation (model loading and
SentencePiece encoding/decoding excluded, as they are outside the search; reported separately).
"""
import argparse
import json
import math
import os
import resource
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="CT2 model directory from convert_tfm.py")
    p.add_argument("--input", default="-", help="source text, one sentence a line (default stdin)")
    p.add_argument("--output", default="-", help="(default stdout)")
    p.add_argument("--beam-size", type=int, default=1)
    p.add_argument("--length-penalty", type=float, default=0.0, help="CT2's length_penalty (see above)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--window", type=int, default=8, help="batches sorted together (tfm: 8)")
    p.add_argument("--max-length-factor", type=float, default=2.0)
    p.add_argument("--min-length", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="intra_threads")
    p.add_argument("--compute-type", default="float32", help="float32 | int8 | int8_float32 | default")
    p.add_argument("--no-suppress", action="store_true", help="allow generating PAD/BOS")
    p.add_argument("--json", action="store_true", help="print the stats as JSON on stderr")
    a = p.parse_args()

    import ctranslate2
    import sentencepiece as spm

    def vocab(name):
        path = os.path.join(a.model, name)
        return spm.SentencePieceProcessor(model_file=path) if os.path.exists(path) else None

    sp_src = vocab("vocab.spm") or vocab("vocab.src.spm")
    sp_trg = vocab("vocab.spm") or vocab("vocab.trg.spm")
    if sp_src is None or sp_trg is None:
        raise SystemExit("no SentencePiece model in %s (convert_tfm.py copies it there)" % a.model)
    with open(os.path.join(a.model, "tfm_config.json")) as f:
        cfg = json.load(f)
    model_max = int(cfg.get("max_length", 1024))

    t_load = time.perf_counter()
    tr = ctranslate2.Translator(a.model, device="cpu", compute_type=a.compute_type,
                                inter_threads=1, intra_threads=a.threads)
    t_load = time.perf_counter() - t_load

    fin = sys.stdin if a.input == "-" else open(a.input, encoding="utf-8", errors="surrogateescape")
    lines = [l.rstrip("\n") for l in fin]
    t_enc = time.perf_counter()
    src = []
    for l in lines:
        ids = sp_src.encode(l)[: model_max - 1]
        src.append([sp_src.id_to_piece(i) for i in ids])
    t_enc = time.perf_counter() - t_enc

    def limit(n):  # max target tokens without EOS (tfm: max length with EOS, minus 1)
        m = int(math.floor(a.max_length_factor * n + 10.0))
        return max(min(m, model_max), 1) - 1

    suppress = None
    if not a.no_suppress:
        suppress = [[sp_trg.id_to_piece(cfg.get("pad_id", 0))], [sp_trg.id_to_piece(cfg.get("bos_id", 1))]]
    out = [""] * len(lines)
    generated = 0
    t_search = 0.0
    win = a.batch_size * a.window if a.window > 0 else len(lines)
    for base in range(0, len(lines), max(win, 1)):
        idx = [i for i in range(base, min(base + win, len(lines))) if src[i]]
        idx.sort(key=lambda i: len(src[i]))  # stable, as tfm's std::stable_sort
        for b in range(0, len(idx), a.batch_size):
            batch = idx[b:b + a.batch_size]
            lims = [limit(len(src[i])) for i in batch]
            t0 = time.perf_counter()
            res = tr.translate_batch(
                [src[i] for i in batch], max_batch_size=a.batch_size, beam_size=a.beam_size,
                length_penalty=a.length_penalty, min_decoding_length=a.min_length,
                max_decoding_length=max(lims), max_input_length=0, suppress_sequences=suppress,
                return_scores=False)
            t_search += time.perf_counter() - t0
            for i, lim, r in zip(batch, lims, res):
                toks = r.hypotheses[0][:lim]
                generated += len(toks)
                out[i] = sp_trg.decode([sp_trg.piece_to_id(t) for t in toks])
    fout = sys.stdout if a.output == "-" else open(a.output, "w", encoding="utf-8", errors="surrogateescape")
    for o in out:
        fout.write(o + "\n")
    fout.flush()
    stats = dict(engine="ctranslate2", version=ctranslate2.__version__, model=a.model,
                 compute_type=a.compute_type, beam_size=a.beam_size, length_penalty=a.length_penalty,
                 batch_size=a.batch_size, threads=a.threads, sentences=len(lines),
                 generated_tokens=generated, search_s=t_search,
                 tokens_per_second=generated / t_search if t_search > 0 else 0.0,
                 sentences_per_second=len(lines) / t_search if t_search > 0 else 0.0,
                 load_s=t_load, spm_encode_s=t_enc,
                 peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                 load_average_1m=os.getloadavg()[0])
    if a.json:
        print(json.dumps(stats), file=sys.stderr)
    else:
        print("ct2 %s beam %d: %d sentences, %d tokens in %.2f s: %.1f tok/s (%.1f sent/s); load %.2f s, peak RSS %.0f MB"
              % (a.compute_type, a.beam_size, len(lines), generated, t_search, stats["tokens_per_second"],
                 stats["sentences_per_second"], t_load, stats["peak_rss_mb"]), file=sys.stderr)


if __name__ == "__main__":
    main()
