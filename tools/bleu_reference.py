#!/usr/bin/env python3
"""Standard-library-only corpus BLEU and chrF following sacreBLEU 2.x's published algorithm
(defaults: 13a tokeniser, exp smoothing, max order 4; chrF: char order 6, word order 0, beta 2,
whitespace removed, effective-order averaging). An independent check of tfm's C++ metrics, written
from the algorithm's description, used to derive the regression values in tests/eval/.

Usage: bleu_reference.py HYP_FILE REF_FILE [REF_FILE...]
"""
import math
import re
import sys
from collections import Counter

_RULES = [
    (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 '),
    (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
    (re.compile(r'([\.,])([^0-9])'), r' \1 \2'),
    (re.compile(r'([0-9])(-)'), r'\1 \2 '),
]


def tokenize_13a(line):
    for a, b in (('<skipped>', ''), ('-\n', ''), ('\n', ' '), ('&quot;', '"'), ('&amp;', '&'),
                 ('&lt;', '<'), ('&gt;', '>')):
        line = line.replace(a, b)
    line = ' {} '.format(line)
    for pattern, repl in _RULES:
        line = pattern.sub(repl, line)
    return ' '.join(line.strip().split())


def word_ngrams(line, max_order=4):
    tokens = line.split()
    grams = Counter(tuple(tokens[i:i + n]) for n in range(1, max_order + 1)
                    for i in range(len(tokens) - n + 1))
    return grams, len(tokens)


def my_log(x):
    return -9999999999 if x == 0.0 else math.log(x)


def corpus_bleu(hyps, ref_streams, max_order=4):
    stats = [0] * (2 + 2 * max_order)
    for i, hyp in enumerate(hyps):
        refs = [s[i] for s in ref_streams if s[i] != '']
        if not refs:
            raise RuntimeError('empty reference')
        ref_grams, ref_lens = None, []
        for r in refs:
            g, n = word_ngrams(tokenize_13a(r.rstrip()), max_order)
            ref_lens.append(n)
            if ref_grams is None:
                ref_grams = g
            else:
                for k, c in g.items():
                    ref_grams[k] = max(ref_grams[k], c)
        hyp_grams, hyp_len = word_ngrams(tokenize_13a(hyp.rstrip()), max_order)
        best_diff, best_len = -1, -1
        for n in ref_lens:
            d = abs(hyp_len - n)
            if best_diff == -1 or d < best_diff:
                best_diff, best_len = d, n
            elif d == best_diff and n < best_len:
                best_len = n
        correct = [0] * max_order
        total = [0] * max_order
        for g, c in hyp_grams.items():
            total[len(g) - 1] += c
            if g in ref_grams:
                correct[len(g) - 1] += min(c, ref_grams[g])
        row = [hyp_len, best_len] + correct + total
        stats = [a + b for a, b in zip(stats, row)]
    sys_len, ref_len = stats[0], stats[1]
    correct, total = stats[2:2 + max_order], stats[2 + max_order:]
    bp = (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0) if sys_len < ref_len else 1.0
    precisions = [0.0] * max_order
    if not any(correct):
        return 0.0, precisions, bp, sys_len, ref_len
    smooth = 1.0
    for n in range(max_order):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100. / (smooth * total[n])
        else:
            precisions[n] = 100. * correct[n] / total[n]
    score = bp * math.exp(sum([my_log(p) for p in precisions]) / max_order)
    return score, precisions, bp, sys_len, ref_len


def char_ngrams(line, order=6):
    line = ''.join(line.split())
    return [Counter(line[i:i + n] for i in range(len(line) - n + 1)) for n in range(1, order + 1)]


def chrf_f(stats, order=6, beta=2):
    factor = beta ** 2
    p = r = 0.0
    eff = 0
    for i in range(order):
        h, rf, m = stats[3 * i:3 * i + 3]
        if h > 0 and rf > 0:
            p += m / h
            r += m / rf
            eff += 1
    if eff == 0:
        return 0.0
    p /= eff
    r /= eff
    if p + r == 0:
        return 0.0
    s = (1 + factor) * p * r
    s /= (factor * p) + r
    return 100 * s


def corpus_chrf(hyps, ref_streams, order=6):
    total = [0] * (3 * order)
    for i, hyp in enumerate(hyps):
        hg = char_ngrams(hyp, order)
        best, best_f = None, -1.0
        for s in ref_streams:
            if s[i] == '':
                continue
            rg = char_ngrams(s[i], order)
            st = []
            for h, r in zip(hg, rg):
                m = sum(min(c, r[k]) for k, c in h.items() if k in r)
                st += [sum(h.values()) if r else 0, sum(r.values()), m]
            f = chrf_f(st, order)
            if f > best_f:
                best, best_f = st, f
        if best is None:
            raise RuntimeError('empty reference')
        total = [a + b for a, b in zip(total, best)]
    return chrf_f(total, order)


def read(path):
    with open(path, encoding='utf-8', newline='\n') as f:
        return [line.rstrip('\n') for line in f]


def main():
    hyps = read(sys.argv[1])
    refs = [[line.rstrip() for line in read(p)] for p in sys.argv[2:]]
    score, prec, bp, hl, rl = corpus_bleu(hyps, refs)
    ratio = hl / rl if rl else 0
    print(f'BLEU = {score:.2f} {"/".join(f"{p:.1f}" for p in prec)} (BP = {bp:.3f} '
          f'ratio = {ratio:.3f} hyp_len = {hl:d} ref_len = {rl:d})')
    print(f'chrF2 = {corpus_chrf(hyps, refs):.2f}')
    print(f'BLEU_exact = {score!r}')
    print(f'chrF2_exact = {corpus_chrf(hyps, refs)!r}')


if __name__ == '__main__':
    main()
