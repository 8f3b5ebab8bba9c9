"""dpcore.studio.access: workspace owners, roles, and who may open what."""
from __future__ import annotations

import threading

from dpcore.studio.access import (
    ADMINS_ENV,
    Identity,
    Registry,
    configured_admins,
    local_identity,
    logged_in_identity,
    parse_admins,
)


def test_admins_from_the_environment_and_the_secrets(monkeypatch):
    monkeypatch.setenv(ADMINS_ENV, "Ada@Example.org, bob@example.org;  carol@example.org")
    assert configured_admins() == {"ada@example.org", "bob@example.org", "carol@example.org"}
    assert configured_admins(["dan@example.org"]) >= {"dan@example.org", "ada@example.org"}
    assert parse_admins("") == frozenset() and parse_admins(None) == frozenset()
    assert logged_in_identity("ADA@example.org").role == "admin"
    assert logged_in_identity("eve@example.org") == Identity("eve@example.org", False, True)
    monkeypatch.delenv(ADMINS_ENV)
    assert logged_in_identity("ada@example.org").role == "curator"


def test_a_workspace_opens_for_its_owner_and_admins_only(tmp_path):
    reg = Registry(tmp_path)
    assert reg.workspaces() == [] and not (tmp_path / "access.sqlite").exists()  # reading creates nothing
    alice, bob = logged_in_identity("alice@example.org"), logged_in_identity("bob@example.org")
    admin = Identity("root@example.org", True, True)
    assert reg.claim("w1", alice.user) == "alice@example.org"
    assert reg.claim("w1", bob.user) == "alice@example.org"  # a second claim does not take it over
    assert reg.refusal("w1", alice) is None and reg.refusal("w1", admin) is None
    assert reg.refusal("w1", bob) == "workspace 'w1' belongs to another curator; open one of yours or ask an admin"
    assert "alice" not in reg.refusal("w1", bob)  # the refusal does not name the owner
    assert reg.refusal("legacy", bob) == "workspace 'legacy' has no owner on record; ask an admin to open it"
    assert reg.refusal("legacy", admin) is None
    assert reg.refusal("w1", local_identity()) is None  # without login the machine's user holds both roles
    reg.claim("w2", bob.user)
    assert [w["id"] for w in reg.workspaces()] == ["w1", "w2"]
    assert [w["id"] for w in reg.workspaces("bob@example.org")] == ["w2"]


def test_concurrent_claims_of_one_id_leave_one_owner(tmp_path):
    reg = Registry(tmp_path)
    owners, users = [], [f"u{i}@example.org" for i in range(8)]
    threads = [threading.Thread(target=lambda u=u: owners.append(reg.claim("same", u))) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(owners)) == 1 and owners[0] in users
    assert reg.owner("same") == owners[0]
