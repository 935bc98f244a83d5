#: class: judge
#: expect: pass
#: why: 'the honest job after a judge-swelling one'
#: entry: f
#: tests:
#:   - value: ["1", "1"]
#:   - value: ["[1]", "[1]"]
#:     hidden: true
def f(x):
    return x
