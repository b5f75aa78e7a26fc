"""A ``LoopAgent`` serving its log's posts (R35, R36; specs/shell.md section 12).

While the agent owns a log that holds posts (``SqliteLog``, ``PostgresLog``),
one ``PostServer`` task waits for a post (``log.post_wake()``), reads the
oldest pending ones and decodes them (in a worker thread: store I/O and parsing
never block the event loop, R37, D47; a read stops once its texts come to
``BATCH_CHARS``, so what one turn of the loop applies is bounded by the limits
of one command, D47), reduces them one at a time against the agent's head state, and
hands the batch to the agent's commit path (``PostSink``: all the server knows
of the agent): one write with the events of every applied command and the
outcome of every post, then each command is adopted and announced in order,
exactly as if the owner had issued them. The reduction
and the hand-over are synchronous, on the event loop: a post interleaves with
the owner's own commands and with a turn in progress at command boundaries
only, like any in-process command. The server reads again only once the
agent's writes so far are durable, so a post it consumed is never read twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Final, Protocol

import attrs

from inbox_core.commands import Command
from inbox_core.errors import InboxCoreError
from inbox_core.reducer import reduce
from inbox_core.shell.host import describe_failure
from inbox_core.shell.stores.errors import LogUnavailable
from inbox_core.shell.stores.posts import (
    Consumed,
    PendingPost,
    PostApplied,
    PostRejected,
    decode_post,
)
from inbox_core.shell.stores.wakes import Wake
from inbox_core.state import AgentState, Transition

__all__ = ["BATCH", "BATCH_CHARS", "Decoded", "PostServer", "PostSink", "decide", "decode_posts"]

logger: Final = logging.getLogger("inbox_core.shell")

BATCH: Final = 64
"""The most posts consumed in one transaction."""
BATCH_CHARS: Final = 1 << 20
"""A read stops once its posts' texts come to this many characters (one post at least):
the commands one turn of the event loop reduces are a bounded amount of work, a big
command alone (D47)."""
RETRY_SECONDS: Final = 0.5
"""How long the server waits after the store failed (``LogUnavailable``) before it looks again."""


class PostSink(Protocol):
    """What the post server needs of the agent's commit path (``commit.CommitPath``)."""

    @property
    def head(self) -> AgentState: ...  # what the next post is reduced against

    @property
    def closed(self) -> bool: ...  # detached: serve nothing more

    def record_posts(
        self, transitions: Sequence[Transition], consumed: Sequence[Consumed]
    ) -> int: ...

    async def durable(self) -> None: ...


class ServingLog(Protocol):
    def pending_posts(self, limit: int) -> list[PendingPost]: ...

    def post_wake(self) -> Wake: ...


def _rejected(error: BaseException) -> PostRejected:
    message, name = describe_failure(error)  # never raises, whatever the error holds
    return PostRejected(name, message)


@attrs.frozen
class Decoded:
    """A pending post as read: its command, or the error its row decoded to."""

    post_id: int
    command: Command | BaseException


def decode_posts(
    posts: Sequence[PendingPost], chars: int = BATCH_CHARS
) -> tuple[list[Decoded], bool]:
    """``posts`` decoded in order, and whether some were left (their texts came to
    ``chars``, after the first): a row that does not decode is its error, never raised."""
    decoded: list[Decoded] = []
    total = 0
    for post in posts:
        if decoded and total >= chars:
            return decoded, True
        try:
            command: Command | BaseException = decode_post(post.command)
        except InboxCoreError as error:
            command = error
        except Exception as error:  # a core bug: recorded, and the agent keeps serving
            logger.error("a post raised %s in its decoder", type(error).__name__, exc_info=error)
            command = error
        decoded.append(Decoded(post.post_id, command))
        total += len(post.command) if isinstance(post.command, str) else 0
    return decoded, False


