#!/usr/bin/env python3
"""Writes a tiny llama-architecture GGUF model with random weights.

The model exists to exercise the OpenAI-compatible protocol of a real
inference server on the CPU (n samples, logprobs, token ids, stop reasons,
errors); its text is gibberish. Usage: make_tiny_gguf.py OUT.gguf [SEED]

Vocabulary: a SentencePiece-style ("llama") vocabulary of <unk>, <s>, </s>,
the 256 byte-fallback tokens <0x00>..<0xFF>, every printable ASCII character,
the word-start marker and a few common code words.
"""
import sys

import numpy as np
import gguf

N_CTX = 256
N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 4
N_LAYER = 2
N_FF = 128


def vocab():
    tokens, scores, types = [], [], []

    def add(tok, score, typ):
        tokens.append(tok.encode("utf-8"))
        scores.append(score)
        types.append(typ)

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    add("<s>", 0.0, gguf.TokenType.CONTROL)
    add("</s>", 0.0, gguf.TokenType.CONTROL)
    for b in range(256):
        add("<0x%02X>" % b, 0.0, gguf.TokenType.BYTE)
    seen = set()
    pieces = ["\u2581"] + [chr(c) for c in range(33, 127)]
    words = ["def", "return", "if", "else", "for", "in", "range", "print", "x", "n", "i", "True", "False", "None"]
    pieces += ["\u2581" + w for w in words]
    for i, p in enumerate(pieces):
        if p in seen:
            continue
        seen.add(p)
        add(p, -float(i), gguf.TokenType.NORMAL)
    return tokens, scores, types


def main():
    out = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocab()
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("murphy-tiny-random")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def t(name, *shape, scale=0.2):
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def ones(name, n):
        w.add_tensor(name, np.ones((n,), dtype=np.float32))

    head_dim = N_EMBD // N_HEAD
    t("token_embd.weight", n_vocab, N_EMBD, scale=1.0)
    for i in range(N_LAYER):
        p = "blk.%d." % i
        ones(p + "attn_norm.weight", N_EMBD)
        t(p + "attn_q.weight", N_EMBD, N_EMBD)
        t(p + "attn_k.weight", N_HEAD_KV * head_dim, N_EMBD)
        t(p + "attn_v.weight", N_HEAD_KV * head_dim, N_EMBD)
        t(p + "attn_output.weight", N_EMBD, N_EMBD)
        ones(p + "ffn_norm.weight", N_EMBD)
        t(p + "ffn_gate.weight", N_FF, N_EMBD)
        t(p + "ffn_up.weight", N_FF, N_EMBD)
        t(p + "ffn_down.weight", N_EMBD, N_FF)
    ones("output_norm.weight", N_EMBD)
    t("output.weight", n_vocab, N_EMBD, scale=0.5)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
