#: class: zombie
#: expect: pass
#: why: 'control after the orphan'
#: entry: f
#: max_wall_ms: 2500
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
def f(x):
    return x + 1
