"""The effective configuration as code meets it: one field per setting, of its default's type."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memoryd.base.config import SETTINGS, Config, load_config


def test_every_setting_is_a_field_typed_by_its_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Config)}
    for name, setting in SETTINGS.items():
        assert fields[name].type is type(setting.default)
        assert fields[name].default == setting.default


def test_file_and_environment_values_are_converted_when_the_config_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "memoryd.toml").write_text("lease_seconds = 30\nworkers = 3.0\n")
    monkeypatch.setenv("MEMORYD_POLL_SECONDS", "0.5")
    monkeypatch.setenv("MEMORYD_MAX_ATTEMPTS", "7")
    config = load_config(tmp_path, {"cache_kib": 1024})
    got = [config.lease_seconds, config.workers, config.poll_seconds, config.max_attempts]
    assert [(v, type(v)) for v in got] == [(30.0, float), (3, int), (0.5, float), (7, int)]
    assert (config.cache_kib, config.sources["cache_kib"]) == (1024, "flag")
    assert config.sources["max_attempts"] == "MEMORYD_MAX_ATTEMPTS"


def test_a_config_is_frozen_and_copies_with_replace(tmp_path: Path) -> None:
    config = load_config(tmp_path, {"workers": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.workers = 4  # type: ignore[misc]
    more = dataclasses.replace(config, workers=4)
    assert (more.workers, config.workers) == (4, 2)
    assert more.sources == config.sources


def test_a_worker_rebuilds_the_same_settings_from_their_values(tmp_path: Path) -> None:
    config = load_config(tmp_path, {"workers": 5, "encoder": "wordllama"})
    rebuilt = Config(**config.as_dict())
    assert rebuilt.as_dict() == config.as_dict()
    assert (rebuilt.workers, rebuilt.encoder) == (5, "wordllama")


def test_a_value_of_another_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="lease_seconds must be float, got '60'"):
        dataclasses.replace(load_config(tmp_path), lease_seconds="60")
    with pytest.raises(TypeError, match="workers must be int, got 2.0"):
        Config(workers=2.0)
