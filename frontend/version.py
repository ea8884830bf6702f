"""jx's version: a module of its own, importing nothing, so every layer (the
runtime included) can name the version without loading the package's API."""
__version__ = "0.1.0"
