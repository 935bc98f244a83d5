"""Source of murphy's built-in task set.

Running this script prints tasks.jsonl (one topics.Task JSON object per
line) to stdout; `go generate ./tasks/builtin` rewrites the file and the
package tests fail when the file and this source disagree. Prompts are built
here from the statement and the visible tests so that examples always match
the tests. Expected values are written by hand; the package tests run every
reference solution against them.
"""

import json
import sys
import textwrap

SOURCE = "murphy-builtin"


def code(text):
    return textwrap.dedent(text).lstrip("\n")


def function_task(slug, signature, doc, entry, reference, visible, hidden):
    """A python-function task. visible/hidden are lists of (args, expected)
    where args is a tuple of Python values and expected a Python value."""
    tests = []
    examples = []
    for hidden_flag, cases in ((False, visible), (True, hidden)):
        for i, (args, expected) in enumerate(cases, 1):
            arg_text = ", ".join(repr(a) for a in args)
            tests.append({
                "name": ("hidden %d" if hidden_flag else "visible %d") % i,
                "args": arg_text,
                "expected": repr(expected),
                "hidden": hidden_flag,
            })
            if not hidden_flag:
                examples.append("    >>> %s(%s)\n    %r\n" % (entry, arg_text, expected))
    body = textwrap.indent(code(doc).rstrip("\n"), "    ")
    prompt = signature + "\n" + '    """' + body.lstrip() + "\n\n" + "".join(examples) + '    """\n'
    return {
        "schema_version": 1,
        "task_id": "murphy/" + slug,
        "kind": "python-function",
        "source": SOURCE,
        "prompt": prompt,
        "entry_point": entry,
        "reference": code(reference),
        "tests": tests,
    }


def stdio_task(slug, statement, reference, visible, hidden, float_tolerance=0.0):
    """A stdio task. visible/hidden are lists of (stdin, expected stdout)."""
    tests = []
    for hidden_flag, cases in ((False, visible), (True, hidden)):
        for i, (stdin, expected) in enumerate(cases, 1):
            tests.append({
                "name": ("hidden %d" if hidden_flag else "visible %d") % i,
                "stdin": stdin,
                "expected": expected,
                "hidden": hidden_flag,
            })
    examples = []
    for i, (stdin, expected) in enumerate(visible, 1):
        examples.append("Example %d\nInput:\n%s\nOutput:\n%s\n" % (
            i, stdin.rstrip("\n") or "(empty)", expected.rstrip("\n") or "(empty)"))
    prompt = (code(statement).rstrip("\n") + "\n\n" + "\n".join(examples) +
              "\nWrite a complete Python 3 program that reads standard input and writes standard output.\n")
    task = {
        "schema_version": 1,
        "task_id": "murphy/" + slug,
        "kind": "stdio",
        "source": SOURCE,
        "prompt": prompt,
        "reference": code(reference),
        "tests": tests,
    }
    if float_tolerance:
        task["float_tolerance"] = float_tolerance
    return task


TASKS = []

# ---------------------------------------------------------------- functions

TASKS.append(function_task(
    "longest-plateau",
    "def longest_plateau(values: list[int]) -> int:",
    """
    Return the length of the longest run of equal adjacent values in
    `values`. An empty list has no run at all, so the answer is 0.
    """,
    "longest_plateau",
    """
    def longest_plateau(values):
        best = 0
        run = 0
        for i, v in enumerate(values):
            if i > 0 and v == values[i - 1]:
                run += 1
            else:
                best = max(best, run)
                run = 1
        return max(best, run)
    """,
    [(([1, 1, 2, 2, 2, 1],), 3), (([5],), 1), (([],), 0)],
    [(([7, 7, 7, 7],), 4), (([1, 2, 3],), 1), (([3, 3, 1, 3, 3, 3],), 3),
     (([0, 0, -1, -1, -1, -1, 2],), 4)],
))

TASKS.append(function_task(
    "second-largest-distinct",
    "def second_largest_distinct(nums: list[int]) -> int | None:",
    """
    Return the second largest *distinct* value in `nums`, or None when the
    list holds fewer than two distinct values. Values may be negative.
    """,
    "second_largest_distinct",
    """
    def second_largest_distinct(nums):
        distinct = sorted(set(nums), reverse=True)
        return distinct[1] if len(distinct) >= 2 else None
    """,
    [(([3, 1, 4, 1, 5],), 4), (([2, 2],), None), (([10, 20],), 10)],
    [(([5, 5, 3],), 3), (([-1, -2, -3],), -2), (([7],), None), (([],), None),
     (([1, 1, 1, 2, 2],), 1)],
))

