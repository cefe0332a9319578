"""lavalog projections package."""
