#: class: names
#: expect: pass
#: why: 'control: abs and sorted are the judge''s builtins'
#: entry: dist
#: tests:
#:   - assert: "abs(dist(1, 4) - 3) < 1e-9"
#:   - assert: "sorted([dist(0, 2), dist(0, 1)]) == [1, 2]"
#:   - assert: "abs(dist(2, 9) - 7) < 1e-9"
#:     hidden: true
def dist(a, b):
    return abs(a - b)
