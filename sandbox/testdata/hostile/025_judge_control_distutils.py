#: class: judge
#: expect: pass
#: why: 'a program that imports distutils (a large deprecated package) and then answers'
#: entry: f
#: tests:
#:   - value: ["[2, 1]", "[1, 2]"]
#:   - value: ["[9, 3, 5]", "[3, 5, 9]"]
#:     hidden: true
import warnings
warnings.simplefilter("ignore")
try:
    import distutils.version
except ImportError:
    pass
def f(xs):
    return sorted(xs)
