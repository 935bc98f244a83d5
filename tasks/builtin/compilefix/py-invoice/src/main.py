"""Prints a sample invoice."""

from invoice.model import Invoice
from invoice.render import render


def main():
    inv = Invoice("2024-017", "Example Ltd")
    inv.add("Consulting hours", 6, 85_00)
    inv.add("Printed manuals", 3, 12_50, tax="reduced")
    inv.add("Shipping", 1, 9_90, tax="zero")
    print(render(inv), end="")


if __name__ == "__main__":
    main()
