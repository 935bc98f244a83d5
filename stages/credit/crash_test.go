package credit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// envCrashChild makes TestCreditCrashChild run the stage: "brokers|prefix|partitions".
const envCrashChild = "MURPHY_CREDIT_CRASH_CHILD"

func crashConfig() Config {
	c := DefaultConfig()
	c.Strategy = StrategyMERS
	c.Z = ZRemainingTurns
	c.Gamma = 0.9
	c.IntrapK = 3
	c.TickInterval = 100 * time.Millisecond // frequent commits: more to get wrong
	return c
}

// TestCreditCrashChild is the stage process of TestCreditSurvivesCrashes; it
// runs the credit stage on the runtime until it is killed.
func TestCreditCrashChild(t *testing.T) {
	spec := os.Getenv(envCrashChild)
	if spec == "" {
		t.Skip("helper process of TestCreditSurvivesCrashes")
	}
	parts := strings.Split(spec, "|")
	np, _ := strconv.Atoi(parts[2])
	kcfg := pipelinetest.Kafka(strings.Split(parts[0], ","))
	cat := topics.Catalog{Prefix: parts[1], Partitions: np}
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: kcfg, Catalog: cat, Name: "credit-crash-child"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStage(crashConfig(), rt.OrderedProducer(), cat, kcfg, rt.Registry())
	if err != nil {
		t.Fatal(err)
	}
	ps := st.Spec()
	assign := ps.Assigned
	ps.Assigned = func(ctx context.Context, a pipeline.Assignment) (pipeline.PartitionProcessor, error) {
		p, err := assign(ctx, a)
		if err == nil {
			fmt.Printf("ASSIGNED %d %d %d\n", a.Partition, a.Committed, len(p.(*processor).done))
		}
		return p, err
	}
	if err := rt.AddPartitionStage(ps); err != nil {
		t.Fatal(err)
	}
	if err := rt.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type child struct {
	cmd      *exec.Cmd
	assigned chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	lines    []string // ASSIGNED partition committed remembered
}

func startChild(t *testing.T, env string, stderr io.Writer) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCreditCrashChild$", "-test.v", "-test.timeout=0")
	cmd.Env = append(os.Environ(), envCrashChild+"="+env)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, assigned: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ASSIGNED ") {
				c.mu.Lock()
				c.lines = append(c.lines, sc.Text())
				c.mu.Unlock()
				once.Do(func() { close(c.assigned) })
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// TestCreditSurvivesCrashes runs the stage as a separate process on the
// real broker, kills it without warning at random points while samples of
// many interleaved trees stream in over several partitions, restarts it,
// and checks that the credited topic holds every tree exactly once, equal
// to what an uninterrupted run computes.
func TestCreditSurvivesCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a stage process several times (about a minute)")
	}
	brokers := pipelinetest.Brokers(t)
	const partitions = 4
	cat := pipelinetest.Catalog(t, brokers, partitions)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	trees := genTrees(rng, 160, "crash/"+cat.Prefix)
	cc := crashConfig().CreditConfig()
	want := map[string]string{}
	var outs []pipeline.Out
	for _, tr := range trees {
		ct, _ := Credit(mustTree(tr), cc)
		want[ct.TreeID] = canonical(t, ct)
	}
	all := interleave(rng, trees, 24)
	for _, s := range all {
		b, err := topics.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		o := pipeline.Out{Topic: cat.Topic(topics.Samples), Key: s.TreeID, Value: b}
		outs = append(outs, o)
		if rng.IntN(10) == 0 {
			outs = append(outs, o) // an upstream replay
		}
	}

	// Samples stream in over the whole test, so that trees are open at
	// every kill.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prod := pipeline.NewProducer(pipelinetest.Kafka(brokers))
	defer prod.Close()
	produced := make(chan error, 1)
	go func() {
		const chunks = 60
		for i := range chunks {
			lo, hi := i*len(outs)/chunks, (i+1)*len(outs)/chunks
			if err := prod.Produce(ctx, outs[lo:hi]...); err != nil {
				produced <- err
				return
			}
			select {
			case <-ctx.Done():
				produced <- ctx.Err()
				return
			case <-time.After(700 * time.Millisecond):
			}
		}
		produced <- nil
	}()

	env := fmt.Sprintf("%s|%s|%d", strings.Join(brokers, ","), cat.Prefix, partitions)
	var logs strings.Builder
	var logMu sync.Mutex
	stderr := writerFunc(func(b []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return logs.Write(b) })
	kills := 0
	var children []*child
	for kills < 6 {
		c := startChild(t, env, stderr)
		children = append(children, c)
		select {
		case <-c.assigned:
		case <-c.done:
			t.Fatalf("stage process exited early:\n%s", logs.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("stage process got no partition in 60s:\n%s", logs.String())
		}
		time.Sleep(time.Duration(100+rng.IntN(2500)) * time.Millisecond)
		c.kill()
		kills++
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	last := startChild(t, env, stderr)
	children = append(children, last)
	credited := cat.Topic(topics.Credited)
	if recs, err := pipelinetest.ReadAll(context.Background(), brokers, credited, len(want), 120*time.Second); err != nil {
		t.Fatalf("%d credited trees of %d after %d kills (%v):\n%s", len(recs), len(want), kills, err, logs.String())
	}
	// Give a duplicate time to show up, then read everything.
	time.Sleep(3 * time.Second)
	recs, _ := pipelinetest.ReadAll(context.Background(), brokers, credited, len(want)+1, 5*time.Second)
	last.kill()

	// The kills must have hit the stage mid-stream: restarts from a
	// committed offset, and trees already emitted remembered on restart.
	resumed, remembered := 0, 0
	for _, c := range children[1:] {
		c.mu.Lock()
		for _, l := range c.lines {
			var p, committed, rem int64
			if _, err := fmt.Sscanf(l, "ASSIGNED %d %d %d", &p, &committed, &rem); err == nil {
				if committed > 0 {
					resumed++
				}
				if rem > 0 {
					remembered++
				}
			}
		}
		c.mu.Unlock()
	}
	if resumed == 0 || remembered == 0 {
		t.Errorf("restarts never resumed mid-stream (resumed %d, remembered %d)", resumed, remembered)
	}
	seen := map[string]int{}
	for _, r := range recs {
		var ct topics.CreditedTree
		if err := topics.Decode(r.Value, &ct); err != nil {
			t.Fatal(err)
		}
		seen[ct.TreeID]++
		if seen[ct.TreeID] > 1 {
			t.Errorf("tree %s emitted %d times", ct.TreeID, seen[ct.TreeID])
		}
		if string(r.Key) != ct.TreeID || r.Headers[HeaderSourcePartition] != strconv.Itoa(r.Partition) {
			t.Errorf("tree %s: key %q, on partition %d from samples partition %s", ct.TreeID, r.Key, r.Partition, r.Headers[HeaderSourcePartition])
		}
		if w, ok := want[ct.TreeID]; !ok {
			t.Errorf("unknown tree %s", ct.TreeID)
		} else if got := canonical(t, ct); got != w {
			t.Errorf("tree %s differs from an uninterrupted run:\n got %s\nwant %s", ct.TreeID, got, w)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct trees, want %d", len(seen), len(want))
	}
	t.Logf("%d samples (%d records) of %d trees over %d partitions; %d kills; %d partition restarts from a commit, %d with emitted trees remembered; %d credited records",
		len(all), len(outs), len(want), partitions, kills, resumed, remembered, len(recs))
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
