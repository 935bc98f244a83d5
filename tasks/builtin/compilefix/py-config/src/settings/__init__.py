"""Application settings: defaults, a key=value file and environment overrides."""

from settings.loader import load

__all__ = ["load"]
