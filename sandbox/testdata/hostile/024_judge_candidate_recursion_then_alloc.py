#: class: judge
#: expect: fail
#: why: 'deep recursion then many allocations in the candidate''s own process (its image''s allocator), then a wrong answer'
#: entry: f
#: tests:
#:   - value: ["[1, 2]", "[1, 2]"]
#:   - value: ["[3]", "[3]"]
#:     hidden: true
import sys
sys.setrecursionlimit(10000)
def down(n):
    return 0 if n == 0 else 1 + down(n - 1)
down(900)
junk = [bytearray(1 << 16) for _ in range(200)]
down(950)
junk2 = [[i] * 100 for i in range(20000)]
def f(xs):
    return xs[::-1] + [0]
