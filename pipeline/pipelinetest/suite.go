package pipelinetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
)

// The shared stage suite: every stage runs it on the real broker, the way
// every Watermill Pub/Sub runs Watermill's tests.TestPubSub. A StageCase
// is one stage, the records it consumed in a reference run of the whole
// pipeline and what it produced from them; RunStageSuite runs the stage
// alone on fresh topics with those records, three cases in parallel:
//
//   - delivery: the inputs with one record that cannot be decoded among
//     them: the poison record goes to the DLQ (reason, stage, source topic,
//     key and bytes), nothing else does, and the stage's main output holds
//     exactly the reference run's items, each once, keyed as there and each
//     key on one partition;
//   - restart: the stage, run as a separate process (StageMain), gets half
//     of the inputs, is killed with SIGKILL once it has produced output, the
//     other half arrives while it is down, and it is started again: nothing
//     is lost; a stateful stage duplicates nothing, a stateless one may
//     process a record again after the kill, and then produces the
//     identical item;
//   - duplicates: one input record delivered twice: a stateful stage drops
//     the second; a stateless stage produces identical items for it again
//     (same ids, same content), so that the next stage can drop it.
//
// Every case ends once the stage's consumer groups have committed all its
// inputs, so that what it produced for them is all on the topic.

// StageRunner runs one stage alone on kc's broker over cat's topics until
// ctx ends.
type StageRunner func(ctx context.Context, kc pipeline.KafkaConfig, cat topics.Catalog) error

// Rec is a record of a reference run, by catalog topic name, so that it can
// be produced again under another catalog.
type Rec struct {
	Topic topics.Name
	Key   string
	Value []byte
}

// Item is what the suite compares of a stage's output: one unit the stage
// produces (a candidate, a sample, a credited tree, a row of a batch) by
// its id, with the record key it came under and a digest of its content
// that is the same in any run of the same inputs.
type Item struct {
	ID, Key, Digest string
}

// StageCase is one stage as the suite runs it.
type StageCase struct {
	// Name names the stage (its subtests and its child process).
	Name string
	// Run runs the stage alone (in the test process, and in the child
	// process of the restart case through StageMain).
	Run StageRunner
	// Output is the stage's main output topic.
	Output topics.Name
	// Setup are records the stage reads beside its inputs (tasks),
	// produced before the stage starts.
	Setup []Rec
	// Inputs are the records the stage consumed in the reference run, in
	// their order there.
	Inputs []Rec
	// Want are the items of the stage's main output in the reference run.
	Want []Item
	// Identify returns the items of one record of the main output.
	Identify func(r pipeline.Record) ([]Item, error)
	// Stateful: the stage keeps state and drops what it has already
	// processed (credit, emit); a stateless stage processes a redelivered
	// record again.
	Stateful bool
	// SkipDuplicates, when set, skips the duplicates case with this reason
	// (a behaviour the stage does not have yet).
	SkipDuplicates string
	// Timeout bounds each case's wait for the stage's output.
	Timeout time.Duration
	// Check, when set, checks what only this stage promises (emit's files,
	// say), at the end of the delivery and restart cases, once the stage
	// has committed every input.
	Check func(t *testing.T, run CaseRun)
}

// CaseRun is what a StageCase's Check is given.
type CaseRun struct {
	// Case is "delivery" or "restart".
	Case    string
	Kafka   pipeline.KafkaConfig
	Catalog topics.Catalog
	// Output are the records of the stage's main output topic.
	Output []pipeline.Record
}

// Env names of the restart case's child process.
const (
	envChild      = "MURPHY_STAGE_SUITE_CHILD"
	envChildSpec  = "MURPHY_STAGE_SUITE_SPEC"
	childStopWait = 30 * time.Second
)

