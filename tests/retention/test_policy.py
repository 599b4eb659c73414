from __future__ import annotations

import pytest

from memoryd.base.config import load_config
from memoryd.retention.policy import DAY, RetentionPolicy
from memoryd.storage.archive import BadArchiveInput

NOW = 1_700_000_000.0


def test_defaults_match_design():
    p = RetentionPolicy()
    assert p.age_seconds("ephemeral") == 14 * DAY
    assert p.age_seconds("conversation") == 90 * DAY
    assert p.age_seconds("derived") == 30 * DAY
    assert p.age_seconds("durable") is None and p.age_seconds("active") is None
    assert p.recall_days == {"ephemeral": 7, "conversation": 30, "derived": 30}
    assert p.expires_at("ephemeral", NOW) == NOW + 14 * DAY
    assert not p.is_due("ephemeral", NOW, NOW + 14 * DAY - 1)
    assert p.is_due("ephemeral", NOW, NOW + 14 * DAY)


def test_zero_days_never_expires_and_horizons():
    p = RetentionPolicy(ages_days={"ephemeral": 0, "conversation": 90, "derived": 30})
    assert p.expires_at("ephemeral", NOW) is None
    assert not p.is_due("ephemeral", NOW - 1000 * DAY, NOW)
    assert p.recall_eligible("ephemeral", NOW - 6 * DAY, NOW)
    assert not p.recall_eligible("ephemeral", NOW - 8 * DAY, NOW)
    assert p.recall_eligible("conversation", NOW - 29 * DAY, NOW)
    assert not p.recall_eligible("durable", NOW, NOW)  # never automatic
    cut = p.recall_cutoffs(NOW)
    assert cut["ephemeral"] == NOW - 7 * DAY and cut["durable"] == float("inf")
    assert p.fingerprint() != RetentionPolicy().fingerprint()
    with pytest.raises(BadArchiveInput):
        RetentionPolicy(ages_days={"durable": 3})
    with pytest.raises(BadArchiveInput):
        RetentionPolicy(ages_days={"ephemeral": -1})


def test_from_config_layers(tmp_path, monkeypatch):
    for k in list(__import__("os").environ):
        if k.startswith("MEMORYD_"):
            monkeypatch.delenv(k)
    (tmp_path / "memoryd.toml").write_text("retention_derived_days = 10\n")
    monkeypatch.setenv("MEMORYD_RETENTION_EPHEMERAL_DAYS", "0")
    cfg = load_config(tmp_path, {"retention_conversation_recall_days": 5})
    p = RetentionPolicy.from_config(cfg)
    assert p.ages_days == {"ephemeral": 0, "conversation": 90, "derived": 10}
    assert p.recall_days["conversation"] == 5
    assert cfg.sources["retention_ephemeral_days"] == "MEMORYD_RETENTION_EPHEMERAL_DAYS"
    assert cfg.retention_disk_low_bytes == 2 * 1024**3
    assert cfg.retention_disk_reserve_bytes == 64 * 1024**2
    assert cfg.retention_tick_seconds == 60.0
