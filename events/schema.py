"""JSON Schema of the public topics, for the services that read them."""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import SCHEMA_VERSION, AnyObservation
from lavalog.events.topics import DECISIONS, OBSERVED


def topic_schemas() -> dict[str, Any]:
    """`{topic: JSON Schema}` for `lavalog.observed` and `lavalog.decisions`."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "topics": {
            OBSERVED: msgspec.json.schema(AnyObservation),
            DECISIONS: msgspec.json.schema(AnyDecision),
        },
    }
