#: name: [5] surrogate pair for an astral character
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/smile","kind":"python-function","prompt":"def smile(n):\n    \"\"\"Return n smiling faces (U+1F600).\"\"\"\n","entry_point":"smile","tests":[{"name":"visible1","args":"1","expected":"'\\U0001F600'"},{"name":"visible2","args":"2","expected":"'\\U0001F600' * 2"},{"name":"hidden","args":"987654 % 5","expected":"'\\U0001F600' * 4","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def smile(n):
    return '\ud83d\ude00' * n