TASKS.append(function_task(
    "range-summary",
    "def summarize_ranges(nums: list[int]) -> str:",
    """
    `nums` is sorted and strictly increasing. Describe it as a comma
    separated string: every maximal run of at least three consecutive
    integers is written "first..last"; numbers in shorter runs are written
    one by one. An empty list gives the empty string.
    """,
    "summarize_ranges",
    """
    def summarize_ranges(nums):
        parts = []
        i = 0
        while i < len(nums):
            j = i
            while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
                j += 1
            if j - i + 1 >= 3:
                parts.append(f"{nums[i]}..{nums[j]}")
            else:
                parts.extend(str(x) for x in nums[i:j + 1])
            i = j + 1
        return ",".join(parts)
    """,
    [(([1, 2, 3, 5, 7, 8],), "1..3,5,7,8"), (([],), ""), (([4],), "4")],
    [(([-3, -2, -1, 0, 2],), "-3..0,2"), (([1, 2, 3, 4, 5],), "1..5"), (([1, 3, 5],), "1,3,5"),
     (([10, 11, 13, 14, 15, 16, 20, 21, 22],), "10,11,13..16,20..22")],
))

TASKS.append(function_task(
    "brackets-balanced",
    "def brackets_balanced(s: str) -> bool:",
    """
    Return True when the brackets (), [] and {} in `s` are balanced and
    properly nested. Every other character is ignored.
    """,
    "brackets_balanced",
    """
    def brackets_balanced(s):
        pairs = {")": "(", "]": "[", "}": "{"}
        stack = []
        for ch in s:
            if ch in "([{":
                stack.append(ch)
            elif ch in pairs:
                if not stack or stack.pop() != pairs[ch]:
                    return False
        return not stack
    """,
    [(("(a[b]{c})",), True), (("(]",), False), (("",), True)],
    [(("(((",), False), (("())",), False), (("{[()()]}x",), True), (("([)]",), False),
     (("no brackets",), True)],
))

TASKS.append(function_task(
    "split-even",
    "def split_even(items: list, k: int) -> list[list]:",
    """
    Split `items` into exactly `k` (k >= 1) consecutive chunks, keeping the
    order, so that chunk sizes differ by at most one and the larger chunks
    come first. Chunks may be empty when there are fewer items than k.
    """,
    "split_even",
    """
    def split_even(items, k):
        base, extra = divmod(len(items), k)
        chunks = []
        start = 0
        for i in range(k):
            size = base + (1 if i < extra else 0)
            chunks.append(items[start:start + size])
            start += size
        return chunks
    """,
    [(([1, 2, 3, 4, 5, 6, 7], 3), [[1, 2, 3], [4, 5], [6, 7]]),
     (([1, 2, 3, 4], 2), [[1, 2], [3, 4]]),
     ((["a"], 3), [["a"], [], []])],
    [(([], 2), [[], []]),
     ((list(range(1, 11)), 4), [[1, 2, 3], [4, 5, 6], [7, 8], [9, 10]]),
     (([1, 2, 3], 1), [[1, 2, 3]]),
     (([1, 2, 3, 4, 5], 5), [[1], [2], [3], [4], [5]]),
     ((list(range(1, 9)), 3), [[1, 2, 3], [4, 5, 6], [7, 8]])],
))

TASKS.append(function_task(
    "parse-duration",
    "def parse_duration(text: str) -> int:",
    """
    `text` is a duration made of one or more parts, each a non-negative
    integer followed by a unit: d (day), h (hour), m (minute) or s (second).
    Parts may be separated by spaces and numbers may have leading zeros or
    several digits. Return the total number of seconds.
    """,
    "parse_duration",
    r"""
    import re

    UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


    def parse_duration(text):
        total = 0
        for number, unit in re.findall(r"(\d+)\s*([dhms])", text):
            total += int(number) * UNIT_SECONDS[unit]
        return total
    """,
    [(("1h30m",), 5400), (("45s",), 45), (("2d 3h",), 183600)],
    [(("0s",), 0), (("1d1h1m1s",), 90061), (("90m",), 5400), (("12h 05m 7s",), 43507),
     (("100s 2m",), 220)],
))

