"""lavalog controller package."""
