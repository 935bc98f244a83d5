#: name: [1] __main__.compile makes every test True
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import builtins
import sys

real = builtins.compile


def comp(src, filename, mode, *a, **k):
    if filename == '<test>':
        return real('True', filename, 'eval' if mode == 'eval' else 'exec')
    return real(src, filename, mode, *a, **k)


sys.modules['__main__'].compile = comp


def f(x):
    return 0