TASKS.append(function_task(
    "count-islands-diagonal",
    "def count_islands(grid: list[str]) -> int:",
    """
    `grid` is a list of equal-length rows of '#' (land) and '.' (water).
    Two land cells belong to the same island when they touch horizontally,
    vertically or diagonally. Return the number of islands.
    """,
    "count_islands",
    """
    STEPS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


    def count_islands(grid):
        rows = len(grid)
        seen = set()
        count = 0
        for r in range(rows):
            for c in range(len(grid[r])):
                if grid[r][c] != "#" or (r, c) in seen:
                    continue
                count += 1
                seen.add((r, c))
                stack = [(r, c)]
                while stack:
                    y, x = stack.pop()
                    for dy, dx in STEPS:
                        ny, nx = y + dy, x + dx
                        if (0 <= ny < rows and 0 <= nx < len(grid[ny])
                                and grid[ny][nx] == "#" and (ny, nx) not in seen):
                            seen.add((ny, nx))
                            stack.append((ny, nx))
        return count
    """,
    [((["#..", ".#.", "..#"],), 1), ((["#.#", "...", "#.#"],), 4), (([],), 0)],
    [((["##..", "#...", "...#", "..##"],), 2), ((["#.#.#", ".#.#.", "#.#.#"],), 1),
     ((["....", "...."],), 0), (([".#", "#."],), 1), ((["###", "#.#", "###"],), 1),
     ((["#...#", ".....", "..#..", ".....", "#...#"],), 5)],
))

TASKS.append(function_task(
    "next-palindrome",
    "def next_palindrome(n: int) -> int:",
    """
    Return the smallest palindromic integer strictly greater than `n`
    (0 <= n <= 10**9). A palindromic integer reads the same forwards and
    backwards in decimal.
    """,
    "next_palindrome",
    """
    def next_palindrome(n):
        m = n + 1
        while str(m) != str(m)[::-1]:
            m += 1
        return m
    """,
    [((123,), 131), ((9,), 11), ((0,), 1)],
    [((121,), 131), ((99,), 101), ((808,), 818), ((999,), 1001), ((1991,), 2002),
     ((12345,), 12421), ((4,), 5)],
))

TASKS.append(function_task(
    "shift-letters",
    "def shift_letters(text: str, shift: int) -> str:",
    """
    Shift every ASCII letter of `text` by `shift` places in the alphabet,
    wrapping around from z to a, and keep its case. `shift` may be negative
    or larger than 26. Every other character stays as it is.
    """,
    "shift_letters",
    """
    def shift_letters(text, shift):
        out = []
        for ch in text:
            if "a" <= ch <= "z":
                out.append(chr((ord(ch) - ord("a") + shift) % 26 + ord("a")))
            elif "A" <= ch <= "Z":
                out.append(chr((ord(ch) - ord("A") + shift) % 26 + ord("A")))
            else:
                out.append(ch)
        return "".join(out)
    """,
    [(("abc", 1), "bcd"), (("xyz", 3), "abc"), (("Hello, World!", 5), "Mjqqt, Btwqi!")],
    [(("Zebra", -1), "Ydaqz"), (("abc", 52), "abc"), (("MiXeD 123", 27), "NjYfE 123"),
     (("", 7), ""), (("\u00c4pfelZ", 1), "\u00c4qgfmA")],
))

TASKS.append(function_task(
    "settle-ledger",
    "def settle_ledger(events: list[str]) -> list[list]:",
    """
    Replay bank events in order and return the final balances as a list of
    [name, balance] pairs sorted by name. Events are:
      "open NAME"            opens an account with balance 0 (opening an
                             existing account again does nothing);
      "deposit NAME AMOUNT"  adds AMOUNT;
      "withdraw NAME AMOUNT" subtracts AMOUNT;
      "transfer FROM TO AMOUNT" moves AMOUNT from FROM to TO.
    AMOUNT is a positive integer. An event that names an account that is
    not open, or that would make a balance negative, is ignored.
    """,
    "settle_ledger",
    """
    def settle_ledger(events):
        balances = {}
        for event in events:
            parts = event.split()
            op = parts[0]
            if op == "open":
                balances.setdefault(parts[1], 0)
            elif op == "deposit":
                name, amount = parts[1], int(parts[2])
                if name in balances:
                    balances[name] += amount
            elif op == "withdraw":
                name, amount = parts[1], int(parts[2])
                if name in balances and balances[name] >= amount:
                    balances[name] -= amount
            elif op == "transfer":
                src, dst, amount = parts[1], parts[2], int(parts[3])
                if src in balances and dst in balances and balances[src] - amount >= 0:
                    balances[src] -= amount
                    balances[dst] += amount
        return [[name, balances[name]] for name in sorted(balances)]
    """,
    [((["open ann", "deposit ann 100", "withdraw ann 30"],), [["ann", 70]]),
     ((["open ann", "open bob", "deposit ann 50", "transfer ann bob 20"],), [["ann", 30], ["bob", 20]]),
     ((["deposit cat 10", "open cat"],), [["cat", 0]])],
    [((["open ann", "deposit ann 10", "withdraw ann 11"],), [["ann", 10]]),
     ((["open ann", "deposit ann 10", "withdraw ann 10"],), [["ann", 0]]),
     ((["open bob", "open ann", "deposit bob 5", "transfer bob ann 5", "transfer ann zed 1"],),
      [["ann", 5], ["bob", 0]]),
     ((["open ann", "deposit ann 40", "open ann", "transfer ann ann 10"],), [["ann", 40]]),
     (([],), [])],
))

