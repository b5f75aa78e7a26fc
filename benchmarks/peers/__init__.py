"""The systems benchmark B8 (``benchmarks/mailbox.py``) runs side by side.

``base`` is the interface; ``SYSTEMS`` names each system's ``Mailbox`` class
(imported only when selected, so a missing optional package costs one line).
"""

from __future__ import annotations

SYSTEMS = {
    "inbox_core": "benchmarks.peers.inbox_core_mailbox:InboxCoreMailbox",
    "dbos": "benchmarks.peers.dbos_mailbox:DbosMailbox",
    "floor": "benchmarks.peers.floor_mailbox:FloorMailbox",
}