// StageMain is the TestMain of a package that runs the suite: in the child
// process of a restart case it runs the stage runners(name) returns until
// it is killed; otherwise it runs the package's tests.
func StageMain(m *testing.M, runners func(name string) (StageRunner, error)) {
	name := os.Getenv(envChild)
	if name == "" {
		os.Exit(m.Run())
	}
	if err := runChild(name, os.Getenv(envChildSpec), runners); err != nil {
		fmt.Fprintf(os.Stderr, "stage %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(name, spec string, runners func(string) (StageRunner, error)) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		return fmt.Errorf("bad %s %q", envChildSpec, spec)
	}
	np, err := strconv.Atoi(parts[2])
	if err != nil {
		return err
	}
	run, err := runners(name)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = run(ctx, Kafka(strings.Split(parts[0], ",")), topics.Catalog{Prefix: parts[1], Partitions: np})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// suitePartitions is the partition count of each case's catalog: more than
// one, so that keys and partitions are checked.
const suitePartitions = 3

// RunStageSuite runs the shared stage suite for c on the real broker
// (skipped without MURPHY_KAFKA_BROKERS). The cases run in parallel, each
// on its own topics.
func RunStageSuite(t *testing.T, c StageCase) {
	t.Helper()
	brokers := Brokers(t)
	if len(c.Inputs) == 0 || len(c.Want) == 0 {
		t.Fatalf("stage %s: the reference run gave it %d inputs and %d output items", c.Name, len(c.Inputs), len(c.Want))
	}
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	t.Run("delivery", func(t *testing.T) {
		t.Parallel()
		s := newSuiteRun(t, brokers, c)
		// A record that cannot be decoded, among the others, under a key of
		// theirs.
		poison := Rec{Topic: c.Inputs[0].Topic, Key: c.Inputs[0].Key,
			Value: []byte(`{"schema_version": 1, "tree_id": "` + c.Inputs[0].Key + `", "not a record`)}
		half := len(c.Inputs) / 2
		s.produce(t, c.Inputs[:half])
		s.produce(t, []Rec{poison})
		s.produce(t, c.Inputs[half:])
		s.start(t)
		s.expect(t, c.Want, 1)
		s.deadLetter(t, poison)
		s.check(t, "delivery", nil)
	})
	t.Run("restart", func(t *testing.T) {
		t.Parallel()
		s := newSuiteRun(t, brokers, c)
		half := max(len(c.Inputs)/2, 1)
		s.produce(t, c.Inputs[:half])
		ch := s.startChild(t)
		s.await(t, 1, ch)
		ch.kill(t)
		s.produce(t, c.Inputs[half:])
		ch = s.startChild(t)
		copies := 1
		if !c.Stateful {
			copies = 0 // at least once: a record processed before the kill may be processed again
		}
		s.expectOr(t, c.Want, copies, ch)
		s.check(t, "restart", ch)
		ch.kill(t)
	})
	t.Run("duplicates", func(t *testing.T) {
		if c.SkipDuplicates != "" {
			t.Skip(c.SkipDuplicates)
		}
		t.Parallel()
		s := newSuiteRun(t, brokers, c)
		dup := len(c.Inputs) / 2
		in := slices.Concat(c.Inputs, c.Inputs[dup:dup+1])
		s.produce(t, in)
		s.start(t)
		if c.Stateful {
			s.expect(t, c.Want, 1)
			return
		}
		got := s.expect(t, c.Want, 0)
		again := 0
		for _, n := range got {
			if n > 1 {
				again++
			}
		}
		if again == 0 {
			t.Fatalf("stage %s: the redelivered input %s/%s produced no item again", c.Name, c.Inputs[dup].Topic, c.Inputs[dup].Key)
		}
	})
}

// suiteRun is one case: the stage on its own topics.
type suiteRun struct {
	c       StageCase
	brokers []string
	cat     topics.Catalog
}

func newSuiteRun(t *testing.T, brokers []string, c StageCase) *suiteRun {
	t.Helper()
	s := &suiteRun{c: c, brokers: brokers, cat: Catalog(t, brokers, suitePartitions)}
	s.produce(t, c.Setup)
	return s
}

func (s *suiteRun) produce(t *testing.T, recs []Rec) {
	t.Helper()
	if len(recs) == 0 {
		return
	}
	outs := make([]pipeline.Out, len(recs))
	for i, r := range recs {
		outs[i] = pipeline.Out{Topic: s.cat.Topic(r.Topic), Key: r.Key, Value: r.Value}
	}
	Produce(t, s.brokers, outs...)
}

// start runs the stage in the test process until the test ends.
func (s *suiteRun) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.c.Run(ctx, Kafka(s.brokers), s.cat) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("stage %s: %v", s.c.Name, err)
			}
		case <-time.After(time.Minute):
			t.Errorf("stage %s did not stop", s.c.Name)
		}
	})
}