TASKS.append(function_task(
    "fewest-coins",
    "def fewest_coins(amount: int, coins: list[int]) -> int:",
    """
    Return the fewest coins whose values add up to exactly `amount`, using
    any number of coins of each value in `coins` (distinct positive
    integers), or -1 when it cannot be done. An amount of 0 needs 0 coins.
    """,
    "fewest_coins",
    """
    def fewest_coins(amount, coins):
        best = [0] + [None] * amount
        for value in range(1, amount + 1):
            for coin in coins:
                if coin <= value and best[value - coin] is not None:
                    candidate = best[value - coin] + 1
                    if best[value] is None or candidate < best[value]:
                        best[value] = candidate
        return -1 if best[amount] is None else best[amount]
    """,
    [((11, [1, 2, 5]), 3), ((3, [2]), -1), ((0, [1]), 0)],
    [((6, [1, 3, 4]), 2), ((7, [2, 5]), 2), ((12, [5, 6, 9]), 2), ((30, [1, 10, 25]), 3),
     ((100, [7, 13]), 10)],
))

TASKS.append(function_task(
    "rotate-clockwise",
    "def rotate_clockwise(matrix: list[list[int]]) -> list[list[int]]:",
    """
    Return `matrix` (a rectangular list of rows, possibly not square, or an
    empty list) rotated a quarter turn clockwise, as a new list of rows.
    """,
    "rotate_clockwise",
    """
    def rotate_clockwise(matrix):
        if not matrix:
            return []
        rows, cols = len(matrix), len(matrix[0])
        return [[matrix[rows - 1 - r][c] for r in range(rows)] for c in range(cols)]
    """,
    [(([[1, 2], [3, 4]],), [[3, 1], [4, 2]]), (([[1, 2, 3]],), [[1], [2], [3]]), (([],), [])],
    [(([[1], [2], [3]],), [[3, 2, 1]]), (([[1, 2, 3], [4, 5, 6]],), [[4, 1], [5, 2], [6, 3]]),
     (([[1, 2, 3], [4, 5, 6], [7, 8, 9]],), [[7, 4, 1], [8, 5, 2], [9, 6, 3]]),
     (([[5]],), [[5]])],
))

TASKS.append(function_task(
    "weekday-after",
    "def weekday_after(day: str, offset: int) -> str:",
    """
    Days are written "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun".
    Return the day that comes `offset` days after `day`; a negative offset
    goes back in time.
    """,
    "weekday_after",
    """
    DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


    def weekday_after(day, offset):
        return DAYS[(DAYS.index(day) + offset) % 7]
    """,
    [(("Mon", 3), "Thu"), (("Sun", 1), "Mon"), (("Wed", 0), "Wed")],
    [(("Fri", -5), "Sun"), (("Tue", 700), "Tue"), (("Sat", -1), "Fri"), (("Thu", 10), "Sun")],
))

# -------------------------------------------------------------------- stdio

TASKS.append(stdio_task(
    "sum-of-evens",
    """
    The first line holds n (0 <= n <= 1000). The second line, present when
    n > 0, holds n integers. Print the sum of the even integers.
    """,
    """
    import sys


    def main():
        data = sys.stdin.read().split()
        n = int(data[0])
        values = [int(x) for x in data[1:1 + n]]
        print(sum(v for v in values if v % 2 == 0))


    main()
    """,
    [("5\n1 2 3 4 5\n", "6\n"), ("3\n7 9 11\n", "0\n"), ("4\n10 20 30 40\n", "100\n")],
    [("0\n", "0\n"), ("4\n-2 -3 -4 5\n", "-6\n"), ("1\n0\n", "0\n"), ("6\n100 1 1 1 1 2\n", "102\n")],
))

