"""Command line: ``python3 -m todo.cli FILE add TITLE [PRIORITY] | done N | list``."""

import os
import sys

from todo.store import Store


def load(path):
    if not os.path.exists(path):
        return Store()
    with open(path, encoding="utf-8") as f:
        return Store.loads(f.read())


def save(path, store):
    with open(path, "w", encoding="utf-8") as f:
        f.write(store.dumps())


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, command, args = argv[0], argv[1], argv[2:]
    store = load(path)
    if command == "add" and args:
        priority = int(args[1]) if len(args) > 1 else 2
        print(f"added #{store.add(args[0], priority)}")
        save(path, store)
    elif command == "done" and len(args) == 1:
        store.complete(int(args[0]))
        save(path, store)
    elif command == "list":
        for number, item in store.pending():
            print(f"{number:3d} [{item.priority}] {item.title}")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
