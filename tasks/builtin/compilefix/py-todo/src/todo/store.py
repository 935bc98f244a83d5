"""The to-do items and their file format: one item per line,
``done<TAB>priority<TAB>title``."""

from dataclasses import dataclass


@dataclass
class Item:
    title: str
    priority: int = 2
    done: bool = False

    def to_line(self):
        return f"{int(self.done)}\t{self.priority}\t{self.title}"

    @classmethod
    def from_line(cls, line):
        done, priority, title = line.rstrip("\n").split("\t", 2)
        return cls(title=title, priority=int(priority), done=done == "1")


class Store:
    """The items of a list, in insertion order."""

    def __init__(self, items=None):
        self.items = list(items or [])

    def add(self, title, priority=2):
        if not title.strip():
            raise ValueError("empty title")
        if priority not in (1, 2, 3):
            raise ValueError(f"priority must be 1, 2 or 3, not {priority}")
        item = Item(title.strip(), priority)
        self.items.append(item)
        return len(self.items)

    def complete(self, number)
        if not 1 <= number <= len(self.items):
            raise IndexError(f"no item {number}")
        self.items[number - 1].done = True

    def pending(self):
        """The open items, most urgent (lowest priority number) first."""
        open_items = [(i + 1, it) for i, it in enumerate(self.items) if not it.done]
        return sorted(open_items, key=lambda pair: (pair[1].priority, pair[0]))

    def dumps(self):
        return "".join(item.to_line() + "\n" for item in self.items)

    @classmethod
    def loads(cls, text):
        return cls(Item.from_line(line) for line in text.splitlines() if line.strip())
