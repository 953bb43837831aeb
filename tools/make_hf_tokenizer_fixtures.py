#!/usr/bin/env python3
"""Hugging Face tokenizer directories of every family tfm converts, and Transformers' own ids and
text for them: the references of tests/data/test_hf_tokenizers.cpp.

    /work/main/.venv/bin/python tools/make_hf_tokenizer_fixtures.py [--out tests/fixtures/hf_tokenizers]

Needs transformers 5.x, tokenizers, sentencepiece (tools/requirements.txt). Everything is made here:
tiny SentencePiece models trained with the `sentencepiece` package (with a compact NFKC-style
normalisation rule set, so the precompiled character maps stay small), byte-level BPE vocabularies trained with `tokenizers`, and
the directories written by the Transformers tokenizer classes themselves (save_pretrained), so
they hold exactly the files a user's directory holds. Each directory gets reference.json:

    {"family", "class",                     # the family tfm names, Transformers' class
     "src_lang", "tgt_lang",                # as the directory's tokenizer_config says (or null)
     "size": len(tokenizer),                # every id the tokenizer gives is below it
     "special_ids": [...],                  # all_special_ids, sorted
     "added": [[id, content, special, lstrip, rstrip, single_word, normalized], ...],
     "source": [[ids], ...],                # tok(line).input_ids for each of lines.json's lines
     "target": [[ids], ...] or null,        # tok(text_target=line, add_special_tokens=False)
                                            # .input_ids; null: the source's without its framing
     "target_framing": [[prefix], [suffix]],  # what tok(text_target=line) adds around them
     "decode_lines": [text or null, ...],   # batch_decode of the framed targets (null: the line)
     "decode": [[[ids], text], ...]}        # random ids, batch_decode(skip_special_tokens=True)

`make_tokenizer_dir(family, out_dir)` is also what the model fixtures call (tools/), so a
random-weight model gets the same tokenizer files the tests check here.
"""

import argparse
import json
import os
import random
import shutil
import tempfile
import unicodedata
import zlib

import sentencepiece as spm

WORDS = {
    "de": "der die das und ist nicht ein eine Hund läuft über Wiese schön Straße Mädchen größer "
    "Fußball Käse Brücke Übung öffentlich müssen können wir ihr Ärger Öl".split(),
    "fr": "le la les et est pas un une chien court sur prairie été très où garçon élève façon "
    "cœur naïve Noël fenêtre hôpital l'homme qu'il".split(),
    "es": "el la los y es no un una perro corre sobre hierba niño mañana corazón España "
    "pingüino año señor ¿qué ¡hola".split(),
    "en": "the a dog runs over meadow is not and I don't it's we're they've hello world quick "
    "brown fox jumps lazy U.S. e-mail".split(),
    "ru": "собака бежит по лугу это не и мы вы они привет мир быстрый Ёлка".split(),
    "el": "ο σκύλος τρέχει στο λιβάδι καλημέρα κόσμε Ωμέγα".split(),
    "zh": "我们 今天 天气 很好 狗 在 草地 上 跑 中文 测试 你好 世界 。".split(),
    "ja": "今日は いい 天気 です 犬が 走る 日本語 テスト カタカナ ｶﾀｶﾅ".split(),
    "ar": "الكلب يجري في المرج مرحبا بالعالم".split(),
    "hi": "कुत्ता घास में दौड़ता है नमस्ते दुनिया क्षत्रिय".split(),
    "ko": "개가 초원을 달린다 안녕하세요 세계".split(),
}


def sentences(n, seed):
    r = random.Random(seed)
    langs = sorted(WORDS)
    out = []
    for _ in range(n):
        lang = r.choice(langs)
        words = [r.choice(WORDS[lang]) for _ in range(r.randint(1, 14))]
        sep = "" if lang in ("zh", "ja") and r.random() < 0.5 else " "
        s = sep.join(words)
        if r.random() < 0.3:
            s = s[0].upper() + s[1:]
        s += r.choice([".", "!", "?", "", ",", " .", "…", " !"])
        if r.random() < 0.1:
            s += " " + str(r.randint(0, 100000))
        out.append(s)
    return out


