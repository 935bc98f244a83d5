package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// localCluster is deploy/kafka/kafka.sh's three-broker cluster, started by
// the test in a directory of its own.
type localCluster struct {
	t       *testing.T
	script  string
	env     []string
	brokers []string
}

// newCluster is the three-broker cluster on MURPHY_KAFKA_CLUSTER_PORT
// (default 39400) under $MURPHY_KAFKA_HOME/cluster (where scripts/test.sh
// stops it, should the test binary die), not started yet.
func newCluster(t *testing.T) *localCluster {
	root := repoRoot(t)
	home := os.Getenv("MURPHY_KAFKA_HOME")
	if home == "" {
		home = filepath.Join(root, ".cache", "kafka-test")
	}
	port := os.Getenv("MURPHY_KAFKA_CLUSTER_PORT")
	if port == "" {
		port = "39400"
	}
	c := &localCluster{t: t, script: filepath.Join(root, "deploy", "kafka", "kafka.sh"),
		env: append(os.Environ(), "MURPHY_KAFKA_HOME="+home, "MURPHY_KAFKA_CLUSTER_HOME="+filepath.Join(home, "cluster"), "MURPHY_KAFKA_CLUSTER_PORT="+port)}
	p, _ := strconv.Atoi(port)
	for i := 0; i < 3; i++ {
		c.brokers = append(c.brokers, "127.0.0.1:"+strconv.Itoa(p+2*i))
	}
	return c
}

// start installs the jars and starts the cluster on fresh storage. skip is
// set when the jars cannot be installed, err when the cluster does not
// start.
func (c *localCluster) start() (skip string, err error) {
	if out, err := c.cmd("install"); err != nil {
		return fmt.Sprintf("the Kafka jars cannot be installed (deploy/kafka/kafka.sh install: %v); no cluster to test on:\n%s", err, lastLines(out, 20)), nil
	}
	if out, err := c.cmd("cluster", "clean"); err != nil {
		return "", fmt.Errorf("cluster clean: %w\n%s", err, out)
	}
	// A port of the cluster's may be taken for a moment (an outgoing
	// connection's ephemeral port): a node that failed to bind starts again.
	var out string
	for try := 0; try < 3; try++ {
		if out, err = c.cmd("cluster", "start"); err == nil {
			return "", nil
		}
		time.Sleep(2 * time.Second)
	}
	return "", fmt.Errorf("cluster start: %w\n%s", err, out)
}

