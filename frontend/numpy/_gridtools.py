"""(filled in by its change)"""
from __future__ import annotations

__all__: list = []
