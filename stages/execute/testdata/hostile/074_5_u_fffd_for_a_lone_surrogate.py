#: name: [5] U+FFFD for a lone surrogate
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/lone","kind":"python-function","prompt":"def lone(n):\n    \"\"\"Return n lone surrogates U+D800.\"\"\"\n","entry_point":"lone","tests":[{"name":"visible1","args":"1","expected":"'\\ud800'"},{"name":"visible2","args":"2","expected":"'\\ud800' * 2"},{"name":"hidden","args":"987654 % 5","expected":"'\\ud800' * 4","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def lone(n):
    return '\ufffd' * n
