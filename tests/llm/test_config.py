"""Endpoints, stage assignment and overrides (file < env < CLI), and the registry."""

from __future__ import annotations

import pytest

from sqlmend.errors import ConfigError
from sqlmend.llm import LLMConfig, register_kind, resolve
from sqlmend.llm.base import Backend
from sqlmend.llm.config import default_path
from sqlmend.llm.local import TransformersBackend
from sqlmend.llm.openai_compat import OpenAIBackend
from sqlmend.llm.registry import kinds
from sqlmend.llm.replay import ReplayBackend

TOML = """
[llm]
log = "{log}"
cache = false

[endpoints.vllm-qwen]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"
model = "Qwen/Qwen2.5-7B-Instruct"
api_key_env = "VLLM_KEY"
timeout = 12

[endpoints.recorded]
kind = "replay"
of = "local-smollm2"
cassette = "{cassette}"
mode = "replay"

[stages]
default = "local-smollm2"
refiner = "vllm-qwen"
embedder = "local-minilm"
judge = "none"
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith(("SQLMEND_STAGE_", "SQLMEND_MODELS")):
            monkeypatch.delenv(key, raising=False)


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(TOML.format(log=tmp_path / "llm.sqlite", cassette=tmp_path / "c.jsonl"))
    return path


def test_builtin_config_assigns_no_stage():
    cfg = LLMConfig()
    assert {"local-smollm2", "local-minilm"} <= set(cfg.endpoints)
    assert cfg.resolve("refiner") is None and cfg.resolve("embedder") is None


def test_local_preset_gives_embedded_models_to_every_stage():
    cfg = LLMConfig.local(log=False)
    for stage in ("detector", "localizer", "refiner", "judge", "solver", "recovery", "baseline"):
        assert cfg.endpoint_for(stage) == "local-smollm2"
    assert cfg.endpoint_for("embedder") == "local-minilm"
    backend = resolve("refiner", cfg)
    assert isinstance(backend, TransformersBackend)
    assert backend is resolve("detector", cfg)  # one model instance per endpoint
    assert backend.log is None


def test_toml_file_stages_and_endpoints(config_file):
    cfg = LLMConfig.load(config_file, env=False)
    assert cfg.source == str(config_file)
    assert cfg.endpoint_for("refiner") == "vllm-qwen"
    assert cfg.endpoint_for("localizer") == "local-smollm2"  # falls back to default
    assert cfg.endpoint_for("embedder") == "local-minilm"
    assert cfg.resolve("judge") is None  # "none" switches the stage off
    qwen = cfg.resolve("refiner")
    assert isinstance(qwen, OpenAIBackend)
    assert (qwen.model, qwen.base_url, qwen.timeout) == ("Qwen/Qwen2.5-7B-Instruct",
                                                          "http://127.0.0.1:8000/v1", 12.0)
    assert qwen.log is cfg.call_log() and cfg.call_log().cache is False


def test_embedder_has_no_chat_default():
    cfg = LLMConfig(stages={"default": "local-smollm2"}, log=False)
    assert cfg.endpoint_for("embedder") is None


def test_env_overrides_file_and_cli_overrides_env(config_file, monkeypatch):
    monkeypatch.setenv("SQLMEND_STAGE_REFINER", "local-smollm2")
    cfg = LLMConfig.load(config_file)
    assert cfg.endpoint_for("refiner") == "local-smollm2"
    cfg = cfg.with_overrides(["refiner=vllm-qwen", "detector=none"])
    assert cfg.endpoint_for("refiner") == "vllm-qwen"
    assert cfg.endpoint_for("detector") is None


def test_star_override_and_models_env(config_file, monkeypatch):
    cfg = LLMConfig.load(config_file, env=False).with_overrides(["*=vllm-qwen"])
    assert cfg.endpoint_for("localizer") == "vllm-qwen" and cfg.endpoint_for("judge") == "vllm-qwen"
    assert cfg.endpoint_for("embedder") == "local-minilm"  # chat endpoint leaves embedder alone
    monkeypatch.setenv("SQLMEND_MODELS", "none")
    cfg = LLMConfig.load(config_file)
    assert cfg.resolve("refiner") is None and cfg.resolve("embedder") is None


def test_replay_endpoint_takes_identity_of_inner_without_loading_it(config_file):
    cfg = LLMConfig.load(config_file, env=False)
    rec = cfg.backend("recorded")
    assert isinstance(rec, ReplayBackend)
    assert rec.identity == ("transformers", "SmolLM2-135M-Instruct")
    assert "local-smollm2" not in cfg._backends  # built lazily, only on a miss


@pytest.mark.parametrize("spec", ["refiner", "=x", "refiner="])
def test_malformed_override(spec):
    with pytest.raises(ConfigError, match="STAGE=ENDPOINT"):
        LLMConfig().with_overrides([spec])


def test_unknown_endpoint_and_kind(tmp_path):
    with pytest.raises(ConfigError, match="unknown endpoint 'nope'"):
        LLMConfig().with_overrides(["refiner=nope"])
    with pytest.raises(ConfigError, match="unknown backend kind"):
        LLMConfig(endpoints={"x": {"kind": "carrier-pigeon"}}, log=False).backend("x")
    with pytest.raises(ConfigError, match="needs a 'kind'"):
        LLMConfig(endpoints={"x": {"model": "m"}})
    with pytest.raises(ConfigError, match="bad endpoint settings"):
        LLMConfig(endpoints={"x": {"kind": "openai", "model": "m", "colour": "red"}},
                  log=False).backend("x")
    with pytest.raises(ConfigError, match="does not exist"):
        LLMConfig.load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[stages\n")
    with pytest.raises(ConfigError, match="bad.toml"):
        LLMConfig.load(bad)


def test_default_path_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SQLMEND_MODELS_CONFIG", str(tmp_path / "m.toml"))
    assert default_path() == tmp_path / "m.toml"


def test_third_party_kind_registers_like_builtins():
    class Echo(Backend):
        kind = "echo"

    register_kind("echo", Echo)
    assert "echo" in kinds() and "openai" in kinds()
    cfg = LLMConfig(endpoints={"e": {"kind": "echo", "model": "parrot"}}, stages={"judge": "e"},
                    log=False)
    assert isinstance(cfg.resolve("judge"), Echo) and cfg.resolve("judge").model == "parrot"
