"""A forget reaches the turns' checkpoints (S-55): the snapshots of an erased session's
working tree go, with every file content no other session's checkpoint holds, and the raw
scan of the checkpoint files finds none of it; another session's checkpoints still restore."""

from __future__ import annotations

from pathlib import Path

from sessiondb.turns import Checkpoints

SECRET = b"alice's private notes: the quince orchard deal\n"
SHARED = b"a licence both trees carry\n"


def holding(folder: Path, needle: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_forgotten_session_s_checkpoints_go_with_the_contents_only_it_held(store, tmp_path):
    alice = store.create_session("cli", user_id="alice")
    bob = store.create_session("cli", user_id="bob")
    checkpoints = Checkpoints(store)
    for who, secret in ((alice, SECRET), (bob, b"bob's own file\n")):
        tree = tmp_path / who.user_id
        tree.mkdir()
        (tree / "notes.txt").write_bytes(secret)
        (tree / "LICENCE").write_bytes(SHARED)
        checkpoints.take(who.id, tree)
    assert holding(checkpoints.root, SECRET)

    receipt = store.forget(user_id="alice")

    assert receipt.checkpoint_files == 2  # alice's manifest and the one content only hers held
    assert holding(checkpoints.root, SECRET) == [] and holding(checkpoints.root, SHARED)
    (tmp_path / "bob" / "LICENCE").write_bytes(b"changed\n")
    report = checkpoints.restore(bob.id, "1", force=True)
    assert report.restored and (tmp_path / "bob" / "LICENCE").read_bytes() == SHARED
