"""How a store's sources decode: a StatusWrite's status left undecoded but checked, a
file's lines read in blocks and still named by their numbers."""

from __future__ import annotations

import asyncio
import re

import pytest

from lavalog.events.codec import DecodeError, encode
from lavalog.projections.core import decoding
from lavalog.projections.service.rebuild import rebuild
from lavalog.projections.service.runner import Runner
from lavalog.projections.service.sources.file import FileSource, file_source, read_file
from lavalog.projections.service.store.writer import PART, Store, load
from tests.projections.helpers import decided_examples, snapshot, write_events


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


def test_a_file_source_leaves_out_blank_and_comment_lines_and_names_lines_by_number(tmp_path):
    lines = [b"# a recording"]
    for n, event in enumerate(decided_examples()[:61]):
        lines.append(encode(event))
        if n % 5 == 4:
            lines += [b"", b"  # a note"]  # the last line (60) is an event
        if n == 30:  # more than a batch of lines without an event
            lines += [b""] * 20
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    store = Store(tmp_path / "file.sqlite")
    asyncio.run(Runner(store, FileSource(path, batch_size=16)).run())
    expected = Store(tmp_path / "expected.sqlite")
    load(expected, read_file(path))
    assert snapshot(store.location) == snapshot(expected.location)
    assert store.positions(file_source(path)) == {0: len(lines)}
    store.close()
    expected.close()

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join([*lines, b"", b"# next", b'{"type": "Nope"}']) + b"\n")
    failing = Store(tmp_path / "bad.sqlite")
    with pytest.raises(DecodeError, match=rf"^{re.escape(str(bad))}:{len(lines) + 3}: "):
        asyncio.run(Runner(failing, FileSource(bad, batch_size=16)).run())
    failing.close()