TASKS.append(stdio_task(
    "grade-histogram",
    """
    The first line holds n, followed by n integer scores between 0 and 100
    separated by whitespace. Grades are A for 90-100, B for 80-89, C for
    70-79, D for 60-69 and F below 60. Print five lines "A: k", "B: k",
    "C: k", "D: k", "F: k" in that order, where k counts the scores with that
    grade.
    """,
    """
    import sys


    def grade(score):
        if score >= 90:
            return "A"
        if score >= 80:
            return "B"
        if score >= 70:
            return "C"
        if score >= 60:
            return "D"
        return "F"


    def main():
        data = sys.stdin.read().split()
        n = int(data[0])
        counts = {g: 0 for g in "ABCDF"}
        for token in data[1:1 + n]:
            counts[grade(int(token))] += 1
        for g in "ABCDF":
            print(f"{g}: {counts[g]}")


    main()
    """,
    [("5\n95 85 75 65 55\n", "A: 1\nB: 1\nC: 1\nD: 1\nF: 1\n"),
     ("3\n100 100 0\n", "A: 2\nB: 0\nC: 0\nD: 0\nF: 1\n"),
     ("4\n89 79 69 59\n", "A: 0\nB: 1\nC: 1\nD: 1\nF: 1\n")],
    [("4\n90 80 70 60\n", "A: 1\nB: 1\nC: 1\nD: 1\nF: 0\n"),
     ("0\n", "A: 0\nB: 0\nC: 0\nD: 0\nF: 0\n"),
     ("6\n91 90 89 88 60 59\n", "A: 2\nB: 2\nC: 0\nD: 1\nF: 1\n"),
     ("2\n70 70\n", "A: 0\nB: 0\nC: 2\nD: 0\nF: 0\n")],
))

TASKS.append(stdio_task(
    "top-words",
    """
    The first line holds k. The rest of the input is free text. A word is a
    maximal run of ASCII letters, compared case-insensitively. Print the k
    most frequent words, one per line as "word count" with the word in lower
    case, ordered by count (highest first) and then alphabetically. Print
    fewer lines when there are fewer than k distinct words.
    """,
    """
    import re
    import sys
    from collections import Counter


    def main():
        first, _, text = sys.stdin.read().partition("\\n")
        k = int(first)
        counts = Counter(w.lower() for w in re.findall(r"[A-Za-z]+", text))
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        for word, count in ranked[:k]:
            print(word, count)


    main()
    """,
    [("2\nthe cat and the hat\n", "the 2\nand 1\n"),
     ("3\nA a B b b c\n", "b 3\na 2\nc 1\n"),
     ("5\nOne fish, two fish; red fish, blue fish.\n", "fish 4\nblue 1\none 1\nred 1\ntwo 1\n")],
    [("1\nzeta alpha\n", "alpha 1\n"), ("10\n\n", ""),
     ("2\nDon't stop-believing\n", "believing 1\ndon 1\n"),
     ("3\nx y z x y x\n", "x 3\ny 2\nz 1\n"), ("2\nb a\nA B c\n", "a 2\nb 2\n")],
))

TASKS.append(stdio_task(
    "window-maximum",
    """
    The first line holds n and k (1 <= k <= n <= 200000). The second line
    holds n integers. Print, on one line separated by spaces, the maximum of
    every window of k consecutive integers, from left to right.
    """,
    """
    import sys
    from collections import deque


    def main():
        data = sys.stdin.read().split()
        n, k = int(data[0]), int(data[1])
        values = [int(x) for x in data[2:2 + n]]
        window = deque()
        out = []
        for i, v in enumerate(values):
            while window and values[window[-1]] <= v:
                window.pop()
            window.append(i)
            if window[0] <= i - k:
                window.popleft()
            if i >= k - 1:
                out.append(values[window[0]])
        print(" ".join(map(str, out)))


    main()
    """,
    [("5 3\n1 3 2 5 4\n", "3 5 5\n"), ("3 1\n4 -1 2\n", "4 -1 2\n"), ("4 4\n2 8 1 3\n", "8\n")],
    [("6 2\n5 4 3 2 1 0\n", "5 4 3 2 1\n"),
     ("7 3\n-5 -1 -3 -4 -2 -6 -7\n", "-1 -1 -2 -2 -2\n"),
     ("1 1\n42\n", "42\n"),
     ("8 3\n1 1 1 9 1 1 1 1\n", "1 9 9 9 1 1\n")],
))

