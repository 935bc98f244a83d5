#: name: [4] prompt helper poly redefined
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/poly","kind":"python-function","prompt":"import math\n\n\ndef poly(xs: list, x: float):\n    \"\"\"\n    Evaluates polynomial with coefficients xs at point x.\n    return xs[0] + xs[1] * x + xs[1] * x^2 + .... xs[n] * x^n\n    \"\"\"\n    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\ndef find_zero(xs: list):\n    \"\"\" xs are coefficients of a polynomial with an even number of\n    coefficients; find_zero returns one x such that poly(x) = 0.\n    \"\"\"\n","entry_point":"find_zero","tests":null,"check":"HIDDEN_MARK = 987654\n\n\ndef check(candidate):\n    import math\n    import random\n    rng = random.Random(42)\n    import copy\n    for _ in range(100):\n        ncoeff = 2 * rng.randint(1, 4)\n        coeffs = []\n        for _ in range(ncoeff):\n            coeff = rng.randint(-10, 10)\n            if coeff == 0:\n                coeff = 1\n            coeffs.append(coeff)\n        solution = candidate(copy.deepcopy(coeffs))\n        assert math.fabs(poly(coeffs, solution)) \u003c 1e-4\n","timeout_ms":3000,"memory_mb":256}
def poly(xs, x):
    return 0.0


def find_zero(xs):
    return 0.0
