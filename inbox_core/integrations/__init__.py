"""inbox_core.integrations: hosts for model frameworks, each behind its own optional extra.

- ``inbox_core.integrations.pydantic_ai``: ``PydanticAIHost``, a ``Host`` for any
  pydantic-ai model (``pip install -e '.[pydantic-ai]'`` from the checkout).
- ``inbox_core.integrations.openai_agents``: ``OpenAIAgentsHost``, an OpenAI Agents SDK
  ``Agent`` (``'.[openai-agents]'``).
- ``inbox_core.integrations.anthropic``: ``AnthropicHost``, Anthropic's Messages API
  tool-use loop (``'.[anthropic]'``).

What the model hosts share (failure codes, racing the abort signal, live output, fitted
records) is ``_model_host``. Importing this package imports no framework; each module
imports only its own.
"""
