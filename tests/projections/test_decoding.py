"""The projections' own decoding: a StatusWrite's status is not decoded, still checked."""

from __future__ import annotations

import asyncio
import re

import pytest

from events.codec import DecodeError, encode
from projections import decoding
from projections.file_source import FileSource
from projections.rebuild import rebuild
from projections.store import PART, Store
from tests.projections.helpers import decided_examples, write_events


def test_an_event_decoded_for_the_projections_encodes_to_its_bytes():
    """What the live stream sends of an event whose bytes it cannot send as they are."""
    events = decided_examples()
    assert any(type(event).__name__ == "StatusWrite" for event in events)
    for event in events:
        raw = encode(event)
        decoded = decoding.decode_event(raw)
        assert type(decoded).__name__ == type(event).__name__
        assert encode(decoded) == raw


def test_a_rebuild_from_a_file_stops_at_a_malformed_status_naming_its_line(tmp_path):
    """The line is decoded as its part is sent to the writer process, parts ahead of the
    one folded: the error is still the file's line, not the writer's failure."""
    examples = decided_examples()
    path = write_events(tmp_path / "log.jsonl", examples * (3 * PART // len(examples) + 1))
    lines = path.read_bytes().splitlines()
    bad = [n for n, line in enumerate(lines) if b'"type":"StatusWrite"' in line][-3]
    assert bad > 2 * PART
    lines[bad] = lines[bad].replace(b'"status":{', b'"status":{"phase":}', 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    store = Store(tmp_path / "projections.sqlite", durable=False)
    try:
        expected = rf"^{re.escape(str(path))}:{bad + 1}: JSON is malformed"
        with pytest.raises(DecodeError, match=expected):
            asyncio.run(rebuild(store, FileSource(path, batch_size=10 * PART)))
    finally:
        store.close()
