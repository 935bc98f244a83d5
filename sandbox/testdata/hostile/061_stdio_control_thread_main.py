#: class: stdio
#: expect: pass
#: why: 'the competitive-programming idiom: main in a thread (bigger stack), started and never joined'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\n"
import sys, threading
def main():
    a, b = map(int, sys.stdin.readline().split())
    print(a + b)
threading.stack_size(1 << 26)
sys.setrecursionlimit(10000)
threading.Thread(target=main).start()
