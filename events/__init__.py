"""lavalog events package."""