TASKS.append(stdio_task(
    "grid-paths",
    """
    The first line holds R and C (1 <= R, C <= 100), followed by R lines of C
    characters: '.' is open and '#' is blocked. Count the paths from the
    top-left cell to the bottom-right cell that move only right or down
    through open cells. Print the count modulo 1000000007 (0 when the start
    or the end is blocked).
    """,
    """
    import sys

    MOD = 1_000_000_007


    def main():
        data = sys.stdin.read().split()
        rows, cols = int(data[0]), int(data[1])
        grid = data[2:2 + rows]
        ways = [[0] * cols for _ in range(rows)]
        for r in range(rows):
            for c in range(cols):
                if grid[r][c] == "#":
                    continue
                if r == 0 and c == 0:
                    ways[r][c] = 1
                    continue
                total = 0
                if r > 0:
                    total += ways[r - 1][c]
                if c > 0:
                    total += ways[r][c - 1]
                ways[r][c] = total % MOD
        print(ways[rows - 1][cols - 1])


    main()
    """,
    [("2 2\n..\n..\n", "2\n"), ("3 3\n...\n.#.\n...\n", "2\n"), ("1 1\n.\n", "1\n")],
    [("2 2\n#.\n..\n", "0\n"), ("3 3\n..#\n...\n#..\n", "4\n"),
     ("20 20\n" + ("." * 20 + "\n") * 20, "345263555\n"),
     ("1 5\n..#..\n", "0\n"), ("3 4\n....\n....\n....\n", "10\n")],
))

TASKS.append(stdio_task(
    "maze-shortest-path",
    """
    The first line holds R and C, followed by R lines of C characters: 'S'
    is the start, 'E' the exit, '.' open floor and '#' a wall (each of S and
    E appears once). A move goes one cell up, down, left or right onto a
    non-wall cell. Print the fewest moves from S to E, or -1 when E cannot
    be reached.
    """,
    """
    import sys
    from collections import deque


    def main():
        data = sys.stdin.read().split()
        rows, cols = int(data[0]), int(data[1])
        grid = data[2:2 + rows]
        for r in range(rows):
            for c in range(cols):
                if grid[r][c] == "S":
                    start = (r, c)
                elif grid[r][c] == "E":
                    end = (r, c)
        dist = {start: 0}
        queue = deque([start])
        while queue:
            r, c = queue.popleft()
            if (r, c) == end:
                print(dist[(r, c)])
                return
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nr, nc = r + dr, c + dc
                if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] != "#" and (nr, nc) not in dist:
                    dist[(nr, nc)] = dist[(r, c)] + 1
                    queue.append((nr, nc))
        print(-1)


    main()
    """,
    [("3 3\nS..\n.#.\n..E\n", "4\n"), ("1 2\nSE\n", "1\n"), ("2 2\nS#\n#E\n", "-1\n")],
    [("3 5\nS.#..\n..#.E\n.....\n", "7\n"), ("5 5\nS....\n.....\n.....\n.....\n....E\n", "8\n"),
     ("4 4\n....\n.S..\n....\n..E.\n", "3\n"),
     ("5 5\nS....\n####.\n.....\n.####\n....E\n", "16\n"),
     ("3 3\nS.#\n###\n#.E\n", "-1\n")],
))

TASKS.append(stdio_task(
    "mean-and-median",
    """
    The first line holds n (n >= 1), followed by n real numbers separated by
    whitespace. Print their mean and their median on one line, separated by
    a space. The median of an even count is the mean of the two middle
    values. Answers within 1e-6 (absolute or relative) are accepted.
    """,
    """
    import sys


    def main():
        data = sys.stdin.read().split()
        n = int(data[0])
        values = sorted(float(x) for x in data[1:1 + n])
        mean = sum(values) / n
        if n % 2 == 1:
            median = values[n // 2]
        else:
            median = (values[n // 2 - 1] + values[n // 2]) / 2
        print(f"{mean:.9f} {median:.9f}")


    main()
    """,
    [("3\n1 2 3\n", "2 2\n"), ("4\n1 2 3 10\n", "4 2.5\n"), ("1\n-7.5\n", "-7.5 -7.5\n")],
    [("2\n0 1\n", "0.5 0.5\n"), ("5\n3 1 4 1 5\n", "2.8 3\n"),
     ("6\n1.5 2.5 -1 -2 10 0\n", "1.833333333 0.75\n"), ("4\n1 1 1 2\n", "1.25 1\n")],
    float_tolerance=1e-6,
))

