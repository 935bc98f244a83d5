#: class: objects
#: expect: pass
#: why: 'the answer is an instance of the program''s class; the test compares it with an instance of the task''s class of that name, by the task''s __eq__'
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

def make_point(x, y):
    return Point(x, y)