func (c *localCluster) cmd(args ...string) (string, error) {
	cmd := exec.Command(c.script, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// node runs `kafka.sh cluster VERB N`.
func (c *localCluster) node(verb string, n int) {
	c.t.Helper()
	if out, err := c.cmd("cluster", verb, strconv.Itoa(n)); err != nil {
		c.t.Fatalf("cluster %s %d: %v\n%s", verb, n, err, out)
	}
}

// partitionState sums, over the named topics, the partitions without a
// leader and those whose ISR lacks a replica, and counts the partitions
// each broker leads.
func partitionState(ctx context.Context, kc pipeline.KafkaConfig, names ...string) (leaderless, under int, leads map[int]int, err error) {
	infos, err := pipeline.DescribeTopicNames(ctx, kc, names...)
	if err != nil {
		return 0, 0, nil, err
	}
	leads = map[int]int{}
	for _, in := range infos {
		if !in.Exists {
			return 0, 0, nil, fmt.Errorf("topic %s missing", in.Name)
		}
		leaderless += in.Leaderless
		under += in.UnderReplicated
		for _, l := range in.Leaders {
			if l >= 0 {
				leads[l]++
			}
		}
	}
	return leaderless, under, leads, nil
}

// TestClusterChaos: a run of at least 200 trees on a three-broker cluster
// (replication 3, min.insync.replicas 2, the defaults murphy reads from
// the cluster). During it: duplicates of records of every inner topic are
// written (what a retried write does); the broker leading most partitions
// that credit and emit read is killed with SIGKILL; once its partitions have
// new leaders every stage is killed with SIGKILL once and restarted; then
// another broker is stopped (SIGSTOP) for 30 s, the controller
// quorum and the min.insync.replicas lost with it, and credit is killed at
// the same moment and restarted; then the paused broker resumes and the
// killed one restarts. The dataset must equal a fault-free run's (tree ids,
// node ids, credited values, advantages: every column but the volatile
// ones), each tree exactly once, the DLQ empty, and every stage alive at
// the end. Recovery times are logged per fault.
func TestClusterChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: long")
	}
	bin := buildBinary(t)
	c := newCluster(t)
	t.Cleanup(func() { _, _ = c.cmd("cluster", "stop") })
	type started struct {
		skip string
		err  error
	}
	startDone := make(chan started, 1)
	// The cluster starts while the reference run runs.
	go func() {
		skip, err := c.start()
		startDone <- started{skip, err}
	}()
	const k = 10
	want := e2eTrees(t, k)
	if want < 200 {
		t.Fatalf("chaos run needs at least 200 trees, have %d", want)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	referenceRun(t, bin, ref, k)
	st := <-startDone
	if st.skip != "" {
		t.Skip(st.skip)
	}
	if st.err != nil {
		t.Fatal(st.err)
	}
	kc := pipelinetest.Kafka(c.brokers)
	ctx := context.Background()

	d := newDeployment(t, bin, c.brokers)
	for _, r := range replicas {
		d.start(r)
	}
	d.submit(k)
	cat := topics.Catalog{Prefix: d.prefix, Partitions: 4}
	read := []string{cat.Topic(topics.Samples), cat.Topic(topics.Credited)}
	all := make([]string, 0, len(topics.All()))
	for _, n := range topics.All() {
		all = append(all, cat.Topic(n))
	}
	infos, err := pipeline.DescribeTopicNames(ctx, kc, all...)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.ReplicationFactor != 3 || in.MinInsyncReplicas != 2 {
			t.Fatalf("%s: replication %d, min.insync.replicas %d; want the cluster's 3 and 2", in.Name, in.ReplicationFactor, in.MinInsyncReplicas)
		}
	}

	trees := func() int {
		rows, _ := dataset.ReadDir(d.out)
		return dataset.Trees(rows)
	}
	// await polls cond until it holds, checking that every stage lives.
	await := func(what string, timeout time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			d.checkAlive()
			if time.Since(start) > timeout {
				t.Fatalf("%s: not within %s; logs in %s:\n%s", what, timeout, d.logs, d.tail())
			}
			time.Sleep(250 * time.Millisecond)
		}
		return time.Since(start)
	}
	progress := func(from int) func() bool { return func() bool { n := trees(); return n > from || n >= want } }
	await("first trees out", 5*time.Minute, progress(want/10))

	// Duplicates: records of every inner topic written again, as a write
	// retried after a lost acknowledgement lands. Every consumer must drop
	// them by id.
	dupTopics := []topics.Name{topics.Candidates, topics.Executions, topics.Samples, topics.Credited, topics.Completions, topics.Refinements}
	dups := map[topics.Name]int{}
	prod := pipeline.NewProducer(kc)
	for _, n := range dupTopics {
		var outs []pipeline.Out
		for p := 0; p < cat.Partitions; p++ {
			err := pipeline.ReadRange(ctx, kc, cat.Topic(n), p, 0, 3, func(r pipeline.Record) error {
				outs = append(outs, pipeline.Out{Topic: r.Topic, Key: string(r.Key), Value: r.Value, Headers: r.Headers, Partition: pipeline.ToPartition(r.Partition)})
				return nil
			})
			if err != nil {
				t.Fatalf("read %s/%d: %v", cat.Topic(n), p, err)
			}
		}
		if err := prod.Produce(ctx, outs...); err != nil {
			t.Fatal(err)
		}
		dups[n] = len(outs)
	}
	prod.Close()
	t.Logf("duplicates written: %v", dups)

	// The leader of most partitions credit and emit read.
	_, _, leads, err := partitionState(ctx, kc, read...)
	if err != nil {
		t.Fatal(err)
	}
	leader := 0
	for b, n := range leads {
		if leader == 0 || n > leads[leader] || n == leads[leader] && b < leader {
			leader = b
		}
	}
	paused := leader%3 + 1
	report := []string{}
	before := trees()
	t.Logf("kill -9 broker %d (leads %d of the %d partitions of %v; %d/%d trees out)", leader, leads[leader], 2*cat.Partitions, read, before, want)
	killedAt := time.Now()
	c.node("kill", leader)
	// Every stage started from now on names the dead broker first: a
	// process must bootstrap from any broker of its list.
	d.brokers = strings.Join(append([]string{c.brokers[leader-1]}, slices.DeleteFunc(slices.Clone(c.brokers), func(b string) bool {
		return b == c.brokers[leader-1]
	})...), ",")
	clusterNow := pipelinetest.Kafka(slices.DeleteFunc(slices.Clone(c.brokers), func(b string) bool {
		return b == c.brokers[leader-1]
	}))
	failover := await("leaders elected after the kill", 2*time.Minute, func() bool {
		_, _, leads, err := partitionState(ctx, clusterNow, all...)
		return err == nil && leads[leader] == 0
	})
	report = append(report, fmt.Sprintf("kill -9 broker %d (leader): every partition led by another broker after %s", leader, failover.Round(100*time.Millisecond)))
	flowing := await("trees out after the leader's kill", 3*time.Minute, progress(before))
	report = append(report, fmt.Sprintf("kill -9 broker %d: trees flowing again %s after the kill", leader, (time.Since(killedAt)).Round(100*time.Millisecond)))
	_ = flowing

	// Every stage killed with SIGKILL once, at random moments, and restarted
	// (with one broker down).
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	order := append([]string(nil), replicas...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, victim := range order {
		t.Logf("kill -9 %s (%d/%d trees out)", victim, trees(), want)
		d.kill9(victim)
		time.Sleep(time.Duration(200+rng.IntN(1000)) * time.Millisecond)
		d.start(victim)
		time.Sleep(time.Duration(200+rng.IntN(1000)) * time.Millisecond)
		d.checkAlive()
	}

	// Broker paused (with one down: no controller quorum, fewer in-sync
	// replicas than min.insync.replicas) and credit killed at once.
	before = trees()
	if before >= want {
		t.Errorf("the run finished before the broker pause (%d/%d trees out): the pause tested nothing", before, want)
	}
	t.Logf("SIGSTOP broker %d for 30 s, kill -9 credit#1 (%d/%d trees out)", paused, before, want)
	c.node("pause", paused)
	d.kill9("credit#1")
	d.start("credit#1")
	pauseEnd := time.Now().Add(30 * time.Second)
	for time.Now().Before(pauseEnd) {
		d.checkAlive()
		time.Sleep(time.Second)
	}
	c.node("resume", paused)
	led := await("leaders after the resume", 2*time.Minute, func() bool {
		leaderless, _, _, err := partitionState(ctx, clusterNow, all...)
		return err == nil && leaderless == 0
	})
	report = append(report, fmt.Sprintf("SIGSTOP broker %d for 30 s: every partition led %s after SIGCONT", paused, led.Round(100*time.Millisecond)))
	if trees() < want {
		again := await("trees out after the pause", 3*time.Minute, func() bool { return trees() > before || trees() >= want })
		report = append(report, fmt.Sprintf("SIGSTOP broker %d + kill -9 credit: trees flowing again %s after SIGCONT", paused, again.Round(100*time.Millisecond)))
	}

	// The killed broker restarts and catches up.
	restarted := time.Now()
	c.node("start", leader)
	ready := time.Since(restarted)
	synced := await("replicas in sync after the restart", 3*time.Minute, func() bool {
		leaderless, under, _, err := partitionState(ctx, kc, all...)
		return err == nil && leaderless == 0 && under == 0
	})
	report = append(report, fmt.Sprintf("restart of broker %d: serving %s after its start, every replica in sync %s after that",
		leader, ready.Round(100*time.Millisecond), synced.Round(100*time.Millisecond)))

	d.waitTrees(want, 10*time.Minute)
	d.checkAlive()
	if unclean := d.stopAll(); len(unclean) > 0 {
		t.Errorf("SIGTERM: %v did not finish and exit 0", unclean)
	}
	for _, r := range report {
		t.Log("recovery: " + r)
	}
	compareDirs(t, ref, d.out)
	rows, err := dataset.ReadDir(d.out)
	if err != nil {
		t.Fatal(err)
	}
	perTree := map[any]map[any]int{}
	for _, r := range rows {
		if perTree[r["tree_id"]] == nil {
			perTree[r["tree_id"]] = map[any]int{}
		}
		perTree[r["tree_id"]][r["node_id"]]++
	}
	for tree, nodes := range perTree {
		for node, n := range nodes {
			if n != 1 {
				t.Errorf("tree %v node %v: %d rows", tree, node, n)
			}
		}
	}
	dlq, _ := pipelinetest.ReadAll(ctx, c.brokers, cat.Topic(topics.DLQ), 1, 5*time.Second)
	for _, r := range dlq {
		t.Errorf("DLQ entry from the faults: %s", strings.TrimSpace(fmt.Sprint(r.Headers)))
	}
}
