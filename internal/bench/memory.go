package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/stages"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/stages/generate"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// StageLauncher returns the command that runs one stage as its own process
// (`murphy stage NAME ARGS...`, whose consumer groups are named after the
// topic prefix, so a benchmark never joins a deployment's groups). args
// carry --kafka.brokers, --topics.* and the stage's settings.
type StageLauncher func(ctx context.Context, stage string, args []string) *exec.Cmd

// StageMemory is one stage process over its backlog.
type StageMemory struct {
	Stage string
	// Backlog is the number of records waiting on its input topics when
	// it started; Want the outputs that drain it; Done those produced
	// when it was measured.
	Backlog, Want, Done int
	Elapsed             time.Duration
	// PeakRSS is the stage process's VmHWM in bytes.
	PeakRSS int64
	// SandboxPeakRSS is the largest memory of the stage's child processes
	// (execute's sandboxes) together seen while sampling every 100 ms: the
	// sum of their PSS (shared pages split between the processes sharing
	// them), or of their RSS where PSS cannot be read.
	SandboxPeakRSS int64
	// BoundMB and SandboxBoundMB are the documented bounds (Config.Bound,
	// Config.SandboxBound; 0 = none).
	BoundMB, SandboxBoundMB int
}

// Within reports whether the stage stayed under its bounds.
func (s StageMemory) Within() bool {
	return s.PeakRSS > 0 && s.PeakRSS <= int64(s.BoundMB)*mib &&
		(s.SandboxBoundMB == 0 || s.SandboxPeakRSS <= int64(s.SandboxBoundMB)*mib)
}

// Drained reports whether the stage worked through its whole backlog.
func (s StageMemory) Drained() bool { return s.Done >= s.Want }

// MemoryResult is the peak RSS of every stage with a backlog of Trees trees.
type MemoryResult struct {
	Broker  string
	Machine Machine
	// Trees and Samples are the backlog; Records and Bytes (keys and
	// values) what was written to the stages' input topics, in Build.
	Trees, Samples, Records int
	Bytes                   int64
	Build                   time.Duration
	Stages                  []StageMemory
}

const mib = 1 << 20

// Within reports whether every stage stayed under its bounds.
func (r MemoryResult) Within() bool {
	for _, s := range r.Stages {
		if !s.Within() {
			return false
		}
	}
	return len(r.Stages) > 0
}

func (r MemoryResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory: peak RSS (VmHWM) of each stage as its own process over a backlog of %d trees\n", r.Trees)
	fmt.Fprintf(&b, "  broker    %s\n", r.Broker)
	fmt.Fprintf(&b, "  machine   %s\n", r.Machine)
	fmt.Fprintf(&b, "  backlog   %d trees, %d samples: %d records, %.0f MB written to the stages' input topics in %s\n",
		r.Trees, r.Samples, r.Records, float64(r.Bytes)/1e6, r.Build.Round(time.Second))
	for _, s := range r.Stages {
		state := "drained"
		if !s.Drained() {
			state = fmt.Sprintf("%.0f%% of it", 100*float64(s.Done)/float64(max(s.Want, 1)))
		}
		verdict := "within"
		if !s.Within() {
			verdict = "ABOVE"
		}
		fmt.Fprintf(&b, "  %-9s peak RSS %6.1f MiB (bound %d MiB: %s)", s.Stage, float64(s.PeakRSS)/mib, s.BoundMB, verdict)
		if s.SandboxBoundMB > 0 {
			fmt.Fprintf(&b, ", sandboxes %.1f MiB (bound %d MiB)", float64(s.SandboxPeakRSS)/mib, s.SandboxBoundMB)
		}
		fmt.Fprintf(&b, "; backlog %d records, %d of %d outputs in %s (%s, %.0f/s)\n", s.Backlog, s.Done, s.Want,
			s.Elapsed.Round(100*time.Millisecond), state, float64(s.Done)/max(s.Elapsed.Seconds(), 1e-9))
	}
	return b.String()
}

