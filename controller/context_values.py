"""A context variable set for the length of a block.

The actuator passes what a call is made for (its priority, the decision's timing) down
to the calls a block makes, and to the tasks it starts, through context variables
rather than through every signature in between.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def set_for_block(variable: contextvars.ContextVar[T], value: T) -> Iterator[None]:
    """`variable` is `value` in this block (this task and the tasks it starts), and what it
    was before once the block ends."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)