# Lines that probe what tokenizers get wrong: every family is checked on all of them.
SPECIAL_LINES = [
    "",
    " ",
    "   ",
    "\t",
    "Ein Hund läuft über die Wiese.",
    "  leading and trailing spaces  ",
    "two  spaces   three    four",
    "tab\tseparated\tvalues",
    "carriage\rreturn",
    "no\u00a0break\u00a0space and\u2009thin\u2002en\u3000ideographic",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom",
    "Combining: e\u0301 a\u0308 o\u0302 n\u0303 A\u030a vs é ä ô ñ Å",
    "Stacked: a\u0301\u0308\u0323 x\u0300\u0301 q\u0307",
    "Ligatures: ﬁnd ﬂow ﬀ ﬃ æ œ Œ ß ẞ",
    "Fullwidth: ＡＢＣ ａｂｃ ０１２３ ！？ （括弧）",
    "Halfwidth: ｶﾞｷﾞｸﾞ ﾊﾟﾋﾟ ｱｲｳ",
    "Circled ① ② ⑳ and ⓐ, roman Ⅻ ⅷ, fractions ½ ¾ ⅓",
    "Symbols: ™ ℃ ℉ № ℡ Ω K Å µ ㎏ ㍻",
    "Emoji: 😀 😂 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇩🇪 🇫🇷 ❤️ ✌🏿",
    "Keycaps 1️⃣ #️⃣ and variation ☺︎ ☺️",
    "CJK: 我们今天在草地上跑。日本語のテスト、カタカナとひらがな。",
    "Korean: 안녕하세요 세계, 한국어 테스트입니다.",
    "Decomposed Hangul: \u1100\u1161\u11a8 \u1112\u1161\u11ab",
    "Arabic: الكلب يجري في المرج، مرحبا بالعالم!",
    "Hebrew: שלום עולם",
    "Hindi: नमस्ते दुनिया, क्षत्रिय कुत्ता घास में दौड़ता है।",
    "Thai: สวัสดีชาวโลก",
    "Greek: Καλημέρα κόσμε, ο σκύλος τρέχει.",
    "Russian: Съешь же ещё этих мягких французских булок.",
    "Vietnamese: Tiếng Việt có dấu: ă â đ ê ô ơ ư ạ ả ấ ầ ẩ ẫ ậ",
    "Punctuation: \"quoted\" 'single' «guillemets» „Anführung“ — dash – en … ellipsis",
    "Apostrophes: don't it's we're they've I'm you'll she'd O'Neil rock'n'roll",
    "Numbers: 3.14159 1,000,000 42nd 1st 2nd 3rd -7 +8 1e-5 0x1F 2024-11-27 12:30",
    "Mixed123abc456DEF and snake_case_name, camelCaseName, kebab-case-name",
    "URLs: https://example.com/path?q=1&r=2#frag user@example.org",
    "Code: if (x < 10) { return y[0] * 2; } // comment",
    "Math: ∑ ∫ √ ∞ ≤ ≥ ≠ ± × ÷ ∂ ∇ ∈ ∀ ∃",
    "Currency: $5 €10 £20 ¥30 ₹40 ₿ ¢",
    "Brackets: ( ) [ ] { } < > 「」『』【】",
    "Special tokens in text: </s> <s> <unk> <pad> <mask> done",
    "Language codes in text: eng_Latn deu_Latn __en__ __de__ en_XX ro_RO",
    ">>fra<< Marian target code at the start",
    "Marian code >>deu<< in the middle",
    "<mask>at start and end<mask>",
    "  <mask>  spaced  mask  ",
    "<|endoftext|> GPT end of text in text <|endoftext|>",
    "Repeated letters: aaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbb",
    "Repeated punctuation: !!!!!!! ??? ...... ------",
    "Single characters: a b c d e f g h i j k l m n o p",
    "UPPER CASE SENTENCE WITH ÄÖÜ AND ÉÈÊ.",
    "Control characters: a\x01b\x02c\x1fd\x7fe",
    "Private use: \ue000\ue001 and unassigned \U0010fffd",
    "Surrogate-free astral: 𝐀𝐁𝐂 𝔸𝔹ℂ 𓀀 𠀀𠀁",
    "Line separators: a\u2028b\u2029c\u0085d",
    "Word joiner\u2060and soft\u00adhyphen",
    "Mixed scripts: Hundκύωνсобака犬개كلب",
    "Ends with spaces   ",
    "\u3000Ideographic leading space",
    "über Über ÜBER",
    "e\u0301\u0301\u0301 stacked acutes",
    "Equal-score paths: 'lll xlllll Helllllo",
]


