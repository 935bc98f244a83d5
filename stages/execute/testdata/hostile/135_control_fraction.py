#: name: control: Fraction
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/third","kind":"python-function","prompt":"def third(x):\n    \"\"\"Return x / 3 as a Fraction.\"\"\"\n","entry_point":"third","tests":[{"name":"visible1","args":"1","expected":"__import__('fractions').Fraction(1, 3)"},{"name":"visible2","args":"2","expected":"__import__('fractions').Fraction(2, 3)"},{"name":"hidden","args":"987654","expected":"__import__('fractions').Fraction(987654, 3)","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from fractions import Fraction


def third(x):
    return Fraction(x, 3)
