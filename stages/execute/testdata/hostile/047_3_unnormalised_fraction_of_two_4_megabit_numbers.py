#: name: [3] unnormalised Fraction of two 4-megabit numbers
#: status: wrong_answer
#: also: timeout,memory,runtime_error,wrong_answer
#: max_seconds: 5
#: task: {"schema_version":2,"task_id":"hostile/third","kind":"python-function","prompt":"def third(x):\n    \"\"\"Return x / 3 as a Fraction.\"\"\"\n","entry_point":"third","tests":[{"name":"visible1","args":"1","expected":"__import__('fractions').Fraction(1, 3)"},{"name":"visible2","args":"2","expected":"__import__('fractions').Fraction(2, 3)"},{"name":"hidden","args":"987654","expected":"__import__('fractions').Fraction(987654, 3)","hidden":true}],"timeout_ms":1000,"memory_mb":256}
import random
from fractions import Fraction

R = random.Random(5)


def third(x):
    return Fraction(R.getrandbits(1 << 22) | 1, R.getrandbits(1 << 22) | 1, _normalize=False)