def decide(state: AgentState, posts: Sequence[Decoded]) -> tuple[list[Transition], list[Consumed]]:
    """Reduce ``posts`` in order from ``state``: the transitions of the applied ones and the
    outcome of every one. A rejected command (a typed error, or a row that did not decode)
    changes nothing; no post can stop the agent."""
    transitions: list[Transition] = []
    consumed: list[Consumed] = []
    for post in posts:
        command = post.command
        if isinstance(command, BaseException):
            consumed.append(Consumed(post.post_id, _rejected(command)))
            continue
        try:
            transition = reduce(state, command)
        except InboxCoreError as error:
            consumed.append(Consumed(post.post_id, _rejected(error)))
            continue
        except Exception as error:  # a core bug: recorded, and the agent keeps serving
            logger.error("a post raised %s in the reducer", type(error).__name__, exc_info=error)
            consumed.append(Consumed(post.post_id, _rejected(error)))
            continue
        state = transition.state
        transitions.append(transition)
        consumed.append(Consumed(post.post_id, PostApplied()))
    return transitions, consumed


class PostServer:
    """Serves one agent's posts while it owns its log; ``stop`` (detach, dispose) ends it."""

    __slots__ = ("_log", "_sink", "_stopped", "_task")

    def __init__(self, sink: PostSink, log: ServingLog) -> None:
        self._sink = sink
        self._log = log
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    @classmethod
    def attach(cls, sink: PostSink, log: object) -> PostServer | None:
        """A server feeding ``sink`` if ``log`` serves posts, else None."""
        if callable(getattr(log, "pending_posts", None)) and callable(
            getattr(log, "post_wake", None)
        ):
            return cls(sink, log)  # type: ignore[arg-type]
        return None

    def _active(self) -> bool:
        sink = self._sink
        return not (self._stopped or sink.closed or sink.head.disposed)

    def drain(self) -> bool:
        """Apply one batch of pending posts, reading in the calling thread (construction);
        whether more may wait."""
        if not self._active():
            return False
        return self._apply(*self._read())

    def _read(self) -> tuple[list[Decoded], bool]:
        """The oldest pending posts, decoded, and whether more may wait."""
        posts = self._log.pending_posts(BATCH)
        decoded, left = decode_posts(posts, BATCH_CHARS)
        return decoded, left or len(posts) == BATCH

    def _apply(self, posts: list[Decoded], more: bool) -> bool:
        if posts and self._active():
            transitions, consumed = decide(self._sink.head, posts)
            self._sink.record_posts(transitions, consumed)
        return more

    async def _drain(self) -> bool:
        """``drain`` from the serving task: once the agent's writes are durable, read and
        decode in a worker thread, then apply on the loop."""
        await self._sink.durable()  # a post consumed by a write on its way is not read again
        if not self._active():
            return False
        return self._apply(*await asyncio.to_thread(self._read))

    def drain_quietly(self) -> None:
        """``drain`` at construction: a store failure is left to the task to retry."""
        try:
            self.drain()
        except LogUnavailable as error:
            logger.warning("serving posts: %s; retrying", error)

    def ensure_task(self) -> None:
        """Start the serving task in the running loop, once (none without a loop)."""
        task = self._task
        if self._stopped or (task is not None and not task.get_loop().is_closed()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = loop.create_task(self._serve(), name="inbox_core.shell posts")

    def stop(self) -> None:
        self._stopped = True
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _serve(self) -> None:
        wake = self._log.post_wake()  # registered before the first look: nothing is missed
        try:
            while self._active():
                try:
                    more = await self._drain()
                except LogUnavailable as error:
                    logger.warning("serving posts: %s; retrying", error)
                    await asyncio.sleep(RETRY_SECONDS)
                    continue
                except (InboxCoreError, RuntimeError) as error:  # fenced, detached, stopped
                    if self._active():
                        logger.warning("serving posts stopped: %s", error)
                    return
                except Exception as error:  # pragma: no cover - a bug: say so, never loop on it
                    logger.error("serving posts stopped", exc_info=error)
                    return
                if more:
                    await asyncio.sleep(0)  # let the loop run between full batches
                else:
                    await wake.wait()
        finally:
            wake.close()
