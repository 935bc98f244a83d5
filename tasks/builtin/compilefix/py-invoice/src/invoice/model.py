"""Invoice lines and totals. Amounts are integer cents."""

from dataclasses import dataclass, field

TAX_RATES = {"standard": 20, "reduced": 5, "zero": 0}  # percent


@dataclass
class Line:
    description: str
    quantity: int
    unit_cents: int
    tax: str = "standard"

    def net(self):
        return self.quantity * self.unit_cents

    def tax_cents(self):
        # Round half up to the cent.
        return (self.net() * TAX_RATES[self.tax] + 50) // 100


@dataclass
class Invoice:
    number: str
    customer: str
    lines: list = field(default_factory=list)

    def add(self, description, quantity, unit_cents, tax="standard"):
        if tax not in TAX_RATES:
            raise ValueError(f"unknown tax rate {tax!r}")
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.lines.append(Line(description, quantity, unit_cents, tax))

    def net(self):
        return sum(line.net() for line in self.lines)

    def tax_by_rate(self):
        totals = {}
        for line in self.lines:
            if line.tax_cents() == 0:
                continue
            totals[line.tax] = totals.get(line.tax, 0) + line.tax_cents()
        return totals

    def total(self):
        return self.net() + sum(self.tax_by_rate().values())
