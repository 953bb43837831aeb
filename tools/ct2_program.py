"""A program written against CTranslate2's documented Python API (4.x), run by the differential
tests with `ctranslate2` bound to the real package or to tfm.ctranslate2: translation with the
options that change output, scoring, asynchronous calls, iterables and files, and the per-step
callback and generate_tokens.

    run(ctranslate2, model_dir, sources, targets, workdir) -> {case: outputs}

sources and targets: lists of SentencePiece token lists. The outputs are plain JSON values (token
lists, floats), so two runs compare with compare(), and a run of the real package is stored as a
fixture (tools/make_ct2_fixture.py). Standard library only.
"""
from __future__ import annotations

import ctypes
import math
import os

# The options each translate_batch case passes (besides return_scores=True); the cases cover
# every option of translate_batch that changes the output and that tfm implements. The tokens
# they name are those of tests/fixtures/ct2's vocabulary; translate_cases() puts another model's
# in their place.
TRANSLATE_CASES = {
    "defaults": {},
    "greedy_attention": {"beam_size": 1, "return_attention": True},
    "beam4_nbest3_lp06": {"beam_size": 4, "num_hypotheses": 3, "length_penalty": 0.6},
    "beam4_lp0": {"beam_size": 4, "length_penalty": 0.0},
    "greedy_lp0": {"beam_size": 1, "length_penalty": 0.0},
    "min_length4": {"beam_size": 1, "min_decoding_length": 4},
    "max_input_length3": {"beam_size": 2, "max_input_length": 3},
    "return_end_token": {"beam_size": 2, "return_end_token": True},
    "end_token_eos": {"beam_size": 2, "end_token": "</s>"},
    "disable_unk": {"beam_size": 2, "disable_unk": True},
    "suppress_sequences": {"beam_size": 2, "suppress_sequences": [["w"], ["\u2581", "t"]]},
    "greedy_suppress": {"beam_size": 1, "suppress_sequences": [["o"]], "min_decoding_length": 0},
    "repetition_penalty": {"beam_size": 2, "repetition_penalty": 1.5},
    "greedy_repetition_penalty": {"beam_size": 1, "repetition_penalty": 1.2,
                                  "min_decoding_length": 3},
    "no_repeat_ngram2": {"beam_size": 3, "num_hypotheses": 2, "no_repeat_ngram_size": 2},
    "greedy_no_repeat_ngram1": {"beam_size": 1, "no_repeat_ngram_size": 1},
    "end_tokens": {"beam_size": 2, "end_token": ["</s>", "e"], "return_end_token": True},
    "greedy_end_token_ids": {"beam_size": 1, "end_token": [2, 7], "return_end_token": True},
    # One sentence a batch: CTranslate2's coverage penalty counts the batch's padding positions
    # (their attention is tiny, not 0), so its scores depend on the batching.
    "beam4_coverage": {"beam_size": 4, "num_hypotheses": 2, "coverage_penalty": 0.2,
                       "max_batch_size": 1},
    # (Greedy search with a coverage penalty: CTranslate2 4.8.5 crashes on the tfm model's
    # conversion; tests/decode/test_search_processors.cpp checks tfm's.)
    "chunks_examples": {"beam_size": 2, "max_batch_size": 2},
    "chunks_tokens": {"beam_size": 2, "max_batch_size": 9, "batch_type": "tokens"},
}


def translate_cases(tokens=None, max_decoding_length=None):
    """TRANSLATE_CASES with each token of `tokens` ({case's token: this model's}) replaced, and
    max_decoding_length added to every case when given (a model whose outputs may run long)."""
    tokens = tokens or {}

    def sub(x):
        if isinstance(x, str):
            return tokens.get(x, x)
        if isinstance(x, list):
            return [sub(y) for y in x]
        return x

    out = {}
    for name, options in TRANSLATE_CASES.items():
        o = {k: sub(v) for k, v in options.items()}
        if max_decoding_length is not None:
            o["max_decoding_length"] = max_decoding_length
        out[name] = o
    return out


