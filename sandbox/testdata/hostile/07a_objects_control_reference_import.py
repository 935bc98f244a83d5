#: class: objects
#: expect: pass
#: why: 'control: the test''s Fraction is the reference''s import; the program returns a real Fraction'
#: entry: third
#: imports: |
#:   from fractions import Fraction
#:   def third(x):
#:       return Fraction(x, 3)
#: tests:
#:   - assert: "third(1) == Fraction(1, 3)"
#:   - value: ["2", "Fraction(2, 3)"]
#:     hidden: true
import fractions

def third(x):
    return fractions.Fraction(x, 3)
