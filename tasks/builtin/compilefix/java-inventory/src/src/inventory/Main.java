package inventory;

/** Registers a few items, replays receipts and shipments and prints a report. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        Inventory inv = new Inventory();
        inv.register(new Item("BOLT-M6", "M6 hex bolt", 12, 200));
        inv.register(new Item("NUT-M6", "M6 nut", 4, 200));
        inv.register(new Item("WASH-6", "6 mm washer", 2, 100));

        inv.receive("BOLT-M6", 500);
        inv.receive("NUT-M6", 250);
        inv.receive("WASH-6", 80);
        if (!inv.ship("BOLT-M6", 350)) {
            System.out.println("short: BOLT-M6");
        }
        if (!inv.ship("NUT-M6", 300)) {
            System.out.println("short: NUT-M6");
        }

        System.out.printf("stock value: %d.%02d%n", inv.valueCents() / 100, inv.valueCents() % 100);
        for (Item item : inv.belowReorderLevel()) {
            System.out.printf("reorder %s (%s): %d on hand%n", item.sku(), item.description(), inv.quantity(item.sku()));
        }
    }
}
