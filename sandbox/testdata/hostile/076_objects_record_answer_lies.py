#: class: objects
#: expect: fail
#: why: 'a wrong point whose own __eq__ says yes; the comparison is the task''s'
#: entry: make_point
#: helpers: |
#:   class Point:
#:       def __init__(self, x, y):
#:           self.x, self.y = x, y
#:       def __eq__(self, other):
#:           return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)
#: tests:
#:   - assert: "make_point(1, 2) == Point(1, 2)"
#:   - value: ["3, 4", "Point(3, 4)"]
#:     hidden: true
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __eq__(self, other):
        return True

def make_point(x, y):
    return Point(0, 0)
