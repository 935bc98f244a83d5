#: class: names
#: expect: pass
#: why: 'control: math.isclose resolved by the module''s own name'
#: entry: half
#: tests:
#:   - assert: "math.isclose(half(3), 1.5)"
#:   - value: ["5", "2.5"]
#:     hidden: true
def half(x):
    return x / 2