// read reads the main output from the start and counts its items by id,
// checking that every id keeps one key, one partition and one digest, and
// that these are the reference run's.
func (s *suiteRun) read(t *testing.T, want map[string]Item) map[string]int {
	t.Helper()
	counts := map[string]int{}
	partOf := map[string]int{}
	s.scan(t, func(r pipeline.Record) error {
		items, err := s.c.Identify(r)
		if err != nil {
			return fmt.Errorf("offset %d: %w", r.Offset, err)
		}
		if p, ok := partOf[string(r.Key)]; ok && p != r.Partition {
			return fmt.Errorf("key %q on partitions %d and %d", r.Key, p, r.Partition)
		}
		partOf[string(r.Key)] = r.Partition
		for _, it := range items {
			w, ok := want[it.ID]
			switch {
			case !ok:
				return fmt.Errorf("item %s is not in the reference run's output", it.ID)
			case w != it:
				return fmt.Errorf("item %s: key %q digest %q, the reference run had key %q digest %q", it.ID, it.Key, it.Digest, w.Key, w.Digest)
			}
			counts[it.ID]++
		}
		return nil
	})
	return counts
}

// check runs the case's own Check, if any.
func (s *suiteRun) check(t *testing.T, name string, ch *child) {
	t.Helper()
	if s.c.Check == nil {
		return
	}
	var out []pipeline.Record
	s.scan(t, func(r pipeline.Record) error { out = append(out, r); return nil })
	s.c.Check(t, CaseRun{Case: name, Kafka: Kafka(s.brokers), Catalog: s.cat, Output: out})
	if t.Failed() && ch != nil {
		t.Log(ch.output())
	}
}

// scan calls f with every record of the main output, partition by
// partition.
func (s *suiteRun) scan(t *testing.T, f func(r pipeline.Record) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, topic := Kafka(s.brokers), s.cat.Topic(s.c.Output)
	n, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	for q := range n {
		_, end, err := pipeline.PartitionBounds(ctx, kc, topic, q)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.ReadRange(ctx, kc, topic, q, 0, end, f); err != nil {
			t.Fatalf("stage %s: %s/%d: %v", s.c.Name, topic, q, err)
		}
	}
}

