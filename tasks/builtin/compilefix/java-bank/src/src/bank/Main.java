package bank;

/** Opens two accounts, moves money between them and prints a statement. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        Bank bank = new Bank();
        bank.open("A-1", "Ada").deposit(120_00);
        bank.open("B-2", "Bob").deposit(15_50);
        try {
            bank.transfer("A-1", "B-2", 40_25);
            bank.transfer("B-2", "A-1", 500_00);
        } catch (InsufficientFundsException e) {
            System.out.println("refused: " + e.getMessage());
        }
        for (Account a : bank.accounts()) {
            System.out.printf("%-4s %-6s %10s%n", a.id(), a.owner(), Bank.format(a.balanceCents()));
        }
        System.out.println("total " + Bank.format(bank.totalCents()));
        bank.log().forEach(line -> System.out.println("log: " + line));
    }
}
