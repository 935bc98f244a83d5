package inventory;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/** Quantities on hand per item, with receipts, shipments and reorder reports. */
public final class Inventory {
    private final Map<String, Item> items = new TreeMap<>();
    private final TreeMap<String, Integer> onHand = new TreeMap<>();

    public void register(Item item) {
        items.put(item.sku(), item);
        onHand.putIfAbsent(item.sku(), 0);
    }

    public void receive(String sku, int quantity) {
        require(sku);
        if (quantity <= 0) {
            throw new IllegalArgumentException("quantity must be positive");
        }
        onHand.merge(sku, quantity, Integer::sum);
    }

    /** Ships quantity units of sku; returns false (and ships nothing) when stock is short. */
    public boolean ship(String sku, int quantity) {
        require(sku);
        int have = onHand.get(sku);
        if (quantity <= 0 || quantity > have) {
            return false;
        }
        onHand.put(sku, have - quantity);
        return true;
    }

    public int quantity(String sku) {
        require(sku);
        return onHand.get(sku);
    }

    /** The items at or below their reorder level, by sku. */
    public List<Item> belowReorderLevel() {
        List<Item> out = new ArrayList<>();
        for (Item item : items.values()) {
            if (onHand.get(item.sku()) <= item.reorderLevel()) {
                out.add(item);
            }
        }
        return out;
    }

    /** The value of the stock on hand, in cents. */
    public long valueCents() {
        long total = 0;
        for (Item item : items.values()) {
            total += item.unitPriceCents() * onHand.get(item.sku());
        }
        return total;
    }

    private void require(String sku) {
        if (!items.containsKey(sku)) {
            throw new IllegalArgumentException("unknown sku " + sku);
        }
    }
}
