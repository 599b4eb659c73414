"""Must-show 5: the migration boundary and a real payload-format migration."""

from __future__ import annotations

import signal

import orjson
import pytest

from memoryd.base.errors import BoundaryBusy
from memoryd.retention.boundary import Boundary, Migration, RetentionBlocked
from memoryd.retention.waves import run_wave
from memoryd.storage.archive import ArchiveStore

from .conftest import NOW, POLICY, check_invariants, child, populate, spawn


def wave(path):
    with ArchiveStore.open_primary(path) as s:
        return run_wave(s, POLICY, Boundary(path), now=NOW)


def test_waves_refused_in_every_migration_state_but_committed(path):
    with ArchiveStore.open_primary(path) as s:
        docs = populate(s, 200)
    m = Migration(path)
    # SIGKILL mid-copy leaves "copying"
    code, _, err = child("migrate-copy", str(path), env={"MEMORYD_KILL_AT": "migration_mid_copy"})
    assert code == -signal.SIGKILL, err
    assert m.state()["state"] == "copying"
    with pytest.raises(RetentionBlocked) as exc:
        wave(path)
    assert exc.value.state == "copying" and exc.value.retryable
    assert m.copy(2)["state"] == "awaiting_verification"  # the copy starts over
    with pytest.raises(RetentionBlocked):
        wave(path)
    # a write that reaches the old archive after the copy is carried over by verification
    with ArchiveStore.open_primary(path) as s:
        late = s.ledgers.append("p", "durable", "late write", created_at=NOW, expires_at=None)
    assert m.verify()["state"] == "verified"
    with pytest.raises(RetentionBlocked) as exc:
        wave(path)
    assert exc.value.state == "verified"
    assert m.commit()["state"] == "committed"
    with ArchiveStore.open_primary(path) as s:
        assert s.payload_format == 2 and s.ledgers.get(late.locator)["content"] == "late write"
        check_invariants(s, docs)
        assert s.postings.verify_postings()["ok"]
    assert len(wave(path).expired) == 100
    assert not m.prev_path.exists() and not m.next_path.exists()


def test_blocked_verification_and_rollbacks(path):
    with ArchiveStore.open_primary(path) as s:
        docs = populate(s, 20)
    m = Migration(path)
    m.copy(2)
    with ArchiveStore.open_primary(m.next_path) as copy:  # damage the copy
        copy.maintenance.raw_delete(
            [next(k for k, _ in copy.maintenance.raw_items() if copy.maintenance.is_payload_key(k))]
        )
    with ArchiveStore.open_primary(path) as s:  # a write the re-sync would carry over
        s.ledgers.append("p", "durable", "between", created_at=NOW, expires_at=None)
    state = m.verify()  # the re-sync repairs the copy: verification passes
    assert state["state"] == "verified"
    # after verification, writes go to the new archive; rollback keeps them
    with ArchiveStore.open_primary(path) as s:
        kept = s.ledgers.append(
            "p", "durable", "written after verification", created_at=NOW, expires_at=None
        )
    assert m.rollback()["state"] == "committed"
    with ArchiveStore.open_primary(path) as s:
        assert s.payload_format == 1
        assert s.ledgers.get(kept.locator)["content"] == "written after verification"
        check_invariants(s, docs)
    # blocked: a verification that finds a difference it cannot carry over
    m.copy(2)
    import memoryd.retention.boundary as boundary_mod

    real = boundary_mod._compare
    boundary_mod._compare = lambda *a: ["forced difference"]
    try:
        assert m.verify()["state"] == "blocked"
    finally:
        boundary_mod._compare = real
    with pytest.raises(RetentionBlocked) as exc:
        wave(path)
    assert exc.value.state == "blocked"
    assert m.rollback()["state"] == "committed"
    assert not m.next_path.exists()
    assert wave(path).expired


def test_verification_cannot_start_while_a_wave_holds_the_shared_side(path):
    with ArchiveStore.open_primary(path) as s:
        populate(s, 10)
    m = Migration(path)
    m.copy(2)
    m.boundary._set_state(None)  # let the wave pass its state check, keep the copy
    holder = spawn("hold-wave", str(path))
    try:
        assert orjson.loads(holder.stdout.readline()) == {"holding": "hold-wave"}
        m.boundary._set_state(
            {"state": "awaiting_verification", "target_format": 2, "source_format": 1}
        )
        with pytest.raises(BoundaryBusy) as exc:
            m.verify()
        assert exc.value.holder_pid == holder.pid and exc.value.retryable
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    # the OS released the dead wave's side: verification proceeds
    assert m.verify()["state"] == "verified"
    m.commit()


def test_a_wave_cannot_run_while_verification_holds_exclusive(path):
    with ArchiveStore.open_primary(path) as s:
        populate(s, 10)
    holder = spawn("hold-exclusive", str(path))
    try:
        assert orjson.loads(holder.stdout.readline()) == {"holding": "hold-exclusive"}
        with pytest.raises(BoundaryBusy) as exc:
            wave(path)
        assert exc.value.holder_pid == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert len(wave(path).expired) == 5


def test_crash_mid_switch_recovers(path):
    with ArchiveStore.open_primary(path) as s:
        docs = populate(s, 10)
    m = Migration(path)
    m.copy(2)
    # simulate SIGKILL between the two renames of the switch
    m.boundary._set_state({**m.state(), "switching": "verify"})
    path.rename(m.prev_path)
    assert m.recover()["state"] == "verified"
    with ArchiveStore.open_primary(path) as s:
        assert s.payload_format == 2
        check_invariants(s, docs)
    m.commit()
