#: class: names
#: expect: pass
#: why: 'control: a real square root'
#: entry: root
#: tests:
#:   - assert: "math.isclose(root(4), 2.0)"
#:   - assert: "math.isclose(root(9), 3.0)"
#:     hidden: true
def root(x):
    return x ** 0.5
