"""Parsers of on-disk formats (pure: text or bytes in, models out)."""
