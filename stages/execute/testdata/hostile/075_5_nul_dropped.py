#: name: [5] NUL dropped
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/nul","kind":"python-function","prompt":"def nul(s):\n    \"\"\"Return s, a NUL character and s.\"\"\"\n","entry_point":"nul","tests":[{"name":"visible1","args":"'a'","expected":"'a\\x00a'"},{"name":"visible2","args":"'bc'","expected":"'bc\\x00bc'"},{"name":"hidden","args":"'987654'","expected":"'987654\\x00987654'","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def nul(s):
    return s
