#: name: control: U+FFFD
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/repl","kind":"python-function","prompt":"def repl(n):\n    \"\"\"Return n replacement characters (U+FFFD).\"\"\"\n","entry_point":"repl","tests":[{"name":"visible1","args":"1","expected":"'\\ufffd'"},{"name":"visible2","args":"2","expected":"'\\ufffd' * 2"},{"name":"hidden","args":"987654 % 5","expected":"'\\ufffd' * 4","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def repl(n):
    return '\ufffd' * n
