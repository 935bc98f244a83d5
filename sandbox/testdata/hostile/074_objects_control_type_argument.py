#: class: objects
#: expect: pass
#: why: 'a type as an argument and as an answer; a lambda as an argument of a value test'
#: entry: convert
#: tests:
#:   - assert: "convert(int, '5') == 5"
#:   - value: ["float, '2.5'", "2.5"]
#:   - value: ["(lambda s: s * 2), 'ab'", "'abab'"]
#:   - assert: "convert(type, 3) is int"
#:     hidden: true
def convert(t, v):
    return t(v)
