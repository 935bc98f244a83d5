#: class: identity
#: expect: fail
#: why: 'asked for a new sorted list, returns its (sorted) input: "ys is not xs" must see the same object'
#: entry: sorted_copy
#: tests:
#:   - check: |
#:       def check(c):
#:           xs = [2, 1]
#:           ys = c(xs)
#:           assert ys == [1, 2]
#:           assert ys is not xs
#:     hidden: true
def sorted_copy(xs):
    xs.sort()
    return xs
