#: class: identity
#: expect: pass
#: why: 'an in-place task: the judge sees the mutation of its own list'
#: entry: reverse_in_place
#: tests:
#:   - check: |
#:       def check(c):
#:           xs = [1, 2, 3]
#:           assert c(xs) is None
#:           assert xs == [3, 2, 1], xs
#:   - assert: "(lambda a: (reverse_in_place(a), a)[1])([4, 5]) == [5, 4]"
#:   - check: |
#:       def check(c):
#:           grid = [[1, 2], [3, 4]]
#:           row = grid[0]
#:           c(row)
#:           assert grid == [[2, 1], [3, 4]] and grid[0] is row
#:     hidden: true
def reverse_in_place(xs):
    i, j = 0, len(xs) - 1
    while i < j:
        xs[i], xs[j] = xs[j], xs[i]
        i += 1
        j -= 1