# Cases whose outputs tfm does not match, with why (docs/python.md, "Migrating from CTranslate2").
KNOWN_DIFFERENCES = {}
# The same on a Marian model converted from Transformers (tests/fixtures/ct2_marian).
_PAD = ("CTranslate2's converter removes Marian's <pad> from the vocabulary; tfm's score_batch "
        "normalises over the model's whole vocabulary, as Transformers does, so each "
        "log-probability differs by log(1 - p(<pad>))")
_HEADS = ("the coverage penalty reads the attention: CTranslate2's converter keeps the last "
          "layer's first head as the alignment (alignment_heads 1); tfm averages its heads")
_ARGMAX = ("an unknown token becomes the source token its attention weighs most: CTranslate2's "
           "converter keeps the last layer's first head as the alignment (alignment_heads 1); "
           "tfm averages its heads, so the argmax may be another source token")
KNOWN_MARIAN_DIFFERENCES = {"score_batch": _PAD, "score_offset1": _PAD, "score_max_input3": _PAD,
                            "score_iterable": _PAD, "score_asynchronous": _PAD,
                            "score_file": _PAD,
                            "beam4_coverage": _HEADS,
                            "greedy_attention": (
                                "CTranslate2's converter keeps the last layer's first head as "
                                "the alignment (alignment_heads 1); tfm averages its heads"),
                            "alternatives": (
                                "CTranslate2 4.8.5 feeds an alternatives' prefix in one decoder "
                                "call at step 0, and a model that starts from a zero embedding "
                                "(Marian) then skips the embedding scale for the whole call "
                                "(layers/transformer.cc); tfm scales the prefix as the model "
                                "does"),
                            "replace_unknowns": _ARGMAX, "greedy_replace_unknowns": _ARGMAX}


def _floats(x):
    """One step's logits as floats: CTranslate2's StorageView through its __array_interface__
    (read with ctypes: no numpy here), or any iterable of numbers (tfm's array.array)."""
    face = getattr(x, "__array_interface__", None)
    if face is None:
        return [float(v) for v in x]
    assert face["typestr"] == "<f4", face
    n = math.prod(face["shape"])
    return [float(v) for v in (ctypes.c_float * n).from_address(face["data"][0])] if n else []


def _row(x):
    """One step's logits for the comparison: the row itself, or for a vocabulary wider than 64
    (the fixtures stay small) its -inf entries, its max, argmax and logsumexp (not its size: a
    Marian model's rows are one shorter in CTranslate2, whose converter drops <pad>, the last
    id, which tfm's rows hold disabled)."""
    row = _floats(x)
    if len(row) <= 64:
        return row
    finite = [v for v in row if not math.isinf(v)]
    top = max(finite)
    return {"neg_inf": len(row) - len(finite), "max": top,
            "argmax": row.index(top),
            "logsumexp": top + math.log(sum(math.exp(v - top) for v in finite))}


def _result(r):
    out = {"hypotheses": [list(h) for h in r.hypotheses], "scores": [float(s) for s in r.scores]}
    if r.attention:
        out["attention"] = [[list(map(float, row)) for row in a] for a in r.attention]
    if getattr(r, "logits", None):
        out["logits"] = [[_row(step) for step in h] for h in r.logits]
    return out


def _scoring(r):
    return {"tokens": list(r.tokens), "log_probs": [float(x) for x in r.log_probs]}


def _translate(ct2, t, sources, targets, cases, min_prob):
    out = {}
    for name, options in cases.items():
        out[name] = [_result(r) for r in t.translate_batch(sources, return_scores=True,
                                                           **options)]
    # The cases' bound on the output length, if any, for the calls below too.
    more = {k: v for k, v in cases["defaults"].items() if k == "max_decoding_length"}
    prefixes = [tg[:1] if i % 2 == 0 else None for i, tg in enumerate(targets)]
    out["target_prefix"] = [_result(r) for r in t.translate_batch(
        sources, target_prefix=prefixes, beam_size=2, return_scores=True, **more)]
    out.update(_result_options(t, sources, targets, more))
    # CTranslate2's alternatives at the first position after a prefix (or the first position).
    out["alternatives"] = [_result(r) for r in t.translate_batch(
        sources, target_prefix=[tg[:2] for tg in targets], beam_size=2, num_hypotheses=4,
        return_alternatives=True, return_scores=True, **more)]
    out["alternatives_min_prob"] = [_result(r) for r in t.translate_batch(
        sources, beam_size=1, num_hypotheses=5, return_alternatives=True,
        min_alternative_expansion_prob=min_prob, return_scores=True, **more)]
    pending = t.translate_batch(sources, asynchronous=True, return_scores=True, **more)
    out["asynchronous"] = [_result(a.result()) for a in pending]
    assert all(a.done() for a in pending)
    out["iterable"] = [_result(r) for r in t.translate_iterable(
        iter(sources), max_batch_size=3, beam_size=3, return_scores=True, **more)]
    # The older list-of-dicts view of a result.
    first = t.translate_batch(sources[:2], return_scores=True, **more)
    out["as_dicts"] = [[{"tokens": list(h["tokens"]), "score": float(h["score"])} for h in r]
                       for r in first]
    return out


