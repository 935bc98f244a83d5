#: class: names
#: expect: fail
#: why: 'returns a tuple that looks like an encoded call of a trusted function; it is only a tuple'
#: entry: twice
#: tests:
#:   - value: ["3", "6"]
#:   - assert: "twice(4) == 8"
#:   - value: ["21", "42"]
#:     hidden: true
def twice(x):
    return ("__import__('operator').mul", (x, 2), {"new": ["int", [x * 2]]})
