#: class: identity
#: expect: fail
#: why: 'sorts its input in place; the test checks that the input is unchanged'
#: entry: smallest
#: tests:
#:   - check: |
#:       def check(c):
#:           xs = [5, 3, 9, 1]
#:           assert c(xs) == 1
#:           assert xs == [5, 3, 9, 1], xs
#:   - check: |
#:       def check(c):
#:           d = {"a": [3, 1]}
#:           c(d["a"])
#:           assert d == {"a": [3, 1]}
#:     hidden: true
def smallest(xs):
    xs.sort()
    return xs[0]
