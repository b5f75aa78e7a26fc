"""Child process of test_pydantic_ai_resume: a PydanticAIHost on a SqliteLog, killed mid-stream.

``python crash_child.py PATH``: turn 1 ("first question") completes; turn 2 ("second
question") streams one chunk, prints ``STREAMING`` and waits to be killed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.models.function import FunctionModel

from inbox_core import create_user_message
from inbox_core.integrations.pydantic_ai import PydanticAIHost
from inbox_core.shell import LoopAgent, SqliteLog


async def provider(messages: list[Any], info: Any) -> AsyncIterator[str]:
    if len(messages) == 1:
        yield "first answer"
        return
    yield "second ans"
    print("STREAMING", flush=True)
    await asyncio.Event().wait()  # killed here


async def main(path: str) -> None:
    host = PydanticAIHost(FunctionModel(stream_function=provider), instructions="Be brief.")
    agent = LoopAgent(host, log=SqliteLog(path))
    agent.followup(create_user_message("first question"))
    await agent.when_idle()
    agent.followup(create_user_message("second question"))
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
