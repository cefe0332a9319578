"""`lavalog schema`: print the JSON Schema of the public topics."""

from __future__ import annotations

import argparse
import json

from lavalog.events.schema import topic_schemas


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topic",
        choices=("lavalog.observed", "lavalog.decisions"),
        help="print only this topic's schema",
    )


def run(args: argparse.Namespace) -> int:
    schemas = topic_schemas()
    document = schemas["topics"][args.topic] if args.topic else schemas
    print(json.dumps(document, indent=2, sort_keys=True))
    return 0
