"""The runtime's version: jx's (tests/test_runtime_standalone.py keeps them equal),
read by runtime/pyproject.toml when the runtime is built as its own distribution."""
__version__ = "0.1.0"
