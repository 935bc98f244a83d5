"""Plain-text rendering of an invoice."""

from invoice.model import TAX_RATES


def money(cents):
    sign = "-" if cents < 0 else ""
     cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def render(inv, width=48):
    out = [f"INVOICE {inv.number}".center(width), f"Bill to: {inv.customer}", "-" * width]
    for line in inv.lines:
        label = f"{line.quantity} x {line.description}"
        out.append(f"{label:<{width - 12}}{money(line.net()):>12}")
    out.append("-" * width)
    out.append(f"{'Net':<{width - 12}}{money(inv.net()):>12}")
    for rate, cents in sorted(inv.tax_by_rate().items()):
        label = f"Tax {rate} ({TAX_RATES[rate]}%)"
        out.append(f"{label:<{width - 12}}{money(cents):>12}")
    out.append(f"{'Total':<{width - 12}}{money(inv.total()):>12}")
    return "\n".join(out) + "\n"
