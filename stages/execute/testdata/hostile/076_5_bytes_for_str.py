#: name: [5] bytes for str
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/echo","kind":"python-function","prompt":"def echo(s):\n    \"\"\"Return s.\"\"\"\n","entry_point":"echo","tests":[{"name":"visible1","args":"'abc'","expected":"'abc'"},{"name":"visible2","args":"''","expected":"''"},{"name":"hidden","args":"'987654'","expected":"'987654'","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def echo(s):
    return s.encode()