// await waits until the main output holds at least n items (ch, when not
// nil, is the child process whose output a failure shows).
func (s *suiteRun) await(t *testing.T, n int, ch *child) map[string]int {
	t.Helper()
	want := index(t, s.c.Want)
	deadline := time.Now().Add(s.c.Timeout)
	for {
		got := s.read(t, want)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("stage %s: %d of %d items after %v%s", s.c.Name, len(got), n, s.c.Timeout, ch.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// expect waits for every item of want and checks that each arrived copies
// times (0: at least once), then that no more arrive while the stage goes
// on running for a moment. It returns the counts.
func (s *suiteRun) expect(t *testing.T, want []Item, copies int) map[string]int {
	t.Helper()
	return s.expectOr(t, want, copies, nil)
}

func (s *suiteRun) expectOr(t *testing.T, want []Item, copies int, ch *child) map[string]int {
	t.Helper()
	s.await(t, len(want), ch)
	// Once the stage has committed every input, whatever it produces for
	// them is on the output topic: read it once more.
	s.awaitCommitted(t, ch)
	got := s.read(t, index(t, want))
	for _, w := range want {
		n := got[w.ID]
		if n == 0 || (copies > 0 && n != copies) {
			t.Errorf("stage %s: item %s arrived %d times, want %s", s.c.Name, w.ID, n, map[bool]string{true: strconv.Itoa(copies), false: "at least once"}[copies > 0])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return got
}

// awaitCommitted waits until the stage's consumer groups (those of the
// case's catalog) have committed every record of its input topics.
func (s *suiteRun) awaitCommitted(t *testing.T, ch *child) {
	t.Helper()
	deadline := time.Now().Add(s.c.Timeout)
	var last string
	for {
		behind, err := s.uncommitted()
		if err == nil && behind == "" {
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = behind
		}
		if time.Now().After(deadline) {
			t.Fatalf("stage %s: inputs not committed after %v: %s%s", s.c.Name, s.c.Timeout, last, ch.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// uncommitted names an input partition whose records the stage has not
// all committed ("" when there is none).
func (s *suiteRun) uncommitted() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kc := Kafka(s.brokers)
	tr := kc.Transport()
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(s.brokers...), Transport: tr}
	lg, err := client.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil {
		return "", err
	}
	var groups []string
	for _, g := range lg.Groups {
		if strings.HasPrefix(g.GroupID, s.cat.Prefix) {
			groups = append(groups, g.GroupID)
		}
	}
	var inputs []string
	for _, r := range s.c.Inputs {
		if tp := s.cat.Topic(r.Topic); !slices.Contains(inputs, tp) {
			inputs = append(inputs, tp)
		}
	}
	for _, tp := range inputs {
		n, err := pipeline.Partitions(ctx, kc, tp)
		if err != nil {
			return "", err
		}
		parts := make([]int, n)
		for q := range n {
			parts[q] = q
		}
		committed := make([]int64, n)
		for _, g := range groups {
			res, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: g, Topics: map[string][]int{tp: parts}})
			if err != nil {
				return "", err
			}
			for _, p := range res.Topics[tp] {
				if p.Error == nil && p.Partition < n {
					committed[p.Partition] = max(committed[p.Partition], p.CommittedOffset)
				}
			}
		}
		for q := range n {
			_, end, err := pipeline.PartitionBounds(ctx, kc, tp, q)
			if err != nil {
				return "", err
			}
			if committed[q] < end {
				return fmt.Sprintf("%s/%d committed %d of %d (groups %v)", tp, q, committed[q], end, groups), nil
			}
		}
	}
	return "", nil
}

func index(t *testing.T, items []Item) map[string]Item {
	t.Helper()
	m := make(map[string]Item, len(items))
	for _, it := range items {
		if _, dup := m[it.ID]; dup {
			t.Fatalf("item %s twice in the reference output", it.ID)
		}
		m[it.ID] = it
	}
	return m
}

func (s *suiteRun) deadLetters(t *testing.T) []topics.DeadLetter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, topic := Kafka(s.brokers), s.cat.Topic(topics.DLQ)
	n, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []topics.DeadLetter
	for q := range n {
		_, end, err := pipeline.PartitionBounds(ctx, kc, topic, q)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.ReadRange(ctx, kc, topic, q, 0, end, func(r pipeline.Record) error {
			var dl topics.DeadLetter
			if err := topics.Decode(r.Value, &dl); err != nil {
				return err
			}
			out = append(out, dl)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// deadLetter checks that the DLQ holds poison, and only it.
func (s *suiteRun) deadLetter(t *testing.T, poison Rec) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	dls := s.deadLetters(t)
	for len(dls) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		dls = s.deadLetters(t)
	}
	if len(dls) != 1 {
		t.Fatalf("stage %s: %d dead letters, want the poison record alone", s.c.Name, len(dls))
	}
	dl := dls[0]
	if dl.Reason == "" || dl.Stage == "" || dl.SourceTopic != s.cat.Topic(poison.Topic) || !bytes.Equal(dl.Value, poison.Value) || string(dl.Key) != poison.Key {
		t.Fatalf("stage %s: dead letter %+v, want the poison record of %s with a reason", s.c.Name, dl, s.cat.Topic(poison.Topic))
	}
}

// child is the stage run as a separate process (this test binary again,
// through StageMain), so that it can be killed without warning.
type child struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (c *child) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}

func (c *child) output() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return "; stage process output:\n" + c.out.String()
}

func (s *suiteRun) startChild(t *testing.T) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+s.c.Name,
		envChildSpec+"="+strings.Join(s.brokers, ",")+"|"+s.cat.Prefix+"|"+strconv.Itoa(s.cat.Partitions))
	// Its own process group: the kill takes what it started with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := &child{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c, c
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.kill(t) })
	return c
}

// kill sends SIGKILL to the child's process group and waits for it.
func (c *child) kill(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(childStopWait):
		t.Errorf("stage process %d did not die", c.cmd.Process.Pid)
	}
}
