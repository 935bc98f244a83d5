#: class: names
#: expect: fail
#: why: 'the program binds its own "math" whose isclose is always true; the test''s math must be the standard library''s'
#: entry: area
#: tests:
#:   - assert: "math.isclose(area(2), 12.566370614359172)"
#:   - assert: "math.isclose(area(3), 28.274333882308138)"
#:     hidden: true
class _Always:
    def isclose(self, *a, **k):
        return True
math = _Always()

def area(r):
    return 0
