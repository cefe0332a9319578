"""lavalog's version as installed: printed by `--version`, sent in every User-Agent."""

from __future__ import annotations

import importlib.metadata


def version() -> str:
    try:
        return importlib.metadata.version("lavalog")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "unknown"
