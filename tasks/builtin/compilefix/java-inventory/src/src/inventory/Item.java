package inventory;

/** A stock-keeping unit: its code, description, unit price and reorder level. */
public record Item(String sku, String description, long unitPriceCents, int reorderLevel) {
    public Item {
        if (sku == null || sku.isBlank()) {
            throw new IllegalArgumentException("sku must not be blank");
        }
        if (unitPriceCents < 0 || reorderLevel < 0) {
            throw new IllegalArgumentException("negative price or reorder level for " + sku);
        }
    }
}
