#: name: [3] nan where nan is expected
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/nan_of","kind":"python-function","prompt":"def nan_of(x):\n    \"\"\"Return float('nan').\"\"\"\n","entry_point":"nan_of","tests":[{"name":"visible1","args":"1","expected":"float('nan')"},{"name":"visible2","args":"2","expected":"float('nan')"},{"name":"hidden","args":"987654","expected":"float('nan')","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def nan_of(x):
    return float('nan')