TASKS.append(stdio_task(
    "total-time",
    """
    Each non-blank input line is a duration "H:MM" (hours may have any
    number of digits, minutes are 00-59). Print the total duration as
    "H:MM": hours without leading zeros and not wrapped at 24, minutes as
    two digits. An input with no durations totals 0:00.
    """,
    """
    import sys


    def main():
        total = 0
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            hours, minutes = line.split(":")
            total += int(hours) * 60 + int(minutes)
        print(f"{total // 60}:{total % 60:02d}")


    main()
    """,
    [("1:30\n0:45\n", "2:15\n"), ("10:00\n", "10:00\n"), ("0:20\n0:20\n0:20\n", "1:00\n")],
    [("23:59\n0:01\n", "24:00\n"), ("\n", "0:00\n"), ("100:30\n100:30\n", "201:00\n"),
     ("0:05\n", "0:05\n"), ("7:07\n\n2:08\n", "9:15\n")],
))

TASKS.append(stdio_task(
    "single-server-queue",
    """
    A single clerk serves customers one at a time in arrival order. The
    first line holds n (n >= 1), followed by n lines "arrival duration" with
    arrival times in non-decreasing order. A customer is served as soon as
    they have arrived and the clerk is free. Print the departure time of
    every customer on one line, separated by spaces, and on a second line
    the total time customers spent waiting before being served.
    """,
    """
    import sys


    def main():
        data = list(map(int, sys.stdin.read().split()))
        n = data[0]
        free_at = 0
        departures = []
        waiting = 0
        for i in range(n):
            arrival, duration = data[1 + 2 * i], data[2 + 2 * i]
            start = max(arrival, free_at)
            waiting += start - arrival
            free_at = start + duration
            departures.append(free_at)
        print(" ".join(map(str, departures)))
        print(waiting)


    main()
    """,
    [("3\n0 5\n1 3\n2 1\n", "5 8 9\n10\n"), ("2\n0 2\n10 3\n", "2 13\n0\n"), ("1\n4 4\n", "8\n0\n")],
    [("4\n0 3\n0 3\n0 3\n0 3\n", "3 6 9 12\n18\n"), ("3\n1 1\n5 1\n5 1\n", "2 6 7\n1\n"),
     ("3\n2 10\n3 1\n20 5\n", "12 13 25\n9\n"), ("2\n7 0\n7 0\n", "7 7\n0\n")],
))

TASKS.append(stdio_task(
    "stab-intervals",
    """
    The first line holds n, followed by n lines "l r" describing closed
    integer intervals [l, r] with l <= r. Print the smallest number of
    integer points such that every interval contains at least one of them.
    """,
    """
    import sys


    def main():
        data = list(map(int, sys.stdin.read().split()))
        n = data[0]
        intervals = sorted(((data[1 + 2 * i], data[2 + 2 * i]) for i in range(n)), key=lambda iv: iv[1])
        count = 0
        last = None
        for left, right in intervals:
            if last is None or left > last:
                count += 1
                last = right
        print(count)


    main()
    """,
    [("3\n1 3\n2 5\n4 6\n", "2\n"), ("1\n5 5\n", "1\n"), ("3\n1 2\n3 4\n5 6\n", "3\n")],
    [("3\n1 10\n2 3\n4 5\n", "2\n"), ("2\n1 2\n2 3\n", "1\n"), ("0\n", "0\n"),
     ("4\n-5 -1\n-3 0\n0 2\n3 3\n", "3\n"), ("5\n1 100\n50 60\n55 58\n70 80\n90 95\n", "3\n")],
))