// Memory writes the records of at least c.Memory.Trees trees to the input
// topics of every stage (each stage its own topics), built by the stages'
// own handlers with the in-process verdict, then runs the five stages at
// once, each as its own process (launch) over its backlog, until it drained
// it or c.Memory.StageTimeout passed, sampling its memory. Execute runs its
// real sandbox pool.
func Memory(ctx context.Context, b *Broker, c Config, ts []topics.Task, launch StageLauncher, logw io.Writer) (MemoryResult, error) {
	if err := c.Validate(); err != nil {
		return MemoryResult{}, err
	}
	c = c.seeded()
	if logw == nil {
		logw = io.Discard
	}
	res := MemoryResult{Broker: b.String(), Machine: startMachine()}
	defer res.Machine.finish()
	cats := make([]topics.Catalog, len(stages.All()))
	for i, st := range stages.All() {
		cat, err := b.catalog(ctx, "mem-"+st.Name, c.Partitions)
		if err != nil {
			return res, err
		}
		cats[i] = cat
	}
	if !c.Keep {
		defer b.deleteTopics(cats...)
	}
	wants, backlogs, err := writeBacklog(ctx, b, c, ts, cats, &res, logw)
	if err != nil {
		return res, fmt.Errorf("memory: backlog: %w", err)
	}
	res.Stages = make([]StageMemory, len(stages.All()))
	errs := make([]error, len(stages.All()))
	var wg sync.WaitGroup
	for i, st := range stages.All() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Stages[i], errs[i] = stageMemory(ctx, b, c, cats[i], st.Name, st.Outputs[0], wants[i], launch)
			res.Stages[i].Backlog = backlogs[i]
			if errs[i] != nil {
				errs[i] = fmt.Errorf("memory: %s: %w", st.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	res.Machine.finish()
	return res, errors.Join(errs...)
}

// writeBacklog builds the trees wave by wave and writes each stage's input
// records to its catalog. It returns, per stage, the outputs that drain
// its backlog and the records in it.
func writeBacklog(ctx context.Context, b *Broker, c Config, ts []topics.Task, cats []topics.Catalog, res *MemoryResult, logw io.Writer) (wants, backlogs []int, err error) {
	start := time.Now()
	taskRecs, err := taskRecords(ts)
	if err != nil {
		return nil, nil, err
	}
	w := rawWriter(b.Kafka)
	defer closeRawWriter(w)
	write := func(msgs []kafka.Message) error {
		for i := 0; i < len(msgs); i += 1000 {
			if err := w.WriteMessages(ctx, msgs[i:min(i+1000, len(msgs))]...); err != nil {
				return err
			}
		}
		return nil
	}
	for _, cat := range cats {
		var msgs []kafka.Message
		for _, m := range taskRecs {
			msgs = append(msgs, kafka.Message{Topic: cat.Topic(topics.Tasks), Key: m.Key, Value: m.Value})
		}
		if err := write(msgs); err != nil {
			return nil, nil, fmt.Errorf("tasks: %w", err)
		}
	}
	bl, err := newBacklog(c, ts)
	if err != nil {
		return nil, nil, err
	}
	// Tree k of every task, then tree k+1: each wave mixes the tasks.
	perTask := (c.Memory.Trees + len(ts) - 1) / len(ts)
	sub := c.submitConfig("bench-memory", perTask)
	now := time.Now()
	byTask := make([][]*topics.Prompt, len(ts))
	for i := range ts {
		byTask[i] = submit.RootPrompts(sub, &ts[i], now)
	}
	var roots []*topics.Prompt
	for k := range perTask {
		for i := range ts {
			roots = append(roots, byTask[i][k])
		}
	}
	waveTrees := c.Generate.MaxTreesInFlight
	if waveTrees <= 0 {
		waveTrees = generate.DefaultConfig().MaxTreesInFlight // the production cap
	}
	wants, backlogs = make([]int, len(stages.All())), make([]int, len(stages.All()))
	for lo := 0; lo < len(roots); lo += waveTrees {
		wv, err := bl.build(ctx, roots[lo:min(lo+waveTrees, len(roots))])
		if err != nil {
			return nil, nil, err
		}
		for i, st := range stages.All() {
			var msgs []kafka.Message
			for _, in := range st.Inputs {
				for _, m := range wv[in] {
					msgs = append(msgs, kafka.Message{Topic: cats[i].Topic(in), Key: m.Key, Value: m.Value})
					res.Bytes += int64(len(m.Key) + len(m.Value))
				}
			}
			backlogs[i] += len(msgs)
			res.Records += len(msgs)
			if err := write(msgs); err != nil {
				return nil, nil, fmt.Errorf("write %s backlog: %w", st.Name, err)
			}
		}
		res.Trees += len(wv[topics.Credited])
		res.Samples += len(wv[topics.Samples])
		// Candidates, executions and samples are one per node.
		wants[0] += len(wv[topics.Candidates])
		wants[1] += len(wv[topics.Candidates])
		wants[2] += len(wv[topics.Executions])
		wants[3] += len(wv[topics.Credited])
		wants[4] += len(wv[topics.Credited])
		fmt.Fprintf(logw, "memory: backlog %d of %d trees written (%s)\n", res.Trees, len(roots), time.Since(start).Round(time.Second))
	}
	res.Build = time.Since(start)
	return wants, backlogs, nil
}

func taskRecords(ts []topics.Task) ([]kafka.Message, error) {
	msgs := make([]kafka.Message, len(ts))
	for i := range ts {
		v, err := topics.Encode(&ts[i])
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", ts[i].TaskID, err)
		}
		msgs[i] = kafka.Message{Key: []byte(ts[i].TaskID), Value: v}
	}
	return msgs, nil
}

// stageArgs are the stage's settings as `murphy stage` flags.
func stageArgs(b *Broker, c Config, cat topics.Catalog, stage string) []string {
	a := []string{"--kafka.brokers", strings.Join(b.Kafka.Brokers, ","), "--topics.prefix", cat.Prefix,
		"--topics.partitions", strconv.Itoa(cat.Partitions), "--log_level", "warn"}
	a = append(a, securityArgs(b.Kafka)...)
	switch stage {
	case "generate":
		// Alone, generate never sees a tree complete: with the cap on trees
		// in flight it would stop after the first ones.
		a = append(a, "--generate.policy.simulated.seed", strconv.FormatInt(c.Seed, 10), "--generate.max_trees_in_flight", "0")
	case "execute":
		a = append(a, "--execute.sandbox.seed", strconv.FormatInt(c.Seed, 10), "--execute.sandbox.workers", strconv.Itoa(c.Execute.Sandbox.Workers))
	}
	return a
}

// securityArgs are kc's SASL and TLS settings as flags (none when off). A
// password given inline travels as a flag too: benchmarks against a secured
// cluster should use a password file.
func securityArgs(kc pipeline.KafkaConfig) []string {
	var a []string
	add := func(flag, v string) {
		if v != "" {
			a = append(a, flag, v)
		}
	}
	s, t := kc.SASL, kc.TLS
	add("--kafka.sasl.mechanism", s.Mechanism)
	add("--kafka.sasl.username", s.Username)
	add("--kafka.sasl.password", s.Password)
	add("--kafka.sasl.password-file", s.PasswordFile)
	if t.Enabled {
		a = append(a, "--kafka.tls.enabled")
	}
	add("--kafka.tls.ca-file", t.CAFile)
	add("--kafka.tls.cert-file", t.CertFile)
	add("--kafka.tls.key-file", t.KeyFile)
	add("--kafka.tls.server-name", t.ServerName)
	if t.InsecureSkipVerify {
		a = append(a, "--kafka.tls.insecure-skip-verify")
	}
	return a
}

// stageMemory runs one stage process over its backlog on cat and samples
// its memory until it produced want outputs, StageTimeout passed or it
// exited.
func stageMemory(ctx context.Context, b *Broker, c Config, cat topics.Catalog, stage string, output topics.Name, want int, launch StageLauncher) (StageMemory, error) {
	sm := StageMemory{Stage: stage, Want: want, BoundMB: c.Bound(stage)}
	if stage == "execute" {
		sm.SandboxBoundMB = c.SandboxBound()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	outputs, err := countOutputs(runCtx, b.Kafka, cat.Topic(output), output == topics.Batches)
	if err != nil {
		return sm, err
	}
	cmd := launch(runCtx, stage, stageArgs(b, c, cat, stage))
	var logs tailBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sm, fmt.Errorf("start: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(c.Memory.StageTimeout)
	sample := func() {
		if hwm, ok := procStatus(pid, "VmHWM"); ok {
			sm.PeakRSS = max(sm.PeakRSS, hwm)
		}
		sm.SandboxPeakRSS = max(sm.SandboxPeakRSS, descendantsMemory(pid))
	}
	var (
		runErr error
		gone   bool
	)
wait:
	for {
		select {
		case err := <-exited:
			gone = true
			runErr = fmt.Errorf("the stage exited early (%v) after %d outputs:\n%s", err, sm.Done, logs.String())
			break wait
		case n := <-outputs:
			sm.Done = n
			if sm.Drained() {
				break wait
			}
		case <-tick.C:
			sample()
		case <-deadline:
			break wait
		case <-ctx.Done():
			runErr = ctx.Err()
			break wait
		}
	}
	sm.Elapsed = time.Since(start)
	if runErr == nil {
		sample()
		// SIGTERM: the stage finishes in-flight records and exits.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil && !isTermination(err) {
				runErr = fmt.Errorf("the stage did not stop cleanly (%v):\n%s", err, logs.String())
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // killed: its exit status says nothing
			runErr = fmt.Errorf("the stage did not stop within a minute of SIGTERM:\n%s", logs.String())
		}
	} else if !gone {
		_ = cmd.Process.Kill()
		<-exited //nolint:errcheck // killed: its exit status says nothing
	}
	if sm.PeakRSS == 0 && runErr == nil {
		runErr = errors.New("no memory sample of the stage process")
	}
	return sm, runErr
}

func isTermination(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return true
		}
	}
	return false
}

