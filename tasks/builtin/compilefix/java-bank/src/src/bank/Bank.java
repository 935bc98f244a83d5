package bank;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Accounts by id, with transfers and an audit log. */
public final class Bank {
    private final Map<String, Account> accounts = new LinkedHashMap<>();
    private final List<String> log = new ArrayList<>();

    public Account open(String id, String owner) {
        if (accounts.containsKey(id)) {
            throw new IllegalArgumentException("duplicate account " + id);
        }
        Account a = new Account(id, owner);
        accounts.put(id, a);
        log.add("open " + id + " for " + owner);
        return a;
    }

    public Account get(String id) {
        Account a = accounts.get(id);
        if (a == null) {
            throw new IllegalArgumentException("no account " + id);
        }
        return a;
    }

    /** Moves cents from one account to another, all or nothing. */
    public void transfer(String from, String to, long cents) throws InsufficientFundsException {
        Account src = get(from);
        Account dst = get(to);
        src.withdraw(cents);
        dst.deposit(cents);
        log.add("transfer " + format(cents) + " " + from + " -> " + to);
    }

    public long totalCents() {
        long total = 0;
        for (Account a : accounts.values()) {
            total += a.getBalance();
        }
        return total;
    }

    public List<String> log() {
        return List.copyOf(log);
    }

    public Iterable<Account> accounts() {
        return accounts.values();
    }

    /** Formats cents as units with two decimals: 12345 -> "123.45". */
    public static String format(long cents) {
        String sign = cents < 0 ? "-" : "";
        long abs = Math.abs(cents);
        return String.format("%s%d.%02d", sign, abs / 100, abs % 100);
    }
}
