// Package metricnames is what the deployment files' tests (the Grafana
// dashboard, the Prometheus alerts) check their queries against: the metric
// names a running murphy pipeline really exports, read from its /metrics,
// and the metric names a PromQL expression selects.
//
// Pipeline runs `murphy run` (every stage in one process on the embedded
// broker, the simulated policy, the built-in python-function tasks) with
// --http_addr and the staleness bound on, publishes one undecodable record
// to each stage's input topics so that the DLQ counters have series too
// and one trainer's progress (a trainer that asks for no bound) so that
// the trainer series generate exports from it exist, and scrapes /metrics
// until the run ends. A labelled metric appears in the exposition only once
// it has a series, so a metric that only an event of the run's kind never
// has (an HTTP error of an inference server, say) is not in the set: a query
// on it fails the test rather than passing unchecked.
package metricnames

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/segmentio/kafka-go"
)

// Scrape are the series Prometheus itself adds to every target; they are
// always there to be queried.
var scrape = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped",
	"scrape_samples_post_metric_relabeling", "scrape_series_added"}

// Set is the series names a pipeline exports: a counter's name, a gauge's,
// a histogram's name_bucket, name_sum and name_count (and its family name,
// which Prometheus does not store but a reader may look for), and the
// per-target series Prometheus adds.
type Set struct {
	// Families maps each metric family name to its type (counter, gauge,
	// histogram, summary, untyped).
	Families map[string]string
	// Scrapes is the number of /metrics pages read.
	Scrapes int
}

// Has reports whether name is a series name of the set.
func (s *Set) Has(name string) bool {
	for _, n := range scrape {
		if n == name {
			return true
		}
	}
	if _, ok := s.Families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch s.Families[base] {
		case "histogram":
			return true
		case "summary":
			return suffix != "_bucket"
		}
	}
	return false
}