def test_lines():
    gen = sentences(400, 1234)
    r = random.Random(99)
    lines = list(SPECIAL_LINES)
    emoji = ["😀", "🇩🇪", "👍🏽", "❤️", "👨‍👩‍👧"]
    while len(lines) < 199:
        s = gen[len(lines)]
        k = r.random()
        if k < 0.1:
            s = s.replace(" ", "  ")
        elif k < 0.2:
            s = " " + s + " "
        elif k < 0.3:
            s = s + " " + r.choice(emoji)
        elif k < 0.35:
            s = unicodedata.normalize("NFD", s)
        lines.append(s)
    long_line = " ".join(sentences(120, 4321))  # a very long line, about 6000 characters
    lines.append(long_line)
    assert len(lines) == 200 and all("\n" not in x for x in lines)
    return lines


# A compact NFKC-like SentencePiece normalisation rule set: NFKC of the characters of a few
# blocks, whitespace folding and the compositions of Latin letters with common accents. Real
# models use SentencePiece's nmt_nfkc; the rules go through the same precompiled trie, so a small
# set exercises the same code with a fixture of kilobytes instead of a quarter megabyte.
def compact_rules_tsv(path):
    rules = {}
    blocks = [(0x00A0, 0x00FF), (0x2000, 0x200A), (0x2100, 0x218F), (0x2460, 0x24FF),
              (0x3000, 0x3000), (0x3300, 0x33FF), (0xFB00, 0xFB4F), (0xFF00, 0xFFEF),
              (0x1D400, 0x1D4FF)]
    for lo, hi in blocks:
        for c in range(lo, hi + 1):
            ch = chr(c)
            n = unicodedata.normalize("NFKC", ch)
            if n != ch:
                rules[(c,)] = tuple(ord(x) for x in n)
    for base in "aeiouycnsrzAEIOUYCNSRZ":
        for mark in (0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x030A, 0x030C, 0x0327):
            seq = base + chr(mark)
            n = unicodedata.normalize("NFKC", seq)
            if len(n) == 1:
                rules[tuple(ord(x) for x in seq)] = (ord(n),)
    for c in (0x09, 0x0A, 0x0D, 0x2028, 0x2029, 0x0085):
        rules[(c,)] = (0x20,)
    for c in (0x200B, 0xFEFF, 0x00AD):
        rules[(c,)] = ()
    with open(path, "w", encoding="utf-8") as f:
        for src in sorted(rules):
            dst = rules[src]
            f.write(" ".join("%X" % c for c in src) + "\t" + " ".join("%X" % c for c in dst) + "\n")


def train_spm(prefix, corpus, vocab_size, model_type, rules=None, **kw):
    spm.set_random_generator_seed(1)
    args = dict(sentence_iterator=iter(corpus), model_prefix=prefix, vocab_size=vocab_size,
                model_type=model_type, character_coverage=0.995, num_threads=1,
                shuffle_input_sentence=False, minloglevel=2)
    if rules:
        args["normalization_rule_tsv"] = rules
    args.update(kw)
    spm.SentencePieceTrainer.train(**args)
    # The model records the paths it was trained with (a temporary directory): keep only their
    # names, so that the files are the same from run to run.
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    proto.trainer_spec.model_prefix = os.path.basename(prefix)
    if rules:
        proto.normalizer_spec.normalization_rule_tsv = os.path.basename(rules)
    with open(prefix + ".model", "wb") as f:
        f.write(proto.SerializeToString())
    return prefix + ".model"


def spm_pieces(model):
    sp = spm.SentencePieceProcessor(model_file=model)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def write_json(path, obj):
    """Small diffs and small files: one line per element of a top-level list, or per key of a
    top-level object (its lists likewise, one element a line)."""

    def dumps(x):
        return json.dumps(x, ensure_ascii=False, separators=(",", ":"))

    def block(x, indent):
        if isinstance(x, list) and x:
            inner = (",\n" + indent + " ").join(dumps(v) for v in x)
            return "[\n" + indent + " " + inner + "\n" + indent + "]"
        return dumps(x)

    with open(path, "w", encoding="utf-8") as f:
        if isinstance(obj, dict):
            items = [dumps(k) + ": " + block(v, " ") for k, v in obj.items()]
            f.write("{\n " + ",\n ".join(items) + "\n}\n")
        else:
            f.write(block(obj, "") + "\n")


