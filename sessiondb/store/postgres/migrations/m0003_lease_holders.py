"""Migration 0003_lease_holders, released: a compaction lease records its holder's process
identity beyond host and PID (the kernel's boot id, the PID namespace, the process's start
time in clock ticks), so that a lease whose holder is provably dead on the asking host is
taken over before its TTL (S-07, store/holders.py). Leases taken before it have none of
them and wait for their TTL.

Frozen: never edit it; change the table with a new migration appended to MIGRATIONS.
"""

from __future__ import annotations

NAME = "0003_lease_holders"

SQL = """
ALTER TABLE {schema}.compaction_leases
    ADD COLUMN boot_id   text,
    ADD COLUMN pid_ns    text,
    ADD COLUMN pid_start bigint;
"""
