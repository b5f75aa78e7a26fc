"""inbox_core.integrations: hosts for model frameworks, each behind its own optional extra.

- ``inbox_core.integrations.pydantic_ai``: ``PydanticAIHost``, a ``Host`` for any
  pydantic-ai model (``pip install -e '.[pydantic-ai]'`` from the checkout).

Importing this package imports no framework; each module imports only its own.
"""
