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
        "period) after the old leader's last renewal; each replica makes one Lease call per "
        "retry period. A restart under the same identity takes the Lease back at once.",
    )
    env = os.environ.get
    group.add_argument(
        "--lease-duration",
        type=float,
        metavar="SECONDS",
        default=env("LAVALOG_LEASE_DURATION", str(_DEFAULT.duration)),
        help="how long a claim lasts without renewal (env LAVALOG_LEASE_DURATION, "
        f"default {_DEFAULT.duration:g})",
    )
    group.add_argument(
        "--lease-renew-deadline",
        type=float,
        metavar="SECONDS",
        default=env("LAVALOG_LEASE_RENEW_DEADLINE"),
        help="the leader steps down when it could not renew for this long; shorter than the "
        "duration (env LAVALOG_LEASE_RENEW_DEADLINE, default 2/3 of the duration)",
    )
    group.add_argument(
        "--lease-retry-period",
        type=float,
        metavar="SECONDS",
        default=env("LAVALOG_LEASE_RETRY_PERIOD"),
        help="how often the leader renews and a standby tries; under the deadline / 1.2 "
        "(env LAVALOG_LEASE_RETRY_PERIOD, default 1/3 of the duration)",
    )


def lease_timing(args: argparse.Namespace) -> LeaseTiming:
    """The options as one `LeaseTiming`; ValueError naming the flag for a bad value."""
    return LeaseTiming.scaled(
        args.lease_duration,
        renew_deadline=args.lease_renew_deadline,
        retry_period=args.lease_retry_period,
    )
