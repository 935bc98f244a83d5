#: class: objects
#: expect: fail
#: why: 'the expected value needs the program''s own class: it is never built by (nor compared through) the program'
#: entry: make
#: tests:
#:   - assert: "make(1) == Box(1)"
#:     hidden: true
class Box:
    def __init__(self, v):
        self.v = v
    def __eq__(self, other):
        return True

def make(v):
    return Box(v + 1)
