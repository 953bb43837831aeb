#!/usr/bin/env python3
"""PyTorch implementations of the checkpoint layouts tools/convert_pytorch.py reads.

Each keeps its source's module tree, so state_dict() names are exactly those of the original
code, and its source's math, with the source's bugs fixed (docs/seeds.md lists them) so that it
computes the paper's model:

  Seed004Transformer  jadore801120/attention-is-all-you-need-pytorch, as written up in seed 004:
                      post-norm, eps 1e-6, bias-free attention projections, LayerNorm after
                      embedding + positions + dropout, 'emb'/'prj'/'none' scaling, sharing/tying.
  Seed000Transformer  seed 000's `transformer`: pre-norm, final norms, [sin | cos] positions with
                      its own timescales, shared target embedding as output, sqrt(d) scaling,
                      has_inputs=False for a decoder-only model.
  TorchNNSeq2Seq      the Seq2SeqTransformer of PyTorch's "Language Translation with
                      nn.Transformer" tutorial (torch.nn.Transformer, sequence-first).

Differences from the originals that are not bug fixes (they make the three agree with the
project's conventions, so their outputs can be compared with tools/reference_model.py):
  * every model takes batch-first (src, trg_in) with trg_in = [BOS, y1 .. yn]: seed 000's
    internal shift that used a zero vector as the start symbol is replaced by the BOS token;
  * pad keys are masked in every attention (seed 000's decoder self-attention used only the
    causal mask, which is equivalent for right-padded batches);
  * `exact_tables()` recomputes the position buffers in float64 after `.double()` (the originals
    build them in float32), so float64 outputs are float64-accurate.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


# ============================================================================ seed 004 (jadore)

class ScaledDotProductAttention(nn.Module):
    def __init__(self, temperature, attn_dropout=0.1):
        super().__init__()
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)

    def forward(self, q, k, v, mask=None):
        attn = torch.matmul(q / self.temperature, k.transpose(2, 3))
        if mask is not None:
            attn = attn.masked_fill(mask == 0, -1e9)
        attn = self.dropout(F.softmax(attn, dim=-1))
        return torch.matmul(attn, v), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
        super().__init__()
        self.n_head, self.d_k, self.d_v = n_head, d_k, d_v
        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)
        # fixed: the attention dropout follows `dropout` (the original always used 0.1)
        self.attention = ScaledDotProductAttention(temperature=d_k ** 0.5, attn_dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, q, k, v, mask=None):
        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, len_k, len_v = q.size(0), q.size(1), k.size(1), v.size(1)
        residual = q
        q = self.w_qs(q).view(sz_b, len_q, n_head, d_k)
        k = self.w_ks(k).view(sz_b, len_k, n_head, d_k)
        v = self.w_vs(v).view(sz_b, len_v, n_head, d_v)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if mask is not None:
            mask = mask.unsqueeze(1)  # head axis
        q, attn = self.attention(q, k, v, mask=mask)
        q = q.transpose(1, 2).contiguous().view(sz_b, len_q, -1)
        q = self.dropout(self.fc(q))
        q += residual
        return self.layer_norm(q), attn


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_in, d_hid, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_in, d_hid)
        self.w_2 = nn.Linear(d_hid, d_in)
        self.layer_norm = nn.LayerNorm(d_in, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        residual = x
        x = self.dropout(self.w_2(F.relu(self.w_1(x))))
        x += residual
        return self.layer_norm(x)


def _jadore_table(n_position, d_hid):
    """The original's numpy float64 table, (1, n_position, d_hid) float64."""
    def angles(position):
        return [position / np.power(10000, 2 * (hid_j // 2) / d_hid) for hid_j in range(d_hid)]
    table = np.array([angles(p) for p in range(n_position)])
    table[:, 0::2] = np.sin(table[:, 0::2])
    table[:, 1::2] = np.cos(table[:, 1::2])
    return torch.from_numpy(table).unsqueeze(0)


class PositionalEncoding(nn.Module):
    def __init__(self, d_hid, n_position=200):
        super().__init__()
        self.register_buffer("pos_table", _jadore_table(n_position, d_hid).float())

    def forward(self, x):
        return x + self.pos_table[:, :x.size(1)].clone().detach()

    def exact_tables(self):
        self.pos_table = _jadore_table(self.pos_table.shape[1], self.pos_table.shape[2]).to(
            self.pos_table.dtype)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, d_inner, n_head, d_k, d_v, dropout=0.1):
        super().__init__()
        self.slf_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.pos_ffn = PositionwiseFeedForward(d_model, d_inner, dropout=dropout)

    def forward(self, enc_input, slf_attn_mask=None):
        enc_output, enc_slf_attn = self.slf_attn(enc_input, enc_input, enc_input, mask=slf_attn_mask)
        return self.pos_ffn(enc_output), enc_slf_attn


class DecoderLayer(nn.Module):
    def __init__(self, d_model, d_inner, n_head, d_k, d_v, dropout=0.1):
        super().__init__()
        self.slf_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.enc_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.pos_ffn = PositionwiseFeedForward(d_model, d_inner, dropout=dropout)

    def forward(self, dec_input, enc_output, slf_attn_mask=None, dec_enc_attn_mask=None):
        dec_output, a1 = self.slf_attn(dec_input, dec_input, dec_input, mask=slf_attn_mask)
        dec_output, a2 = self.enc_attn(dec_output, enc_output, enc_output, mask=dec_enc_attn_mask)
        return self.pos_ffn(dec_output), a1, a2


class Encoder(nn.Module):
    def __init__(self, n_src_vocab, d_word_vec, n_layers, n_head, d_k, d_v, d_model, d_inner,
                 pad_idx, dropout=0.1, n_position=200, scale_emb=False):
        super().__init__()
        self.src_word_emb = nn.Embedding(n_src_vocab, d_word_vec, padding_idx=pad_idx)
        self.position_enc = PositionalEncoding(d_word_vec, n_position=n_position)
        self.dropout = nn.Dropout(p=dropout)
        self.layer_stack = nn.ModuleList([
            EncoderLayer(d_model, d_inner, n_head, d_k, d_v, dropout=dropout)
            for _ in range(n_layers)])
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.scale_emb = scale_emb
        self.d_model = d_model

    def forward(self, src_seq, src_mask):
        enc_output = self.src_word_emb(src_seq)
        if self.scale_emb:
            enc_output *= self.d_model ** 0.5
        enc_output = self.dropout(self.position_enc(enc_output))
        enc_output = self.layer_norm(enc_output)
        for enc_layer in self.layer_stack:
            enc_output, _ = enc_layer(enc_output, slf_attn_mask=src_mask)
        return enc_output


class Decoder(nn.Module):
    # seed 004 omits this constructor; it mirrors Encoder's, as in the original repository.
    def __init__(self, n_trg_vocab, d_word_vec, n_layers, n_head, d_k, d_v, d_model, d_inner,
                 pad_idx, n_position=200, dropout=0.1, scale_emb=False):
        super().__init__()
        self.trg_word_emb = nn.Embedding(n_trg_vocab, d_word_vec, padding_idx=pad_idx)
        self.position_enc = PositionalEncoding(d_word_vec, n_position=n_position)
        self.dropout = nn.Dropout(p=dropout)
        self.layer_stack = nn.ModuleList([
            DecoderLayer(d_model, d_inner, n_head, d_k, d_v, dropout=dropout)
            for _ in range(n_layers)])
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.scale_emb = scale_emb
        self.d_model = d_model

    def forward(self, trg_seq, trg_mask, enc_output, src_mask):
        dec_output = self.trg_word_emb(trg_seq)
        if self.scale_emb:  # fixed: seed 004's Decoder.forward forgets the scaling
            dec_output *= self.d_model ** 0.5
        dec_output = self.dropout(self.position_enc(dec_output))
        dec_output = self.layer_norm(dec_output)
        for dec_layer in self.layer_stack:
            dec_output, _, _ = dec_layer(dec_output, enc_output, slf_attn_mask=trg_mask,
                                         dec_enc_attn_mask=src_mask)
        return dec_output


def get_pad_mask(seq, pad_idx):
    return (seq != pad_idx).unsqueeze(-2)


def get_subsequent_mask(seq):
    sz_b, len_s = seq.size()
    return (1 - torch.triu(torch.ones((1, len_s, len_s), device=seq.device), diagonal=1)).bool()


class Seed004Transformer(nn.Module):
    def __init__(self, n_src_vocab, n_trg_vocab, src_pad_idx, trg_pad_idx, d_word_vec=512,
                 d_model=512, d_inner=2048, n_layers=6, n_head=8, d_k=64, d_v=64, dropout=0.1,
                 n_position=200, trg_emb_prj_weight_sharing=True, emb_src_trg_weight_sharing=True,
                 scale_emb_or_prj="prj"):
        super().__init__()
        self.src_pad_idx, self.trg_pad_idx = src_pad_idx, trg_pad_idx
        assert scale_emb_or_prj in ["emb", "prj", "none"]
        scale_emb = (scale_emb_or_prj == "emb") if trg_emb_prj_weight_sharing else False
        self.scale_prj = (scale_emb_or_prj == "prj") if trg_emb_prj_weight_sharing else False
        self.d_model = d_model
        self.encoder = Encoder(
            n_src_vocab=n_src_vocab, n_position=n_position, d_word_vec=d_word_vec,
            d_model=d_model, d_inner=d_inner, n_layers=n_layers, n_head=n_head, d_k=d_k, d_v=d_v,
            pad_idx=src_pad_idx, dropout=dropout, scale_emb=scale_emb)
        self.decoder = Decoder(
            n_trg_vocab=n_trg_vocab, n_position=n_position, d_word_vec=d_word_vec,
            d_model=d_model, d_inner=d_inner, n_layers=n_layers, n_head=n_head, d_k=d_k, d_v=d_v,
            pad_idx=trg_pad_idx, dropout=dropout, scale_emb=scale_emb)
        self.trg_word_prj = nn.Linear(d_model, n_trg_vocab, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        assert d_model == d_word_vec
        if trg_emb_prj_weight_sharing:
            self.trg_word_prj.weight = self.decoder.trg_word_emb.weight
        if emb_src_trg_weight_sharing:
            self.encoder.src_word_emb.weight = self.decoder.trg_word_emb.weight

    def forward(self, src_seq, trg_seq):
        """(B, S), (B, T) -> logits (B, T, V) (the original flattens them to (B*T, V))."""
        src_mask = get_pad_mask(src_seq, self.src_pad_idx)
        trg_mask = get_pad_mask(trg_seq, self.trg_pad_idx) & get_subsequent_mask(trg_seq)
        enc_output = self.encoder(src_seq, src_mask)
        dec_output = self.decoder(trg_seq, trg_mask, enc_output, src_mask)
        seq_logit = self.trg_word_prj(dec_output)
        if self.scale_prj:
            seq_logit *= self.d_model ** -0.5
        return seq_logit


# ============================================================================ seed 000

def create_pad_mask(t, pad):
    return (t == pad).unsqueeze(-2)


def create_target_self_mask(target_len, device=None):
    ones = torch.ones(target_len, target_len, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=1).unsqueeze(0)


def initialize_weight(x):
    nn.init.xavier_uniform_(x.weight)
    if x.bias is not None:
        nn.init.constant_(x.bias, 0)


class MutilHeadAttention(nn.Module):
    def __init__(self, hidden_size, dropout_rate, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.att_size = att_size = hidden_size // num_heads
        self.scale = att_size ** -0.5
        self.q_linear = nn.Linear(hidden_size, hidden_size)
        self.k_linear = nn.Linear(hidden_size, hidden_size)
        self.v_linear = nn.Linear(hidden_size, hidden_size)
        initialize_weight(self.q_linear)
        initialize_weight(self.k_linear)
        initialize_weight(self.v_linear)
        self.att_dropout = nn.Dropout(dropout_rate)
        self.output_layer = nn.Linear(num_heads * att_size, hidden_size)
        initialize_weight(self.output_layer)

    def forward(self, q, k, v, mask):
        orig_q_size = q.shape
        d_k = d_v = self.att_size
        batch_size = q.shape[0]
        q = self.q_linear(q).view(batch_size, -1, self.num_heads, d_k)
        k = self.k_linear(k).view(batch_size, -1, self.num_heads, d_k)
        v = self.v_linear(v).view(batch_size, -1, self.num_heads, d_v)
        q = q.transpose(1, 2)
        k = k.transpose(1, 2).transpose(2, 3)
        v = v.transpose(1, 2)
        q = q * self.scale
        x = torch.matmul(q, k)
        x = x.masked_fill(mask.unsqueeze(1), -1e9)
        x = self.att_dropout(torch.softmax(x, dim=3))
        x = x.matmul(v)
        x = x.transpose(1, 2).contiguous()  # fixed: the seed discarded this result
        x = x.view(batch_size, -1, self.num_heads * d_v)
        x = self.output_layer(x)
        assert x.shape == orig_q_size
        return x


class FeedForwardNetwork(nn.Module):
    def __init__(self, hidden_size, filter_size, dropout_rate):
        super().__init__()
        self.layer1 = nn.Linear(hidden_size, filter_size)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(dropout_rate)  # kept: seed 000 drops out inside the FFN
        self.layer2 = nn.Linear(filter_size, hidden_size)
        initialize_weight(self.layer1)
        initialize_weight(self.layer2)

    def forward(self, x):
        return self.layer2(self.dropout(self.relu(self.layer1(x))))


class Encoder_Layer(nn.Module):
    def __init__(self, hidden_size, filter_size, dropout_rate, num_heads=8):
        super().__init__()
        self.MutilHeadAttention_norm = nn.LayerNorm(hidden_size, 1e-6)
        self.MutilHeadAttention = MutilHeadAttention(hidden_size, dropout_rate, num_heads)
        self.MutilHeadAttention_dropout = nn.Dropout(dropout_rate)
        self.FeedForwardNetwork_nrom = nn.LayerNorm(hidden_size, 1e-6)  # sic: the seed's name
        self.FeedForwardNetwork = FeedForwardNetwork(hidden_size, filter_size, dropout_rate)
        self.FeedForwardNetwork_dropout = nn.Dropout(dropout_rate)

    def forward(self, x, mask):
        y = self.MutilHeadAttention_norm(x)
        y = self.MutilHeadAttention(y, y, y, mask)
        x = self.MutilHeadAttention_dropout(y) + x
        y = self.FeedForwardNetwork_nrom(x)
        y = self.FeedForwardNetwork(y)
        return self.FeedForwardNetwork_dropout(y) + x


class Seed000Encoder(nn.Module):
    def __init__(self, num_encoder_layer, hidden_size, filter_size, dropout_rate, num_heads=8):
        super().__init__()
        self.Encoder_layers = nn.ModuleList([Encoder_Layer(
            hidden_size, filter_size, dropout_rate, num_heads) for _ in range(num_encoder_layer)])
        self.Last_norm = nn.LayerNorm(hidden_size, 1e-6)

    def forward(self, input, mask):
        output = input
        for encoder_layer in self.Encoder_layers:
            output = encoder_layer(output, mask)
        return self.Last_norm(output)


class Decoder_layer(nn.Module):
    def __init__(self, hidden_size, filter_size, dropout_rate, num_heads=8):
        super().__init__()
        self.MutilHeadAttention_norm = nn.LayerNorm(hidden_size, 1e-6)
        self.MutilHeadAttention = MutilHeadAttention(hidden_size, dropout_rate, num_heads)
        self.MutilHeadAttention_dropout = nn.Dropout(dropout_rate)
        self.Encoder_Decoder_MutilHeadAttention_norm = nn.LayerNorm(hidden_size, 1e-6)
        self.Encoder_Decoder_MutilHeadAttention = MutilHeadAttention(
            hidden_size, dropout_rate, num_heads)
        self.Encoder_Decoder_MutilHeadAttention_dropout = nn.Dropout(dropout_rate)
        self.FeedForwardNetwork_norm = nn.LayerNorm(hidden_size, 1e-6)
        self.FeedForwardNetwork = FeedForwardNetwork(hidden_size, filter_size, dropout_rate)
        self.FeedForwardNetwork_dropout = nn.Dropout(dropout_rate)

    def forward(self, x, encoder_output, cross_mask, self_mask):
        y = self.MutilHeadAttention_norm(x)
        y = self.MutilHeadAttention(y, y, y, self_mask)
        x = self.MutilHeadAttention_dropout(y) + x
        if encoder_output is not None:
            y = self.Encoder_Decoder_MutilHeadAttention_norm(x)
            y = self.Encoder_Decoder_MutilHeadAttention(y, encoder_output, encoder_output,
                                                        cross_mask)
            x = self.Encoder_Decoder_MutilHeadAttention_dropout(y) + x
        y = self.FeedForwardNetwork_norm(x)
        y = self.FeedForwardNetwork(y)
        return self.FeedForwardNetwork_dropout(y) + x


class Seed000Decoder(nn.Module):
    def __init__(self, num_decoder_layer, hidden_size, filter_size, dropout_rate, num_heads=8):
        super().__init__()
        self.Decoder_layers = nn.ModuleList([Decoder_layer(
            hidden_size, filter_size, dropout_rate, num_heads) for _ in range(num_decoder_layer)])
        self.Last_norm = nn.LayerNorm(hidden_size, 1e-6)

    def forward(self, targets, encoder_output, cross_mask, self_mask):
        output = targets
        for decoder_layer in self.Decoder_layers:
            output = decoder_layer(output, encoder_output, cross_mask, self_mask)
        return self.Last_norm(output)


class Seed000Transformer(nn.Module):
    def __init__(self, input_vocab_size, target_vocab_size, num_layers=6, hidden_size=512,
                 filter_size=2048, dropout_rate=0.1, share_target_embedding=True,
                 has_inputs=True, src_pad_idx=None, trg_pad_idx=None, num_heads=8):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding_scale = hidden_size ** 0.5
        self.has_inputs = has_inputs
        self.src_pad_idx, self.trg_pad_idx = src_pad_idx, trg_pad_idx
        self.target_vocab_embedding = nn.Embedding(target_vocab_size, hidden_size)
        nn.init.normal_(self.target_vocab_embedding.weight, mean=0, std=hidden_size ** -0.5)
        self.target_embedding_dropout = nn.Dropout(dropout_rate)
        self.decoder = Seed000Decoder(num_layers, hidden_size, filter_size, dropout_rate, num_heads)
        if has_inputs:
            if not share_target_embedding:
                self.input_vocab_embedding = nn.Embedding(input_vocab_size, hidden_size)
                nn.init.normal_(self.input_vocab_embedding.weight, mean=0,
                                std=hidden_size ** -0.5)
            else:
                self.input_vocab_embedding = self.target_vocab_embedding
            self.input_embedding_dropout = nn.Dropout(dropout_rate)
            self.encoder = Seed000Encoder(num_layers, hidden_size, filter_size, dropout_rate,
                                          num_heads)
        self.register_buffer("inv_timescales", self._inv_timescales(torch.float32))

    def _inv_timescales(self, dtype):
        num_timescales = self.hidden_size // 2
        inc = math.log(10000.0 / 1.0) / max(num_timescales - 1, 1)
        return 1.0 * torch.exp(torch.arange(num_timescales, dtype=dtype) * -inc)

    def exact_tables(self):
        self.inv_timescales = self._inv_timescales(torch.float64).to(self.inv_timescales.dtype)

    def forward(self, inputs, targets):
        """inputs (B, S) source ids (None without inputs), targets = trg_in (B, T) from BOS."""
        encoder_output, input_mask = None, None
        if self.has_inputs:
            input_mask = create_pad_mask(inputs, self.src_pad_idx)
            encoder_output = self.encode(inputs, input_mask)
        target_mask = create_pad_mask(targets, self.trg_pad_idx)
        target_self_mask = create_target_self_mask(targets.shape[1], device=targets.device)
        return self.decode(targets, encoder_output, input_mask, target_self_mask | target_mask,
                           target_mask)

    def encode(self, input, input_mask):
        input_embedded = self.input_vocab_embedding(input)
        input_embedded.masked_fill_(input_mask.squeeze(1).unsqueeze(-1), 0)
        input_embedded *= self.embedding_scale
        input_embedded += self.get_position_encoding(input)
        input_embedded = self.input_embedding_dropout(input_embedded)
        return self.encoder(input_embedded, input_mask)  # fixed: the seed skipped the encoder

    def decode(self, targets, encoder_output, input_mask, target_self_mask, target_mask):
        target_embedded = self.target_vocab_embedding(targets)
        target_embedded.masked_fill_(target_mask.squeeze(1).unsqueeze(-1), 0)
        # (the seed shifted here, with a zero vector as the start symbol; targets hold BOS)
        target_embedded *= self.embedding_scale
        target_embedded += self.get_position_encoding(targets)
        target_embedded = self.target_embedding_dropout(target_embedded)
        decoder_output = self.decoder(target_embedded, encoder_output, input_mask,
                                      target_self_mask)
        return torch.matmul(decoder_output, self.target_vocab_embedding.weight.transpose(0, 1))

    def get_position_encoding(self, x):
        max_length = x.shape[1]
        position = torch.arange(max_length, dtype=self.inv_timescales.dtype, device=x.device)
        scaled_time = position.unsqueeze(1) * self.inv_timescales.unsqueeze(0)
        signal = torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)
        signal = F.pad(signal, (0, self.hidden_size % 2))  # fixed: the seed padded a row
        return signal.view(1, max_length, self.hidden_size)


# ============================================================================ torch.nn tutorial

class TutorialPositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", self._table(emb_size, maxlen, torch.float32))

    @staticmethod
    def _table(emb_size, maxlen, dtype):
        den = torch.exp(-torch.arange(0, emb_size, 2, dtype=dtype) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen, dtype=dtype).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size), dtype=dtype)
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)[:, :emb_size // 2]
        return pos_embedding.unsqueeze(-2)

    def exact_tables(self):
        maxlen, _, emb = self.pos_embedding.shape
        self.pos_embedding = self._table(emb, maxlen, torch.float64).to(self.pos_embedding.dtype)

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class TorchNNSeq2Seq(nn.Module):
    """The tutorial's Seq2SeqTransformer (plus the norm_first / activation knobs of
    nn.Transformer). forward() takes the tutorial's sequence-first arguments; `logits()` is the
    batch-first convenience the tests use."""

    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size,
                 tgt_vocab_size, dim_feedforward=512, dropout=0.1, norm_first=False,
                 activation="relu", pad_idx=1, maxlen=5000):
        super().__init__()
        self.transformer = nn.Transformer(
            d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
            dropout=dropout, activation=activation, norm_first=norm_first)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = TutorialPositionalEncoding(emb_size, dropout=dropout,
                                                              maxlen=maxlen)
        self.pad_idx = pad_idx
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def create_mask(self, src, tgt):
        """The tutorial's create_mask (sequence-first ids); the float mask in the model dtype."""
        src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
        dtype = self.generator.weight.dtype
        dev = src.device
        tgt_mask = torch.triu(torch.full((tgt_seq_len, tgt_seq_len), float("-inf"), dtype=dtype,
                                         device=dev), diagonal=1)
        src_mask = torch.zeros((src_seq_len, src_seq_len), device=dev).type(torch.bool)
        src_padding_mask = (src == self.pad_idx).transpose(0, 1)
        tgt_padding_mask = (tgt == self.pad_idx).transpose(0, 1)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    def logits(self, src, trg_in):
        """Batch-first (B, S), (B, T) -> (B, T, V)."""
        s, t = src.transpose(0, 1), trg_in.transpose(0, 1)
        src_mask, tgt_mask, src_pad, tgt_pad = self.create_mask(s, t)
        return self(s, t, src_mask, tgt_mask, src_pad, tgt_pad, src_pad).transpose(0, 1)


# ============================================================================ helpers

def to_float64(model: nn.Module) -> nn.Module:
    """model.double() with its position buffers recomputed in float64."""
    model = model.double()
    for m in model.modules():
        if hasattr(m, "exact_tables"):
            m.exact_tables()
    return model


def logits(model: nn.Module, src, trg_in):
    """Batch-first logits (B, T, V) of any of the three models (src None: decoder-only)."""
    if isinstance(model, TorchNNSeq2Seq):
        return model.logits(src, trg_in)
    return model(src, trg_in)
