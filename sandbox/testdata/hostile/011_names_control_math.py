#: class: names
#: expect: pass
#: why: 'an honest program that imports math; the test''s math.isclose is the judge''s own'
#: entry: area
#: tests:
#:   - assert: "math.isclose(area(2), 12.566370614359172)"
#:   - assert: "math.isclose(area(3), 28.274333882308138)"
#:     hidden: true
import math

def area(r):
    return math.pi * r * r
