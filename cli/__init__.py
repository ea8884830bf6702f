"""The `jx` command line."""