def _step(s):
    return [s.step, s.batch_id, s.token_id, s.hypothesis_id, s.token,
            None if s.log_prob is None else float(s.log_prob), bool(s.is_last)]


def _steps(t, sources, targets, more):
    """translate_batch's callback (greedy, the call cut into chunks: batch_id is the caller's
    index; a target prefix's tokens are reported too; one sentence stopped by the callback's
    True) and Translator.generate_tokens."""
    out = {}
    seen = []

    def collect(s):
        seen.append(_step(s))
        return s.batch_id == 2 and s.step == 1

    prefixes = [tg[:1] if i % 3 == 0 else None for i, tg in enumerate(targets)]
    results = t.translate_batch(sources, target_prefix=prefixes, beam_size=1, max_batch_size=3,
                                return_scores=True, callback=collect, **more)
    # Each sentence's steps in order (the engines interleave the sentences differently).
    out["callback_steps"] = sorted(seen, key=lambda x: (x[1], x[0]))
    out["callback_results"] = [_result(r) for r in results]
    seen.clear()
    t.translate_batch(sources[:3], beam_size=1, callback=collect, **more)  # no log_prob
    out["callback_no_scores"] = sorted(seen, key=lambda x: (x[1], x[0]))
    out["generate_tokens"] = [_step(s) for s in t.generate_tokens(
        sources[1], max_decoding_length=more.get("max_decoding_length", 256),
        return_log_prob=True)]
    it = t.generate_tokens(sources[0], targets[0][:2], return_log_prob=True, **more)
    out["generate_tokens_closed"] = [_step(next(it)) for _ in range(3)]
    it.close()
    return out


def _result_options(t, sources, targets, more):
    """return_logits_vocab (greedy: CTranslate2 4.8.5's beam search returns one empty array per
    hypothesis), prefix_bias_beta and replace_unknowns."""
    out = {}
    few = sources[:3]  # the logits: a vocabulary's worth of floats per step
    out["greedy_logits"] = [_result(r) for r in t.translate_batch(
        few, beam_size=1, return_logits_vocab=True, return_scores=True, **more)]
    out["greedy_logits_prefix_min_length"] = [_result(r) for r in t.translate_batch(
        few, target_prefix=[tg[:2] for tg in targets[:3]], beam_size=1, min_decoding_length=4,
        repetition_penalty=1.3, return_logits_vocab=True, return_scores=True, **more)]
    soft = [tg[:3] for tg in targets]
    for name, beam, beta in (("prefix_bias", 2, 0.5), ("prefix_bias_strong", 3, 0.95),
                             ("greedy_prefix_bias", 1, 0.3)):
        out[name] = [_result(r) for r in t.translate_batch(
            sources, target_prefix=soft, beam_size=beam, prefix_bias_beta=beta,
            return_scores=True, **more)]
    # An unknown token in each prefix, and a source token the vocabulary does not know: the
    # unknown target tokens become the source tokens they attend most. Beam search one sentence
    # a call: CTranslate2 4.8.5's beam search takes the first step's attention after a target
    # prefix from another sentence of the batch (its beam origins index the batch before the
    # beam is expanded), so its replacements then depend on the batch; greedy search does not.
    oov = [s + ["QQQ"] for s in sources]
    unk = [["<unk>"]] * len(oov)
    out["replace_unknowns"] = [_result(r) for r in t.translate_batch(
        oov, target_prefix=unk, beam_size=2, replace_unknowns=True, max_batch_size=1,
        return_scores=True, **more)]
    out["greedy_replace_unknowns"] = [_result(r) for r in t.translate_batch(
        oov, target_prefix=unk, beam_size=1, replace_unknowns=True, return_scores=True,
        **more)]
    return out


