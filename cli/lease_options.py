"""The leader Lease's timing options of `lavalog run`: how soon a replacement leads,
against how many Lease calls each replica makes (docs/watchers.md)."""

from __future__ import annotations

import argparse
import os

from lavalog.controller.watchers.core.lease import LeaseTiming

_DEFAULT = LeaseTiming()


def add_lease_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "leader Lease",
        "A replacement under a new identity leads one lease duration (plus up to one retry "
        "period) after it first sees the old leader's last renewal; each replica makes one "
        "Lease call per retry period. A restart under the same identity takes the Lease back "
        "at once (docs/install.md, Failover).",
    )
    for flag, variable, default, text in _OPTIONS:
        group.add_argument(
            flag,
            type=float,
            metavar="SECONDS",
            default=os.environ.get(variable, default),
            help=f"{text} (env {variable}" + (f", default {default})" if default else ")"),
        )


#: flag, its variable, its default (None: in proportion to the duration), what it does
_OPTIONS = (
    (
        "--lease-duration",
        "LAVALOG_LEASE_DURATION",
        f"{_DEFAULT.duration:g}",
        "how long a claim lasts without renewal",
    ),
    (
        "--lease-renew-deadline",
        "LAVALOG_LEASE_RENEW_DEADLINE",
        None,
        "the leader steps down when it could not renew for this long; shorter than the "
        "duration (default 2/3 of it)",
    ),
    (
        "--lease-retry-period",
        "LAVALOG_LEASE_RETRY_PERIOD",
        None,
        "how often the leader renews and a standby tries; under the deadline / 1.2 "
        "(default 1/3 of the duration)",
    ),
)


def lease_timing(args: argparse.Namespace) -> LeaseTiming:
    """The options as one `LeaseTiming`; ValueError naming the flag for a bad value."""
    return LeaseTiming.scaled(
        args.lease_duration,
        renew_deadline=args.lease_renew_deadline,
        retry_period=args.lease_retry_period,
    )
