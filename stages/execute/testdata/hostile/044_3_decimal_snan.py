#: name: [3] Decimal('sNaN')
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/half","kind":"python-function","prompt":"def half(s):\n    \"\"\"Return Decimal(s) / 2.\"\"\"\n","entry_point":"half","tests":[{"name":"visible1","args":"'3'","expected":"__import__('decimal').Decimal('1.5')"},{"name":"visible2","args":"'1'","expected":"__import__('decimal').Decimal('0.5')"},{"name":"hidden","args":"'987654'","expected":"__import__('decimal').Decimal('493827')","hidden":true}],"timeout_ms":3000,"memory_mb":256}
from decimal import Decimal


def half(s):
    return Decimal('sNaN')
