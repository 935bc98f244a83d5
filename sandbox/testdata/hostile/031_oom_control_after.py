#: class: oom
#: expect: pass
#: why: 'the honest job after an OOM attempt'
#: entry: f
#: tests:
#:   - value: ["1", "2"]
#:   - value: ["5", "6"]
#:     hidden: true
def f(x):
    return x + 1
