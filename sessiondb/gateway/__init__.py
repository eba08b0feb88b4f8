"""Many profiles in one process: routing, the retry queue, crash recovery (S-30..S-36).

    from sessiondb.gateway import Gateway
    from sessiondb import keys
    with Gateway(home) as gw:
        gw.recover()
        key = keys.build("work", "telegram", "dm", "12345")
        gw.turn_started(key)
        gw.append(key, {"role": "user", "content": "hello"})
        gw.turn_finished(key)
"""

from .gateway import AppendResult, Gateway, NotAccepted
from .owners import NoRoutingIndex, OwnerUnavailable
from .policies import DailyReset, IdleReset
from .recovery import RecoveryReport

__all__ = ["Gateway", "AppendResult", "NotAccepted", "OwnerUnavailable", "NoRoutingIndex", "RecoveryReport",
           "IdleReset", "DailyReset"]