def _score(ct2, t, sources, targets):
    out = {"score_batch": [_scoring(r) for r in t.score_batch(sources, targets)],
           "score_offset1": [_scoring(r) for r in t.score_batch(sources, targets, offset=1)],
           "score_max_input3": [_scoring(r) for r in t.score_batch(sources, targets,
                                                                   max_input_length=3)],
           "score_iterable": [_scoring(r) for r in t.score_iterable(iter(sources), iter(targets),
                                                                    max_batch_size=2)]}
    pending = t.score_batch(sources, targets, asynchronous=True)
    out["score_asynchronous"] = [_scoring(a.result()) for a in pending]
    return out


def _files(ct2, t, sources, targets, workdir, more):
    src, trg, hyp, scored = (os.path.join(workdir, n) for n in ("src.tok", "trg.tok", "hyp.txt",
                                                                "scores.txt"))
    with open(src, "w", encoding="utf-8") as f:
        f.writelines(" ".join(s) + "\n" for s in sources)
    with open(trg, "w", encoding="utf-8") as f:
        f.writelines(" ".join(s) + "\n" for s in targets)
    stats = t.translate_file(src, hyp, max_batch_size=4, beam_size=2, num_hypotheses=2,
                             with_scores=True, **more)
    score_stats = t.score_file(src, trg, scored, with_tokens_score=True)
    with open(hyp, encoding="utf-8") as f:
        hyp_lines = f.read().splitlines()
    with open(scored, encoding="utf-8") as f:
        score_lines = f.read().splitlines()
    return {"translate_file": hyp_lines, "translate_file_stats": [stats.num_examples,
                                                                  stats.num_tokens],
            "score_file": score_lines, "score_file_stats": [score_stats.num_examples,
                                                            score_stats.num_tokens]}


def run(ct2, model_dir, sources, targets, workdir, tokens=None, max_decoding_length=None,
        min_prob=0.02):
    """Every case's outputs, from a ctranslate2-like module on model_dir (tokens and
    max_decoding_length: translate_cases'; min_prob: the alternatives' expansion threshold,
    below the best alternative's probability: CTranslate2 4.8.5 dies of a division by zero when
    it keeps none)."""
    t = ct2.Translator(model_dir, device="cpu", compute_type="float32", inter_threads=1,
                       intra_threads=1)
    out = {}
    out.update(_translate(ct2, t, sources, targets,
                          translate_cases(tokens, max_decoding_length), min_prob))
    out.update(_score(ct2, t, sources, targets))
    more = {} if max_decoding_length is None else {"max_decoding_length": max_decoding_length}
    out.update(_steps(t, sources, targets, more))
    out.update(_files(ct2, t, sources, targets, workdir, more))
    return out


def _close(a, b, tol):
    if isinstance(a, float) or isinstance(b, float):
        return (math.isinf(a) and a == b) or abs(a - b) <= tol
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    return a == b


def _file_line_close(a, b, tol):
    """Two lines of 'number ||| tokens [||| numbers]': equal tokens, numbers within tol (the
    printed 6 digits of each)."""
    pa, pb = a.split(" ||| "), b.split(" ||| ")
    if len(pa) != len(pb) or pa[1] != pb[1]:
        return False
    numbers = [(pa[0], pb[0])] + (list(zip(pa[2].split(), pb[2].split())) if len(pa) > 2 else [])
    return all(abs(float(x) - float(y)) <= tol + 1e-5 * abs(float(y)) for x, y in numbers)


def compare(got, want, tol=1e-4, known=()):
    """The cases whose outputs differ (tokens exactly, numbers within tol), except `known`."""
    bad = []
    for case, w in want.items():
        if case in known:
            continue
        g = got.get(case)
        if case in ("translate_file", "score_file"):
            ok = g is not None and len(g) == len(w) and all(
                _file_line_close(x, y, tol) for x, y in zip(g, w))
        else:
            ok = _close(g, w, tol)
        if not ok:
            bad.append(case)
    return bad
