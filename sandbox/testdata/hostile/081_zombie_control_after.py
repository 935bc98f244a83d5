#: class: zombie
#: expect: pass
#: why: 'control right after the zombies: the slot answers at once'
#: entry: f
#: max_wall_ms: 2500
#: tests:
#:   - value: ["1", "2"]
#:     hidden: true
def f(x):
    return x + 1
