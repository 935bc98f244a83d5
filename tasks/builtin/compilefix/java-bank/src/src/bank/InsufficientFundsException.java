package bank;

/** Thrown when a withdrawal exceeds an account's balance. */
public class InsufficientFundsException extends Exception {
    private static final long serialVersionUID = 1L;

    public InsufficientFundsException(String account, long wanted, long available) {
        super(String.format("account %s: cannot withdraw %s, balance is %s",
                account, Bank.format(wanted), Bank.format(available)));
    }
}
