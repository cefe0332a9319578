"""lavalog simulator package."""
