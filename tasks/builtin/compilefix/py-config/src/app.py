"""Prints the effective settings: python3 app.py [FILE]."""

import sys

from settings import load


def main(argv):
    settings = load(argv[0] if argv else "app.conf")
    width = max(len(k) for k in settings)
    for key in sorted(settings):
        print(f"{key:<{width}} = {settings[key]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
