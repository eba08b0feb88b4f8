"""Uids never repeat: across threads, and across a fork with uids left in the buffer."""

from __future__ import annotations

import os
import re
import threading

from sessiondb.inputs import new_uid


def test_a_uid_is_32_hex_digits_and_no_two_repeat_across_threads():
    drawn: list[list[str]] = [[] for _ in range(8)]

    def draw(i: int) -> None:
        drawn[i].extend(new_uid() for _ in range(2_000))

    workers = [threading.Thread(target=draw, args=(i,)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    every = [uid for share in drawn for uid in share]
    assert len(set(every)) == len(every) == 16_000
    assert all(re.fullmatch(r"[0-9a-f]{32}", uid) for uid in every)


def test_a_forked_child_never_hands_out_the_uids_left_in_its_parents_buffer():
    new_uid()  # the buffer now holds uids the parent has not handed out yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next uids, to the parent
        try:
            os.write(write, " ".join(new_uid() for _ in range(300)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [new_uid() for _ in range(300)]
    assert len(child) == 300
    assert not set(child) & set(parent)
