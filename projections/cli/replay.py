"""`lavalog replay FILE --serve`: the projections API and web UI over a replayed recording.

`controller.commands.replay` recomputes the recording's decisions with the state
machine; this module serves the log that makes (each observation followed by its
decisions), the same UI as `lavalog projections serve`. It lives with the projections
because they build on the controller (the decider, the Kafka settings), not the other
way round: the controller's command hands the log over by module name, as its command
table does.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from controller.logs import configure_logging
from events.codec import LogEvent
from projections.service.app import serve
from projections.service.database import SqliteLocation
from projections.service.memory_source import MemorySource
from projections.service.shutdown import until_signalled
from projections.service.store import Store, store_path


def serve_replayed(
    events: Sequence[LogEvent],
    *,
    name: str,
    state_dir: Path | None,
    host: str,
    port: int,
) -> int:
    """Load `events` into a store (in `state_dir`, else a temporary one, removed on exit)
    and serve it until SIGTERM or SIGINT; `name` says where the events came from."""
    configure_logging()
    with _directory(state_dir) as directory:
        store = store_path(directory)
        asyncio.run(
            until_signalled(
                serve(
                    location=SqliteLocation(store),
                    open_store=lambda: Store(store),
                    source=MemorySource(events, name=f"replay:{name}"),
                    host=host,
                    port=port,
                    started=lambda url: print(
                        f"replayed {name}: timelines at {url}   (Ctrl-C to stop)", flush=True
                    ),
                )
            )
        )
    return 0


@contextmanager
def _directory(state_dir: Path | None) -> Iterator[Path]:
    if state_dir is not None:
        yield state_dir
        return
    with tempfile.TemporaryDirectory(prefix="lavalog-replay-") as scratch:
        yield Path(scratch)