// countOutputs tails topic and sends the running count of records (of
// trees in batches, when batches) after every change.
func countOutputs(ctx context.Context, kc pipeline.KafkaConfig, topic string, batches bool) (<-chan int, error) {
	recs, err := pipeline.Tail(ctx, kc, topic)
	if err != nil {
		return nil, err
	}
	out := make(chan int, 1)
	go func() {
		n := 0
		seen := map[string]bool{}
		for rec := range recs {
			if batches {
				id := rec.Headers[emit.HeaderBatchID]
				if seen[id] {
					continue
				}
				seen[id] = true
				k, _ := strconv.Atoi(rec.Headers[emit.HeaderTrees])
				n += k
			} else {
				n++
			}
			// Keep only the latest count waiting.
			select {
			case <-out:
			default:
			}
			out <- n
		}
	}()
	return out, nil
}

// procStatus reads a kB field of /proc/<pid>/status in bytes.
func procStatus(pid int, field string) (int64, bool) { return procField(pid, "status", field) }

// procField reads a kB field of /proc/<pid>/<file> in bytes.
func procField(pid int, file, field string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// descendantsMemory sums the current PSS (else RSS) of every descendant
// of pid.
func descendantsMemory(pid int) int64 {
	var sum int64
	for _, c := range descendants(pid) {
		if pss, ok := procField(c, "smaps_rollup", "Pss"); ok {
			sum += pss
		} else if rss, ok := procStatus(c, "VmRSS"); ok {
			sum += rss
		}
	}
	return sum
}

func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(p), "task", "*", "children"))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// tailBuffer keeps the last 8 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 16<<10 {
		keep := t.buf.Bytes()[t.buf.Len()-8<<10:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