def corpus_for(langs, n, seed):
    keep = [s for s in sentences(n * 4, seed)]
    r = random.Random(seed)
    out = []
    for s in keep:
        # sentences() picks the language per line; filter by script family through the words.
        if any(w in s for lang in langs for w in WORDS[lang][:6]):
            out.append(s)
    r.shuffle(out)
    return out[:n] + SPECIAL_LINES


class Work:
    """Trained models shared by the families, in a temporary directory."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.rules = os.path.join(tmp, "rules.tsv")
        compact_rules_tsv(self.rules)
        everything = sentences(3000, 7) + SPECIAL_LINES
        west = corpus_for(["de", "fr", "es", "en"], 1500, 11)
        east = corpus_for(["ru", "el", "zh", "ja", "ko", "ar", "hi", "en"], 1500, 12)
        self.uni_src = train_spm(os.path.join(tmp, "uni_src"), west, 500, "unigram", self.rules)
        self.uni_trg = train_spm(os.path.join(tmp, "uni_trg"), east, 600, "unigram", self.rules)
        self.bpe_small = train_spm(os.path.join(tmp, "bpe_small"), everything, 700, "bpe",
                                   self.rules)
        self.bpe_big = train_spm(os.path.join(tmp, "bpe_big"), everything, 800, "bpe", self.rules)
        self.everything = everything

    def byte_level_bpe(self, name, specials, vocab_size):
        from tokenizers import ByteLevelBPETokenizer

        tok = ByteLevelBPETokenizer()
        tok.train_from_iterator(self.everything, vocab_size=vocab_size, min_frequency=2,
                                special_tokens=specials, show_progress=False)
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        tok.save_model(d)
        return os.path.join(d, "vocab.json"), os.path.join(d, "merges.txt")


def shuffled(items, seed, drop=0.0):
    r = random.Random(seed)
    items = list(items)
    r.shuffle(items)
    return [x for x in items if r.random() >= drop]


def marian_dir(w, out, separate):
    from transformers import MarianTokenizer

    specials = {"<unk>", "<s>", "</s>"}
    src = [p for p in spm_pieces(w.uni_src) if p not in specials]
    trg = [p for p in spm_pieces(w.uni_trg) if p not in specials]
    codes = [">>fra<<", ">>deu<<", ">>spa<<"]

    def vocab_of(pieces, seed, with_codes):
        # Marian's order: </s>, <unk>, the pieces (not SentencePiece's order, and a few of its
        # pieces missing, which then encode as <unk>), <pad> last.
        body = shuffled(pieces, seed, drop=0.03)
        if with_codes:
            body[5:5] = codes
        names = ["</s>", "<unk>"] + body + ["<pad>"]
        return {p: i for i, p in enumerate(names)}

    tmp = os.path.join(w.tmp, "marian_in")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    kw = {}
    if separate:
        write_json(os.path.join(tmp, "vocab.json"), vocab_of(src, 21, False))
        write_json(os.path.join(tmp, "target_vocab.json"), vocab_of(trg, 22, False))
        kw = dict(target_vocab_file=os.path.join(tmp, "target_vocab.json"), separate_vocabs=True)
    else:
        shared = list(dict.fromkeys(src + trg))
        write_json(os.path.join(tmp, "vocab.json"), vocab_of(shared, 23, True))
    tok = MarianTokenizer(source_spm=w.uni_src, target_spm=w.uni_trg,
                          vocab=os.path.join(tmp, "vocab.json"), source_lang="de",
                          target_lang="en", **kw)
    tok.save_pretrained(out)


def m2m100_dir(w, out):
    from transformers import M2M100Tokenizer

    pieces = [p for p in spm_pieces(w.bpe_small) if p not in {"<unk>", "<s>", "</s>"}]
    names = ["<s>", "<pad>", "</s>", "<unk>"] + shuffled(pieces, 31, drop=0.03)
    tmp = os.path.join(w.tmp, "m2m_in")
    os.makedirs(tmp, exist_ok=True)
    write_json(os.path.join(tmp, "vocab.json"), {p: i for i, p in enumerate(names)})
    tok = M2M100Tokenizer(vocab_file=os.path.join(tmp, "vocab.json"), spm_file=w.bpe_small,
                          src_lang="de", tgt_lang="fr")
    tok.save_pretrained(out)


def from_spm_dir(w, out, spm_model, config, tokenizer_json=True):
    """What a Hub directory of a SentencePiece-based fast tokenizer holds, through the class's
    own conversion: sentencepiece.bpe.model + tokenizer_config.json, loaded and saved again by
    Transformers (tokenizer.json and tokenizer_config.json; the Hub keeps the .model beside them,
    which neither Transformers nor tfm then reads: left out here). Without tokenizer_json: the
    .model and tokenizer_config.json alone (Transformers converts the .model when it loads the
    directory)."""
    from transformers import AutoTokenizer

    tmp = os.path.join(w.tmp, "spm_in")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copy(spm_model, os.path.join(tmp, "sentencepiece.bpe.model"))
    write_json(os.path.join(tmp, "tokenizer_config.json"), config)
    if tokenizer_json:
        AutoTokenizer.from_pretrained(tmp).save_pretrained(out)
    else:
        shutil.copy(os.path.join(tmp, "tokenizer_config.json"), out)
    if not tokenizer_json:
        shutil.copy(spm_model, os.path.join(out, "sentencepiece.bpe.model"))


def byte_level_dir(w, out, cls, specials, config, tokenizer_json=True):
    """The tokenizer.json and tokenizer_config.json Transformers saves; without tokenizer_json,
    vocab.json + merges.txt and a tokenizer_config.json alone (an older directory: Transformers
    builds the tokenizer from them)."""
    from transformers import AutoTokenizer

    vocab, merges = w.byte_level_bpe(cls, specials, 600)
    tmp = os.path.join(w.tmp, cls + "_in")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copy(vocab, tmp)
    shutil.copy(merges, tmp)
    write_json(os.path.join(tmp, "tokenizer_config.json"), dict(tokenizer_class=cls, **config))
    if tokenizer_json:
        AutoTokenizer.from_pretrained(tmp).save_pretrained(out)
    else:
        shutil.copy(os.path.join(tmp, "tokenizer_config.json"), out)
        shutil.copy(vocab, out)
        shutil.copy(merges, out)


def nllb_codes():
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    return list(FAIRSEQ_LANGUAGE_CODES)


# name -> (family, builder)
FAMILIES = {
    "marian_shared": ("marian", lambda w, d: marian_dir(w, d, separate=False)),
    "marian_separate": ("marian", lambda w, d: marian_dir(w, d, separate=True)),
    "m2m100": ("m2m100", m2m100_dir),
    "nllb": ("nllb", lambda w, d: from_spm_dir(w, d, w.bpe_big, {
        "tokenizer_class": "NllbTokenizer", "src_lang": "deu_Latn", "tgt_lang": "fra_Latn",
        "additional_special_tokens": nllb_codes()})),
    "nllb_spm_only": ("nllb", lambda w, d: from_spm_dir(w, d, w.bpe_small, {
        "tokenizer_class": "NllbTokenizer", "src_lang": "fra_Latn", "tgt_lang": "deu_Latn",
        "additional_special_tokens": nllb_codes()}, tokenizer_json=False)),
    "nllb_legacy": ("nllb", lambda w, d: from_spm_dir(w, d, w.bpe_small, {
        "tokenizer_class": "NllbTokenizer", "src_lang": "eng_Latn", "tgt_lang": "zho_Hans",
        "legacy_behaviour": True, "additional_special_tokens": nllb_codes()})),
    "mbart50": ("mbart50", lambda w, d: from_spm_dir(w, d, w.bpe_small, {
        "tokenizer_class": "MBart50Tokenizer", "src_lang": "de_DE", "tgt_lang": "fr_XX"})),
    "mbart50_spm_only": ("mbart50", lambda w, d: from_spm_dir(w, d, w.bpe_small, {
        "tokenizer_class": "MBart50Tokenizer", "src_lang": "en_XX", "tgt_lang": "ro_RO"},
        tokenizer_json=False)),
    "mbart": ("mbart", lambda w, d: from_spm_dir(w, d, w.bpe_small, {
        "tokenizer_class": "MBartTokenizer", "src_lang": "en_XX", "tgt_lang": "ro_RO"})),
    "bart": ("bart", lambda w, d: byte_level_dir(
        w, d, "BartTokenizer", ["<s>", "<pad>", "</s>", "<unk>"], {})),
    "gpt2": ("gpt2", lambda w, d: byte_level_dir(
        w, d, "GPT2Tokenizer", ["<|endoftext|>"], {"add_prefix_space": False})),
    "gpt2_prefix_space": ("gpt2", lambda w, d: byte_level_dir(
        w, d, "GPT2Tokenizer", ["<|endoftext|>"], {"add_prefix_space": True},
        tokenizer_json=False)),
}


def make_tokenizer_dir(name, out_dir, work=None):
    """Writes the tokenizer files of fixture family `name` (FAMILIES) into out_dir."""
    family, build = FAMILIES[name]
    owned = work is None
    tmp = tempfile.mkdtemp() if owned else None
    try:
        w = work or Work(tmp)
        os.makedirs(out_dir, exist_ok=True)
        build(w, out_dir)
    finally:
        if owned:
            shutil.rmtree(tmp, ignore_errors=True)
    # tokenizer.json without its indentation: the same JSON in a third of the bytes.
    path = os.path.join(out_dir, "tokenizer.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    return family


def random_id_sequences(tok, n, seed):
    """Id sequences the decoder must take as Transformers does: ordinary ids, specials and
    language codes anywhere, byte-level pieces cut mid-character."""
    r = random.Random(seed)
    size = len(tok)
    specials = sorted(tok.all_special_ids)
    seqs = []
    for i in range(n):
        k = r.randint(0, 30)
        seq = []
        for _ in range(k):
            seq.append(r.choice(specials) if r.random() < 0.15 else r.randrange(size))
        seqs.append(seq)
    return seqs


def split_framing(framed, inner):
    """(prefix, suffix) such that framed == prefix + inner + suffix."""
    for k in range(len(framed) - len(inner) + 1):
        if framed[k:k + len(inner)] == inner:
            return framed[:k], framed[k + len(inner):]
    raise AssertionError(f"{framed} does not hold {inner}")


def reference(name, family, d, lines):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(d)
    source = [tok(x).input_ids for x in lines]
    bare_source = [tok(x, add_special_tokens=False).input_ids for x in lines]
    target = [tok(text_target=x, add_special_tokens=False).input_ids for x in lines]
    framed = [tok(text_target=x).input_ids for x in lines]
    # The target framing is one prefix and one suffix for every line.
    target_framing = split_framing(framed[4], target[4])
    assert all(f == target_framing[0] + t + target_framing[1] for f, t in zip(framed, target))
    texts = tok.batch_decode(framed, skip_special_tokens=True)
    seqs = random_id_sequences(tok, 60, zlib.crc32(name.encode()))
    added = [[i, str(t), bool(t.special), bool(t.lstrip), bool(t.rstrip), bool(t.single_word),
              bool(t.normalized)] for i, t in sorted(tok.added_tokens_decoder.items())]
    return {
        "family": family,
        "class": type(tok).__name__,
        "src_lang": getattr(tok, "src_lang", None),
        "tgt_lang": getattr(tok, "tgt_lang", None),
        "size": len(tok),
        "special_ids": sorted(set(tok.all_special_ids)),
        "added": added,
        "source": source,
        # Only where the target side tokenizes otherwise than the source side (Marian).
        "target": None if target == bare_source else target,
        "target_framing": list(target_framing),
        "decode_lines": [None if t == x else t for t, x in zip(texts, lines)],
        "decode": [[q, t] for q, t in zip(seqs, tok.batch_decode(seqs, skip_special_tokens=True))],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "hf_tokenizers"))
    ap.add_argument("--only", nargs="*", help="family directories to make (default: all)")
    args = ap.parse_args()
    lines = test_lines()
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "lines.json"), lines)
    with tempfile.TemporaryDirectory() as tmp:
        w = Work(tmp)
        for name in args.only or sorted(FAMILIES):
            d = os.path.join(args.out, name)
            shutil.rmtree(d, ignore_errors=True)
            family = make_tokenizer_dir(name, d, w)
            ref = reference(name, family, d, lines)
            write_json(os.path.join(d, "reference.json"), ref)
            print(f"{name}: {ref['class']}, {ref['size']} ids, {len(ref['added'])} added tokens")


if __name__ == "__main__":
    main()
