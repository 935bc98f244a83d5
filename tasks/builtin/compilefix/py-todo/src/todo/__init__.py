"""A tiny to-do list kept in a tab-separated text file."""

from todo.store import Item, Store

__all__ = ["Item", "Store"]
