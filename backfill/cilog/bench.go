package cilog

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// synthLog generates a GitHub Actions raw log of a Maven build of a given
// size on the fly: timestamped [INFO] lines, download progress, a
// compiler error with its continuation and Maven's echo every few
// thousand lines, and now and then a test failure with a stack trace.
type synthLog struct {
	size, done int64
	n          int
	buf        []byte
	pad        string // appended to the ordinary lines
	every      int    // lines between compiler errors
}

func newSynthLog(size int64) *synthLog { return &synthLog{size: size, every: 5000} }

func (s *synthLog) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.done >= s.size {
			return 0, io.EOF
		}
		s.fill()
	}
	n := copy(p, s.buf)
	if rest := s.size - s.done; int64(n) > rest {
		n = int(rest)
	}
	s.buf = s.buf[n:]
	s.done += int64(n)
	if s.done >= s.size {
		s.buf = nil
	}
	return n, nil
}

func (s *synthLog) fill() {
	s.n++
	ts := fmt.Sprintf("2024-01-01T10:%02d:%02d.%07dZ ", (s.n/60000)%60, (s.n/1000)%60, s.n%10000000)
	switch {
	case s.n%s.every == 0:
		f := fmt.Sprintf("src/main/java/p%d/C%d.java", s.n%7, s.n%13)
		s.buf = fmt.Appendf(s.buf[:0], "%s[ERROR] /home/runner/work/r/r/%s:[%d,9] cannot find symbol\n%s  symbol:   class Strin\n%s  location: class C\n"+
			"%s[INFO] 1 error\n%s[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.11.0:compile (default-compile) on project r: Compilation failure\n"+
			"%s[ERROR] /home/runner/work/r/r/%s:[%d,9] cannot find symbol\n%s[ERROR]   symbol:   class Strin\n%s[ERROR] -> [Help 1]\n",
			ts, f, s.n%400, ts, ts, ts, ts, ts, f, s.n%400, ts, ts)
	case s.n%7919 == 0:
		s.buf = fmt.Appendf(s.buf[:0], "%s[ERROR] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.2 s <<< FAILURE! - in p.CTest\n"+
			"%s[ERROR] p.CTest.adds  Time elapsed: 0.01 s  <<< FAILURE!\n%sorg.opentest4j.AssertionFailedError: expected: <2> but was: <3>\n"+
			"%s\tat p.CTest.adds(CTest.java:14)\n%s\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)\n", ts, ts, ts, ts, ts)
	case s.n%97 == 0:
		s.buf = fmt.Appendf(s.buf[:0], "%sProgress (1): 12/80 kB\rProgress (1): 45/80 kB\rProgress (1): 80/80 kB\r\n", ts)
	default:
		s.buf = fmt.Appendf(s.buf[:0], "%s[INFO] Compiling module %d of the reactor with 214 source files to /home/runner/work/r/r/target/classes%s\n", ts, s.n%1000, s.pad)
	}
}

// StreamResult is one run of StreamBench.
type StreamResult struct {
	Bytes          int64
	Lines          int
	Diagnostics    int
	ParseSeconds   float64
	ScanSeconds    float64
	PeakHeapBytes  uint64
	BaseHeapBytes  uint64
	TotalAllocated uint64
}

// ParseMBps is the parser's throughput.
func (r StreamResult) ParseMBps() float64 { return float64(r.Bytes) / 1e6 / r.ParseSeconds }

// ScanMBps is the baseline's: splitting the same stream into lines.
func (r StreamResult) ScanMBps() float64 { return float64(r.Bytes) / 1e6 / r.ScanSeconds }

func (r StreamResult) String() string {
	return fmt.Sprintf("log %d MiB, %d lines, %d diagnostics\nparse %.1f MB/s; line scan alone %.1f MB/s; ratio %.2f\npeak live heap %.1f MiB while parsing (%.1f MiB before), %.1f GiB allocated in all\n",
		r.Bytes>>20, r.Lines, r.Diagnostics, r.ParseMBps(), r.ScanMBps(), r.ParseMBps()/r.ScanMBps(),
		float64(r.PeakHeapBytes)/(1<<20), float64(r.BaseHeapBytes)/(1<<20), float64(r.TotalAllocated)/(1<<30))
}

// StreamBench parses a generated log of size bytes, sampling the live heap
// every 10 ms, and times a plain line scan of the same stream as the
// baseline.
func StreamBench(size int64) (StreamResult, error) { return streamBench(size, 0) }

// streamBench is StreamBench with ordinary lines padded by pad bytes
// (fewer, longer lines: the same bytes for less per-line work).
func streamBench(size int64, pad int) (StreamResult, error) {
	padding := strings.Repeat(" .", pad/2)
	gen := func() *synthLog {
		l := newSynthLog(size)
		if pad > 0 {
			l.pad, l.every = padding, 200
		}
		return l
	}
	r := StreamResult{Bytes: size}
	start := time.Now()
	sc := bufio.NewScanner(gen())
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	r.ScanSeconds = time.Since(start).Seconds()

	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	r.BaseHeapBytes = sample[0].Value.Uint64()
	alloc0 := sample[1].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start = time.Now()
	rep, err := Parse(gen(), "synthetic.log")
	r.ParseSeconds = time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	if err != nil {
		return r, err
	}
	metrics.Read(sample)
	r.TotalAllocated = sample[1].Value.Uint64() - alloc0
	r.PeakHeapBytes = peak.Load()
	r.Lines, r.Diagnostics = rep.Lines, len(rep.Diagnostics)
	return r, nil
}
