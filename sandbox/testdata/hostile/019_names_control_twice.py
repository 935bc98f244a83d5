#: class: names
#: expect: pass
#: why: 'control'
#: entry: twice
#: tests:
#:   - value: ["3", "6"]
#:   - assert: "twice(4) == 8"
#:   - value: ["21", "42"]
#:     hidden: true
def twice(x):
    return x * 2
