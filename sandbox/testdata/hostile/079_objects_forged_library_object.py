#: class: objects
#: expect: fail
#: why: 'an object of its own class named Fraction with the private fields of Fraction(1, 3): the judge never builds a library class from the program''s data, so it is a record, not a Fraction'
#: entry: third
#: imports: |
#:   from fractions import Fraction
#:   def third(x):
#:       return Fraction(x, 3)
#: tests:
#:   - assert: "third(1) == Fraction(1, 3)"
#:   - value: ["2", "Fraction(2, 3)"]
#:     hidden: true
class Fraction:
    def __init__(self, n, d):
        self._numerator, self._denominator = n, d

def third(x):
    return Fraction(x, 3)