TASKS.append(stdio_task(
    "widest-prime-gap",
    """
    The input holds L and R (1 <= L <= R <= 1000000). Among the primes p
    with L <= p <= R, find two consecutive ones p < q with the largest
    difference q - p, taking the smallest p on ties, and print "p q". Print
    -1 when the range holds fewer than two primes.
    """,
    """
    import sys


    def main():
        lo, hi = map(int, sys.stdin.read().split())
        sieve = bytearray([1]) * (hi + 1)
        sieve[0] = 0
        sieve[1] = 0
        for p in range(2, int(hi ** 0.5) + 1):
            if sieve[p]:
                sieve[p * p::p] = bytearray(len(range(p * p, hi + 1, p)))
        primes = [p for p in range(max(lo, 2), hi + 1) if sieve[p]]
        if len(primes) < 2:
            print(-1)
            return
        best = (primes[0], primes[1])
        for a, b in zip(primes, primes[1:]):
            if b - a > best[1] - best[0]:
                best = (a, b)
        print(best[0], best[1])


    main()
    """,
    [("1 10\n", "3 5\n"), ("14 16\n", "-1\n"), ("10 30\n", "23 29\n")],
    [("2 3\n", "2 3\n"), ("20 25\n", "-1\n"), ("1 1\n", "-1\n"), ("89 113\n", "89 97\n"),
     ("44 49\n", "-1\n"), ("1 1000000\n", "492113 492227\n")],
))

TASKS.append(stdio_task(
    "base-conversion",
    """
    Each non-blank input line is "N FROM TO": an integer N written in base
    FROM (digits 0-9 then letters A-Z in either case, optionally preceded by
    '-'), and a target base TO, with 2 <= FROM, TO <= 36. For each line print
    N written in base TO with upper-case letters, a leading '-' when
    negative, and "0" for zero.
    """,
    """
    import sys

    DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


    def convert(text, src, dst):
        value = int(text, src)
        if value == 0:
            return "0"
        sign = "-" if value < 0 else ""
        value = abs(value)
        out = []
        while value:
            value, digit = divmod(value, dst)
            out.append(DIGITS[digit])
        return sign + "".join(reversed(out))


    def main():
        for line in sys.stdin:
            parts = line.split()
            if parts:
                print(convert(parts[0], int(parts[1]), int(parts[2])))


    main()
    """,
    [("255 10 16\n", "FF\n"), ("ff 16 2\n", "11111111\n"), ("-10 10 3\n", "-101\n")],
    [("0 10 2\n", "0\n"), ("Z 36 10\n", "35\n"), ("1010 2 10\n7 10 7\n", "10\n10\n"),
     ("-0 10 5\n", "0\n"), ("123456789 10 36\n", "21I3V9\n")],
))

TASKS.append(stdio_task(
    "league-table",
    """
    Each non-blank input line is a match result "HOME hg AWAY ag" (team
    names without spaces, goal counts as integers). A win is worth 3 points,
    a draw 1 and a loss 0. Print one line per team, "NAME points
    goal_difference goals_for", ordered by points, then goal difference,
    then goals scored (all highest first), then name alphabetically.
    """,
    """
    import sys


    def main():
        stats = {}
        for line in sys.stdin:
            parts = line.split()
            if not parts:
                continue
            home, home_goals, away, away_goals = parts[0], int(parts[1]), parts[2], int(parts[3])
            for team, scored, conceded in ((home, home_goals, away_goals), (away, away_goals, home_goals)):
                s = stats.setdefault(team, [0, 0, 0])  # points, goals for, goals against
                s[1] += scored
                s[2] += conceded
                if scored > conceded:
                    s[0] += 3
                elif scored == conceded:
                    s[0] += 1
        rows = sorted(stats.items(), key=lambda kv: (-kv[1][0], -(kv[1][1] - kv[1][2]), -kv[1][1], kv[0]))
        for team, (points, goals_for, goals_against) in rows:
            print(team, points, goals_for - goals_against, goals_for)


    main()
    """,
    [("Ants 2 Bees 1\n", "Ants 3 1 2\nBees 0 -1 1\n"),
     ("Ants 1 Bees 1\nBees 0 Cats 2\n", "Cats 3 2 2\nAnts 1 0 1\nBees 1 -2 1\n"),
     ("Owls 3 Rams 0\nRams 3 Owls 0\n", "Owls 3 0 3\nRams 3 0 3\n")],
    [("A 0 B 0\nC 0 D 0\n", "A 1 0 0\nB 1 0 0\nC 1 0 0\nD 1 0 0\n"),
     ("Lions 4 Tigers 4\nTigers 1 Bears 0\nBears 2 Lions 1\n", "Tigers 4 1 5\nBears 3 0 2\nLions 1 -1 5\n"),
     ("X 3 Y 1\nZ 2 W 0\n", "X 3 2 3\nZ 3 2 2\nY 0 -2 1\nW 0 -2 0\n"),
     ("\nAa 1 Zz 1\n\n", "Aa 1 0 1\nZz 1 0 1\n")],
))


def main():
    out = sys.stdout
    for task in TASKS:
        out.write(json.dumps(task, ensure_ascii=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
