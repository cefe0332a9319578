"""Go `time.Duration` strings ("300ms", "1m30s", "5m"), as `metav1.Duration` uses them.

Policies carry `timeout` and the job status carries `runningDuration` in this format.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; ValueError names what is wrong."""
    body = text.strip()
    sign = 1.0
    if body[:1] in "+-" and body:
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}: empty")
    position, total = 0, 0.0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(body):
        raise ValueError(
            f"invalid duration {text!r}: expected numbers with units ns, us, ms, s, m or h, "
            "as in 30s, 5m or 1h30m"
        )
    return sign * total


#: below a second Go's String() counts in ms, µs or ns: (nanoseconds per unit, unit)
_SMALL_UNITS = ((1_000_000, "ms"), (1_000, "µs"), (1, "ns"))


def format_duration(seconds: float) -> str:
    """A Go-style duration string for `seconds` ("1h2m3.5s", "500ms"), as Go's String()
    prints."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    remaining = abs(seconds)
    if remaining < 1:
        nanoseconds = round(remaining * 1e9)
        if nanoseconds == 0:
            return "0s"
        for size, unit in _SMALL_UNITS:
            if nanoseconds >= size or size == 1:
                amount = f"{nanoseconds / size:.9f}".rstrip("0").rstrip(".")
                return f"{sign}{amount}{unit}"
    hours, remaining = divmod(remaining, 3600.0)
    minutes, remaining = divmod(remaining, 60.0)
    text = f"{remaining:.9f}".rstrip("0").rstrip(".") + "s"
    if minutes or hours:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return sign + text
