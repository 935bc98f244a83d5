package bank;

/** A bank account whose balance is kept in cents. */
public final class Account {
    private final String id;
    private final String owner;
    private long balanceCents;

    public Account(String id, String owner) {
        this.id = id;
        this.owner = owner;
    }

    public String id() {
        return id;
    }

    public String owner() {
        return owner;
    }

    public long balanceCents() {
        return balanceCents;
    }

    public void deposit(long cents) {
        if (cents <= 0) {
            throw new IllegalArgumentException("deposit must be positive: " + cents);
        }
        balanceCents += cents;
    }

    /** Withdraws cents; throws InsufficientFundsException when the balance is too low. */
    public void withdraw(long cents) throws InsufficientFundsException {
        if (cents <= 0) {
            throw new IllegalArgumentException("withdrawal must be positive: " + cents);
        }
        if (cents > balanceCents) {
            throw new InsufficientFundsException(id, cents, balanceCents);
        }
        balanceCents -= cents;
    }
}
