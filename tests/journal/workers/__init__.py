"""Processes the journal tests start: writers killed mid-commit, concurrent writers, engines in other processes."""
