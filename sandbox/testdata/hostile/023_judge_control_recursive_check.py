#: class: judge
#: expect: pass
#: why: 'the task''s own check recurses to depth 900 in the judge (CPython data-stack chunks come and go)'
#: entry: f
#: tests:
#:   - check: |
#:       import sys
#:       sys.setrecursionlimit(5000)
#:       def depth(n):
#:           return 0 if n == 0 else 1 + depth(n - 1)
#:       def check(c):
#:           assert depth(900) == 900
#:           big = [list(range(1000)) for _ in range(300)]
#:           assert c(big[0][:5]) == [0, 1, 2, 3, 4]
#:           assert depth(950) == 950
#:           assert c([1, 2]) == [1, 2]
#:   - value: ["[7]", "[7]"]
#:     hidden: true
def f(xs):
    return list(xs)