// Names lists the family names matching prefix, sorted (for messages).
func (s *Set) Names(prefix string) []string {
	var out []string
	for n := range s.Families {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Add adds the families of one text exposition to the set.
func (s *Set) Add(r io.Reader) error {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return err
	}
	if s.Families == nil {
		s.Families = map[string]string{}
	}
	for name, f := range fams {
		s.Families[name] = strings.ToLower(f.GetType().String())
	}
	s.Scrapes++
	return nil
}

// grafanaVars are Grafana's interval variables, replaced by a duration so
// that a panel's query parses as PromQL. Other variables ($namespace, $job)
// stand inside label matchers' strings, where PromQL does not look.
var grafanaVars = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)(_ms|_s)?\}?`)

// Selected returns the metric names the vector and matrix selectors of a
// PromQL expression name (by name or by an equality __name__ matcher),
// after Grafana's interval variables are replaced by durations. A
// selector without a fixed name (a __name__ regexp) is an error: the test
// could not check it.
func Selected(expr string) ([]string, error) {
	expr = grafanaVars.ReplaceAllString(expr, "5m")
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				continue
			}
			if m.Type.String() != "=" {
				bad = fmt.Errorf("selector %s: a __name__ matcher other than = cannot be checked", vs)
				continue
			}
			name = m.Value
		}
		if name != "" {
			names = append(names, name)
		}
		return nil
	})
	return names, bad
}

// Missing returns the names of expr that s lacks, or the parse error.
func (s *Set) Missing(expr string) ([]string, error) {
	names, err := Selected(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !s.Has(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Root is the repository root (the directory of go.mod above the working
// directory).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

var (
	once    sync.Once
	pipeSet *Set
	pipeErr error
	pipeLog string
)

// Pipeline returns the metric names a running pipeline exports (one run
// per test process, about 15 s after murphy is built). It needs what the
// sandbox needs (root and bubblewrap): without them it skips, or fails when
// CI is set. It skips with -short.
func Pipeline(t testing.TB) *Set {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the pipeline (-short)")
	}
	if msg := sandboxMissing(); msg != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s; required because CI is set", msg)
		}
		t.Skip(msg)
	}
	once.Do(func() { pipeSet, pipeLog, pipeErr = runPipeline(Root(t)) })
	if pipeErr != nil {
		t.Fatalf("running the pipeline: %v\n%s", pipeErr, pipeLog)
	}
	return pipeSet
}

func sandboxMissing() string {
	if os.Geteuid() != 0 {
		return "the pipeline's sandbox needs root"
	}
	if _, err := exec.LookPath("/usr/bin/bwrap"); err != nil {
		return "bubblewrap not installed (bash sandbox/install-test-deps.sh)"
	}
	return ""
}

var (
	metricsAddr = regexp.MustCompile(`msg="serving metrics and health" addr=(\S+)`)
	brokerAddr  = regexp.MustCompile(`embedded broker \[([^\]\s]+)`)
)

// runPipeline builds murphy, runs it and scrapes it until it exits.
func runPipeline(root string) (*Set, string, error) {
	dir, err := os.MkdirTemp("", "murphy-metricnames-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)

	// A cold build cache makes this the slow part; the test binary's own
	// packages are built with the test's flags (-race), murphy without.
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer bcancel()
	bin := filepath.Join(dir, "murphy")
	build := exec.CommandContext(bctx, "go", "build", "-o", bin, "./cmd/murphy")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, string(out), fmt.Errorf("go build ./cmd/murphy: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := &logWriter{addrs: make(chan [2]string, 1)}
	// Batches close 100 ms after their first tree (--emit.max-age), not
	// only at the run's end: emit's batch counters must be on a page read
	// before murphy exits, however fast the run.
	cmd := exec.CommandContext(ctx, bin, "run", "--http_addr", "127.0.0.1:0",
		"--kinds", "python-function", "--turns", "2", "--calibrate=false", "--progress", "0",
		"--compare", "", "--timeout", "2m", "--out", filepath.Join(dir, "out"), "--generate.staleness.enabled",
		"--emit.max-age", "100ms")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdout = io.Discard
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	// done is closed when murphy has exited, with its status in waitErr.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	stop := func() { _ = cmd.Cancel(); <-done }

	var a [2]string
	select {
	case a = <-log.addrs:
	case <-done:
		return nil, log.String(), fmt.Errorf("murphy run exited before serving /metrics: %v", waitErr)
	case <-ctx.Done():
		stop()
		return nil, log.String(), ctx.Err()
	}
	if err := deadLetters(ctx, a[1]); err != nil {
		stop()
		return nil, log.String(), fmt.Errorf("publishing bad records: %w", err)
	}
	if err := trainerProgress(ctx, a[1]); err != nil {
		stop()
		return nil, log.String(), fmt.Errorf("publishing a trainer's progress: %w", err)
	}
	set := &Set{Families: map[string]string{}}
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if set.Scrapes == 0 {
				return nil, log.String(), fmt.Errorf("murphy run exited (%v) before one /metrics page was read", waitErr)
			}
			if waitErr != nil {
				return nil, log.String(), fmt.Errorf("murphy run: %w", waitErr)
			}
			return set, log.String(), nil
		case <-ctx.Done():
			stop()
			return nil, log.String(), ctx.Err()
		case <-tick.C:
			resp, err := client.Get("http://" + a[0] + "/metrics")
			if err != nil {
				continue // not serving any more: murphy is shutting down
			}
			err = set.Add(resp.Body)
			resp.Body.Close()
			if err != nil {
				stop()
				return nil, log.String(), fmt.Errorf("parsing /metrics: %w", err)
			}
		}
	}
}

// logWriter keeps the head of murphy's log and sends the /metrics and
// broker addresses on addrs once both were logged.
type logWriter struct {
	mu              sync.Mutex
	head            strings.Builder
	partial         []byte
	metrics, broker string
	sent            bool
	addrs           chan [2]string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head.Len() < 64<<10 {
		w.head.Write(p)
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if m := brokerAddr.FindStringSubmatch(line); m != nil {
			w.broker = m[1]
		}
		if m := metricsAddr.FindStringSubmatch(line); m != nil {
			w.metrics = m[1]
		}
		if w.metrics != "" && w.broker != "" && !w.sent {
			w.addrs <- [2]string{w.metrics, w.broker}
			w.sent = true
		}
	}
	if len(w.partial) > 64<<10 {
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *logWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.head.String()
}

// trainerProgress publishes the progress of a trainer that reports rows
// trained and dropped but asks for no bound (it holds nothing back), as a
// trainer's reader does (python/murphy_reader/progress.py).
func trainerProgress(ctx context.Context, broker string) error {
	b, err := topics.Encode(&topics.TrainerProgress{SchemaVersion: topics.SchemaVersion, TrainerID: "metricnames",
		TreesPerVersion: 1, Consumed: map[string]int64{}, RowsDropped: map[string]int64{"stale": 1, "duplicate_batch": 0},
		RowsTrainedStaleness: map[string]int64{"0": 3, "1": 1}, UpdatedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	return write(ctx, broker, kafka.Message{Topic: topics.DefaultCatalog().Topic(topics.TrainerProgressTopic),
		Key: []byte(topics.TrainerProgressKey("metricnames", 0)), Value: b})
}

// deadLetters publishes one record no stage can decode to the inputs of
// the stateless stages, so that the runtime's failure and DLQ counters get
// series as they do in production on the first bad record.
func deadLetters(ctx context.Context, broker string) error {
	cat := topics.DefaultCatalog()
	var msgs []kafka.Message
	for _, n := range []topics.Name{topics.Prompts, topics.Candidates, topics.Executions} {
		msgs = append(msgs, kafka.Message{Topic: cat.Topic(n), Key: []byte("metricnames-bad-record"), Value: []byte("not a record")})
	}
	return write(ctx, broker, msgs...)
}

// write writes msgs to the broker, retrying for 30 s while the topics are
// being created.
func write(ctx context.Context, broker string, msgs ...kafka.Message) error {
	w := &kafka.Writer{Addr: kafka.TCP(broker), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		AllowAutoTopicCreation: false, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	for wctx.Err() == nil {
		if err = w.WriteMessages(wctx, msgs...); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond) // topics are being created
	}
	return err
}
