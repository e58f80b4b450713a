"""Trino's semantics of values on every path: arithmetic errors, bounded and CHAR strings, date arithmetic, time zones."""
