"""CTranslate2's Python API on tfm: tools/ct2_program.py (a program written against CTranslate2's
documented API) through tfm.ctranslate2 against what the real package answered on the same
weights (tests/fixtures/ct2, made by tools/make_ct2_fixture.py), and the API's own rules: the
signatures, result types, asynchronous calls, per-call batches, per-token scores and the
options tfm does not implement."""
import json
import os
import sys

import pytest

import tfm
import tfm.ctranslate2 as ct2


@pytest.fixture(scope="module")
def fixture(source_dir):
    d = os.path.join(source_dir, "tests", "fixtures", "ct2")
    with open(os.path.join(d, "expected.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["model"] = os.path.join(d, "model")
    return data


@pytest.fixture(scope="module")
def program(source_dir):
    sys.path.insert(0, os.path.join(source_dir, "tools"))
    import ct2_program

    return ct2_program


@pytest.fixture(scope="module")
def translator(fixture):
    return ct2.Translator(fixture["model"], intra_threads=1)


def test_program_matches_ctranslate2(fixture, program, tmp_path):
    got = program.run(ct2, fixture["model"], fixture["sources"], fixture["targets"],
                      str(tmp_path))
    assert set(got) == set(fixture["outputs"])
    assert program.compare(got, fixture["outputs"], 1e-4, program.KNOWN_DIFFERENCES) == []


def marian_hf_dir(source_dir, out):
    """tests/fixtures/ct2_marian's Transformers model with its tokenizer's files, assembled as
    tools/make_ct2_fixture.py assembles it (standard library only)."""
    sys.path.insert(0, os.path.join(source_dir, "tools"))
    import make_ct2_fixture

    return make_ct2_fixture.hf_marian_dir(
        os.path.join(source_dir, "tests", "fixtures", "ct2_marian", "model"), out)


def test_program_on_a_converted_marian_model_matches_ctranslate2(source_dir, program, tmp_path):
    """The program on a random-weight Transformers Marian model: CTranslate2's converter and
    search (the fixture) against tfm's converter and tfm.ctranslate2 (search_rule "tfm")."""
    with open(os.path.join(source_dir, "tests", "fixtures", "ct2_marian", "expected.json"),
              encoding="utf-8") as f:
        fx = json.load(f)
    model = str(tmp_path / "tfm")
    tfm.convert_transformers(marian_hf_dir(source_dir, str(tmp_path / "hf")), model)
    os.makedirs(tmp_path / "work")
    got = program.run(ct2, model, fx["sources"], fx["targets"], str(tmp_path / "work"),
                      fx["tokens"], fx["max_decoding_length"], fx["min_prob"])
    assert set(got) == set(fx["outputs"])
    assert program.compare(got, fx["outputs"], 1e-4, program.KNOWN_MARIAN_DIFFERENCES) == []


def test_program_runs_with_import_tfm_as_ctranslate2(fixture, program, tmp_path):
    """`import tfm as ctranslate2` runs the same program (every signature and result type is
    there); with tfm's defaults the translations differ, the scores of given pairs do not."""
    got = program.run(tfm, fixture["model"], fixture["sources"], fixture["targets"],
                      str(tmp_path))
    assert set(got) == set(fixture["outputs"])
    differ = program.compare(got, fixture["outputs"])
    assert "defaults" in differ
    assert [case for case in differ if case.startswith("score")] == []


def test_compare_sees_a_difference(fixture, program):
    """The comparison the tests rely on fails where tokens or scores differ."""
    want = fixture["outputs"]
    got = json.loads(json.dumps(want))
    got["defaults"][0]["hypotheses"][0] = got["defaults"][0]["hypotheses"][0][:-1]
    got["greedy_lp0"][1]["scores"][0] += 1e-3
    got["score_batch"][0]["log_probs"][0] += 1e-3
    got["score_file"][0] = got["score_file"][0].replace(" ||| ", " ||| x ", 1)
    assert program.compare(got, want) == ["defaults", "greedy_lp0", "score_batch", "score_file"]


def test_power_length_penalty_is_ctranslate2s(translator, fixture):
    """score = log P / len^α, len with EOS; log P is score_batch's sum over tokens + EOS."""
    src = fixture["sources"][:4]
    for alpha in (0.0, 0.6, 1.0):
        results = translator.translate_batch(src, beam_size=1, length_penalty=alpha,
                                             min_decoding_length=0, return_scores=True)
        hyps = [r.hypotheses[0] for r in results]
        totals = translator.score_batch(src, hyps)
        for r, h, total in zip(results, hyps, totals):
            assert r.scores[0] == pytest.approx(total / (len(h) + 1) ** alpha, abs=1e-5)
            assert r.log_probs[0] == pytest.approx(float(total), abs=1e-5)


def test_min_length_renormalizes_as_ctranslate2(translator, fixture):
    """With EOS forbidden at the first step (min_decoding_length 1), CTranslate2 takes the first
    token's log-probability over the tokens but EOS: log p - log(1 - p(EOS))."""
    import math

    src = fixture["sources"][:4]
    results = translator.translate_batch(src, beam_size=1, length_penalty=0.0,
                                         return_scores=True)
    hyps = [r.hypotheses[0] for r in results]
    totals = translator.score_batch(src, hyps)
    eos_first = [s.log_probs[0] for s in translator.score_batch(src, [[]] * len(src))]
    for r, total, eos in zip(results, totals, eos_first):
        assert r.log_probs[0] == pytest.approx(float(total) - math.log1p(-math.exp(eos)),
                                               abs=1e-5)
    plain = tfm.Translator(fixture["model"]).translate_batch(src, min_decoding_length=1,
                                                             return_scores=True)
    assert [p.log_probs[0] for p in plain] == pytest.approx([float(t) for t in totals],
                                                            abs=1e-5)


def test_per_token_scores(translator, fixture):
    src, trg = fixture["sources"][:3], fixture["targets"][:3]
    results = translator.score_batch(src, trg)
    for r, t in zip(results, trg):
        assert r.tokens == t + ["</s>"]
        assert len(r.log_probs) == len(t) + 1 and all(x <= 0 for x in r.log_probs)
        assert float(r) == pytest.approx(sum(r.log_probs), abs=1e-9)
    # The sum is the total tfm's score always returned (a float, as before), and the
    # teacher-forced log-probability a forced prefix gets in a translation.
    forced = translator.translate_batch(src, target_prefix=trg, max_decoding_length=64,
                                        beam_size=1, min_decoding_length=0, return_scores=True)
    for r, s, t in zip(forced, results, trg):
        if r.hypotheses[0] == t:  # the model ended where the reference does
            assert r.log_probs[0] == pytest.approx(float(s), abs=1e-5)
    cut = translator.score_batch(src, trg, offset=2)
    assert [c.log_probs for c in cut] == [r.log_probs[2:] for r in results]
    assert [c.tokens for c in cut] == [r.tokens[2:] for r in results]
    short = translator.score_batch(src, trg, max_input_length=3)
    assert [s.tokens for s in short] == [t[:2] + ["</s>"] for t in trg]


def test_asynchronous_results(translator, fixture):
    src = fixture["sources"]
    want = translator.translate_batch(src, return_scores=True)
    pending = translator.translate_batch(src, asynchronous=True, return_scores=True)
    assert len(pending) == len(src)
    assert all(isinstance(p, ct2.AsyncTranslationResult) for p in pending)
    got = [p.result() for p in pending]
    assert all(p.done() for p in pending)
    assert [g.hypotheses for g in got] == [w.hypotheses for w in want]
    scored = translator.score_batch(src, fixture["targets"], asynchronous=True)
    assert [list(s.result().log_probs) for s in scored] == [
        r.log_probs for r in translator.score_batch(src, fixture["targets"])]


def test_per_call_batches_give_the_same_results(translator, fixture):
    src = fixture["sources"]
    want = [r.hypotheses for r in translator.translate_batch(src)]
    for kw in ({"max_batch_size": 1}, {"max_batch_size": 3},
               {"max_batch_size": 12, "batch_type": "tokens"}):
        assert [r.hypotheses for r in translator.translate_batch(src, **kw)] == want
    with pytest.raises(tfm.InvalidArgumentError, match="batch_type"):
        translator.translate_batch(src, max_batch_size=2, batch_type="sentences")


def test_lengths_as_ctranslate2_counts_them(translator, fixture):
    src = fixture["sources"][:4]
    for n in (1, 3):
        for r in translator.translate_batch(src, max_decoding_length=n, beam_size=1):
            assert len(r.hypotheses[0]) <= n
    for r in translator.translate_batch(src, min_decoding_length=5, beam_size=1):
        assert len(r.hypotheses[0]) >= 5
    ends = translator.translate_batch(src, return_end_token=True)
    plain = translator.translate_batch(src)
    assert [e.hypotheses[0] for e in ends] == [p.hypotheses[0] + ["</s>"] for p in plain]


def test_max_input_length_cuts_the_source(translator, fixture):
    src = [s for s in fixture["sources"] if len(s) > 4][:3]
    cut = translator.translate_batch(src, max_input_length=3, return_attention=True)
    same = translator.translate_batch([s[:2] for s in src], return_attention=True)
    assert [r.hypotheses for r in cut] == [r.hypotheses for r in same]
    assert all(len(row) == 2 for r in cut for row in r.attention[0])
    with pytest.raises(tfm.InvalidArgumentError, match="max_input_length"):
        translator.translate_batch(src, max_input_length=1)


def test_result_reads_as_a_list_of_dicts(translator, fixture):
    r = translator.translate_batch(fixture["sources"][:1], num_hypotheses=2,
                                   return_scores=True)[0]
    assert len(r) == 2
    assert [h["tokens"] for h in r] == r.hypotheses
    assert [h["score"] for h in r] == r.scores
    assert r.logits == []
    with pytest.raises(IndexError):
        r[2]


@pytest.mark.parametrize("option,value", [("use_vmap", True)])
def test_unimplemented_options_are_refused_by_name(translator, fixture, option, value):
    # (callback is implemented: test_callback_sees_the_hypotheses_with_the_callers_indices)
    with pytest.raises(NotImplementedError, match=f"^{option}="):
        translator.translate_batch(fixture["sources"][:1], **{option: value})


def test_callback_sees_the_hypotheses_with_the_callers_indices(translator, fixture):
    """translate_batch's callback: each sentence's steps, in order, are its greedy hypothesis
    (with the end token), log-probabilities summing to its log-probability, is_last on the last
    alone, batch_id the index in the caller's batch whatever the chunks (sorted by length) and
    the library's threads; one sentence stopped by True keeps its tokens so far."""
    src = fixture["sources"]
    want = translator.translate_batch(src, beam_size=1, return_scores=True,
                                      return_end_token=True, length_penalty=0.0)
    for size in (0, 3):
        seen = {}
        got = translator.translate_batch(
            src, beam_size=1, return_scores=True, return_end_token=True, length_penalty=0.0,
            max_batch_size=size, callback=lambda s: seen.setdefault(s.batch_id, []).append(s))
        assert sorted(seen) == list(range(len(src)))
        for i, r in enumerate(got):
            steps = seen[i]
            assert r.hypotheses == want[i].hypotheses
            assert [s.token for s in steps] == r.hypotheses[0]
            assert [s.step for s in steps] == list(range(len(steps)))
            assert [s.is_last for s in steps] == [False] * (len(steps) - 1) + [True]
            assert sum(s.log_prob for s in steps) == pytest.approx(r.scores[0], abs=1e-4)
    cut = translator.translate_batch(src, beam_size=1, return_end_token=True,
                                     callback=lambda s: s.batch_id == 1 and s.step == 0)
    assert cut[1].hypotheses[0] == want[1].hypotheses[0][:1]
    assert [r.hypotheses for r in cut[2:]] == [r.hypotheses for r in want[2:]]
    with pytest.raises(tfm.InvalidArgumentError, match="callback"):
        translator.translate_batch(src, beam_size=4, callback=print)


def test_callback_errors_and_generate_tokens(translator, fixture):
    src = fixture["sources"]

    def boom(s):
        raise KeyError(f"sentence {s.batch_id}")

    with pytest.raises(KeyError, match="sentence"):
        translator.translate_batch(src, beam_size=1, callback=boom)
    with pytest.raises(KeyError, match="sentence"):
        list(translator.generate_tokens(src[0], callback=boom))
    # Translator.generate_tokens: one source's greedy tokens, its target prefix's first.
    prefix = fixture["targets"][0][:2]
    want = translator.translate_batch(src[:1], [prefix], beam_size=1, return_end_token=True)
    steps = list(translator.generate_tokens(src[0], prefix, return_log_prob=True))
    assert [s.token for s in steps] == want[0].hypotheses[0]
    assert {s.batch_id for s in steps} == {0} and steps[-1].is_last
    # No log_prob without return_scores.
    seen = []
    translator.translate_batch(src[:1], beam_size=1, callback=seen.append)
    assert seen and {s.log_prob for s in seen} == {None}


def test_off_values_and_unknown_keywords(translator, fixture):
    src = fixture["sources"][:2]
    want = [r.hypotheses for r in translator.translate_batch(src)]
    off = dict(coverage_penalty=0, repetition_penalty=1.0, no_repeat_ngram_size=0,
               disable_unk=False, suppress_sequences=[], prefix_bias_beta=0, use_vmap=False,
               return_logits_vocab=False, return_alternatives=False,
               min_alternative_expansion_prob=0.1, replace_unknowns=False, callback=None,
               end_token=["</s>"])
    assert [r.hypotheses for r in translator.translate_batch(src, **off)] == want
    with pytest.raises(TypeError, match="beam_sise.*did you mean beam_size"):
        translator.translate_batch(src, beam_sise=2)


def test_constructor_arguments(fixture):
    with pytest.raises(NotImplementedError, match="device_index"):
        ct2.Translator(fixture["model"], device_index=1)
    with pytest.raises(NotImplementedError, match="flash_attention"):
        ct2.Translator(fixture["model"], flash_attention=True)
    with pytest.raises(NotImplementedError, match="max_queued_batches"):
        ct2.Translator(fixture["model"], max_queued_batches=4)
    t = ct2.Translator(fixture["model"], device="cpu", compute_type={"cpu": "float32"},
                       device_index=[0], max_queued_batches=-1, inter_threads=2)
    assert t.compute_type == "fp32" and t.num_translators == 2 and t.device_index == [0]
    assert ct2.contains_model(fixture["model"])


def test_tfm_translator_keeps_its_defaults(fixture):
    """tfm.Translator takes CTranslate2's keywords with tfm's defaults: greedy, the raw
    log-probability, lengths with EOS; with CTranslate2's options given it is tfm.ctranslate2."""
    src = fixture["sources"]
    plain = tfm.Translator(fixture["model"]).translate_batch(src, return_scores=True)
    greedy = ct2.Translator(fixture["model"]).translate_batch(src, beam_size=1,
                                                              length_penalty=0,
                                                              min_decoding_length=0,
                                                              return_scores=True)
    assert [r.hypotheses for r in plain] == [r.hypotheses for r in greedy]
    assert [r.scores for r in plain] == [r.log_probs for r in plain] == [
        r.scores for r in greedy]
    ct2_like = tfm.Translator(fixture["model"]).translate_batch(
        src, beam_size=2, length_penalty=1.0, length_penalty_form="power",
        max_decoding_length=257, max_length_factor=0, max_length_extra=1000000,
        min_decoding_length=1, max_input_length=1024, patience=1.0, renormalize_min_length=True,
        score_prefix=False, attention_framing=False, force_end_token=False, search_rule="tfm",
        return_scores=True)
    want = ct2.Translator(fixture["model"]).translate_batch(src, return_scores=True)
    assert [(r.hypotheses, r.scores) for r in ct2_like] == [(r.hypotheses, r.scores)
                                                            for r in want]


def test_attention_framing(fixture):
    t = tfm.Translator(fixture["model"])
    src = fixture["sources"][:3]
    framed = t.translate_batch(src, return_attention=True)
    own = t.translate_batch(src, return_attention=True, attention_framing=False)
    for f, o, s in zip(framed, own, src):
        assert all(len(row) == len(s) + 1 and sum(row) == pytest.approx(1, abs=1e-5)
                   for row in f.attention[0])
        assert o.attention[0] == [row[:len(s)] for row in f.attention[0]]


def test_scores_without_the_prefix(fixture):
    t = tfm.Translator(fixture["model"])
    src, prefixes = fixture["sources"][:4], [x[:3] for x in fixture["targets"][:4]]
    for beam in (1, 3):
        counted = t.translate_batch(src, target_prefix=prefixes, beam_size=beam,
                                    return_scores=True)
        after = t.translate_batch(src, target_prefix=prefixes, beam_size=beam,
                                  return_scores=True, score_prefix=False)
        forced = [sum(s.log_probs[:3]) for s in t.score_batch(src, prefixes)]
        for c, a, p in zip(counted, after, forced):
            assert a.hypotheses == c.hypotheses and a.log_probs == c.log_probs
            assert a.scores[0] == pytest.approx(c.scores[0] - p, abs=1e-5)


def test_suppressed_sequences_are_never_generated(translator, fixture):
    src = fixture["sources"]
    plain = translator.translate_batch(src, beam_size=2)
    banned = translator.translate_batch(src, beam_size=2,
                                        suppress_sequences=[["o"], ["\u2581", "t"]])
    for r in banned:
        h = r.hypotheses[0]
        assert "o" not in h
        assert not any(a == "\u2581" and b == "t" for a, b in zip(h, h[1:]))
    assert any(a.hypotheses != b.hypotheses for a, b in zip(plain, banned))
    with pytest.raises(TypeError, match="suppress_sequences"):
        translator.translate_batch(src, suppress_sequences=["o"])
    with pytest.raises(tfm.InvalidArgumentError, match="suppress_sequences 1 is empty"):
        translator.translate_batch(src, suppress_sequences=[[]])


def test_repetition_options_and_end_tokens(translator, fixture):
    """The options tools/ct2_program.py compares with CTranslate2, here against what each
    guarantees, and their errors."""
    src = fixture["sources"]
    for r in translator.translate_batch(src, beam_size=3, num_hypotheses=3,
                                        no_repeat_ngram_size=2):
        for h in r.hypotheses:
            assert len(set(zip(h, h[1:]))) == len(h) - 1
    ends = translator.translate_batch(src, beam_size=2, end_token=["</s>", "e"],
                                      return_end_token=True)
    for r in ends:
        for h in r.hypotheses:
            assert h[-1] in ("</s>", "e") and "e" not in h[:-1]
    assert any(r.hypotheses[0][-1] == "e" for r in ends)
    with pytest.raises(tfm.InvalidArgumentError, match="repetition_penalty"):
        translator.translate_batch(src, repetition_penalty=0)
    with pytest.raises(tfm.InvalidArgumentError, match="no_repeat_ngram_size"):
        translator.translate_batch(src, no_repeat_ngram_size=-2)
    with pytest.raises(tfm.InvalidArgumentError, match="not in the target vocabulary"):
        translator.translate_batch(src, end_token="no such piece")
    with pytest.raises(tfm.InvalidArgumentError, match="end_token"):
        translator.translate_batch(src, end_token=[10**6])
    with pytest.raises(tfm.InvalidArgumentError, match="empty list"):
        translator.translate_batch(src, end_token=[])


def test_alternatives(translator, fixture):
    """Each alternative starts with the prefix and a distinct next token, in the order of that
    token's score_batch log-probability (end tokens aside); min_alternative_expansion_prob
    keeps a leading run of them."""
    src, prefixes = fixture["sources"][:4], [t[:2] for t in fixture["targets"][:4]]
    alts = translator.translate_batch(src, target_prefix=prefixes, num_hypotheses=5,
                                      return_alternatives=True, return_scores=True)
    for r, s, p in zip(alts, src, prefixes):
        assert len(r.hypotheses) == 5
        nexts = [h[len(p)] for h in r.hypotheses]
        assert all(h[:len(p)] == p for h in r.hypotheses) and len(set(nexts)) == 5
        first = [x.log_probs[len(p)] for x in translator.score_batch([s] * 5,
                                                                     [p + [n] for n in nexts])]
        assert first == sorted(first, reverse=True)
    few = translator.translate_batch(src, target_prefix=prefixes, num_hypotheses=5,
                                     return_alternatives=True, min_alternative_expansion_prob=0.1)
    assert [r.hypotheses for r in few] == [r.hypotheses[:len(f.hypotheses)]
                                           for r, f in zip(alts, few)]
    assert any(len(f.hypotheses) < 5 for f in few)
    with pytest.raises(tfm.InvalidArgumentError, match="min_alternative_expansion_prob"):
        translator.translate_batch(src, return_alternatives=True,
                                   min_alternative_expansion_prob=2)


def test_search_rule_and_force_end_token(source_dir, fixture, tmp_path):
    """On a converted model tfm.Translator keeps generate()'s rules and refuses CTranslate2's
    options; search_rule="tfm" takes them. force_end_token=False cuts at the max length."""
    model = str(tmp_path / "tfm")
    tfm.convert_transformers(marian_hf_dir(source_dir, str(tmp_path / "hf")), model)
    src = [fixture_sources(source_dir)[0]]
    t = tfm.Translator(model)
    with pytest.raises(tfm.InvalidArgumentError, match="patience"):
        t.translate_batch(src, patience=1.0)
    assert t.translate_batch(src, patience=1.0, search_rule="tfm")[0].hypotheses
    with pytest.raises(tfm.InvalidArgumentError, match="search_rule"):
        t.translate_batch(src, search_rule="ctranslate3")
    plain = tfm.Translator(fixture["model"])
    for r in plain.translate_batch(fixture["sources"], max_decoding_length=4,
                                   force_end_token=False, return_end_token=True,
                                   return_scores=True):
        h = r.hypotheses[0]
        assert len(h) <= 4 and (h[-1] == "</s>" or len(h) == 3)


def fixture_sources(source_dir):
    with open(os.path.join(source_dir, "tests", "fixtures", "ct2_marian", "expected.json"),
              encoding="utf-8") as f:
        return json.load(f)["sources"]
