"""The journal's data files: how versions are written to Parquet and read back.

``storage`` (where files live; reading a file's versions and resolving them), ``lookup_cache`` (decoded row groups
kept for key lookups), ``page_source`` (the page sources that read a split's files on an executor or the driver) and
``sink`` (the merge sink: one new immutable Parquet file per writer task). They build on ``.._handles`` only; the
catalog, commits and scan planning in the package above build on them.
"""
