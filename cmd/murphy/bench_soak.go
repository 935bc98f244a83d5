package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/murphy-rl/murphy/stages"
)

// soakConfig is `murphy bench soak`.
type soakConfig struct {
	Brokers      []string
	Duration     time.Duration
	SubmitEvery  time.Duration
	TreesPerTask int
	GroupSizes   string
	MaxTurns     int
	Tasks        string
	RestartEvery time.Duration
	Script       string
	SampleEvery  time.Duration
	Out          string
}

func newBenchSoakCmd() *cobra.Command {
	sc := soakConfig{Duration: 30 * time.Minute, SubmitEvery: 20 * time.Second, TreesPerTask: 1, GroupSizes: "2", MaxTurns: 2,
		Tasks: "tasks/builtin/tasks.jsonl", RestartEvery: 10 * time.Minute, Script: "deploy/kafka/kafka.sh", SampleEvery: time.Minute}
	if v := os.Getenv("MURPHY_KAFKA_BROKERS"); v != "" {
		sc.Brokers = strings.Split(v, ",")
	}
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run the pipeline at a sustained rate on the local cluster with broker restarts; print each stage's RSS, goroutines and lag per minute and their slopes",
		Long: `Starts every stage as its own process (the simulated policy, the built-in
python-function and stdio tasks) on the brokers (the local three-broker
cluster: deploy/kafka/kafka.sh cluster start; export $(deploy/kafka/kafka.sh
cluster env)), submits --trees-per-task trees of every task each
--submit-every, and restarts one broker every --restart-every (kafka.sh
cluster stop N, then start N; nodes in turn). Every --sample-every it prints,
per stage, the resident memory, the goroutines and the consumer group's lag
(murphy_consumer_lag summed over its inputs' partitions, read from the
stage's /metrics), and at the end the least-squares slope of each per hour
and the lag a minute after each restart against the lag before it. Not a
test: run it by hand (BENCHMARKS.md).`,
		Example: `  deploy/kafka/kafka.sh cluster start && export $(deploy/kafka/kafka.sh cluster env)
  murphy bench soak --duration 30m --restart-every 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(sc.Brokers) == 0 {
				return &exitError{code: 2, err: errors.New("bench soak: --brokers (or MURPHY_KAFKA_BROKERS) is required")}
			}
			if sc.Duration <= 0 || sc.SubmitEvery <= 0 || sc.SampleEvery <= 0 || sc.TreesPerTask < 1 {
				return &exitError{code: 2, err: errors.New("bench soak: --duration, --submit-every, --sample-every must be > 0 and --trees-per-task >= 1")}
			}
			return runSoak(cmd.Context(), cmd.OutOrStdout(), sc)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&sc.Brokers, "brokers", sc.Brokers, "Kafka brokers (default $MURPHY_KAFKA_BROKERS)")
	f.DurationVar(&sc.Duration, "duration", sc.Duration, "how long the soak runs")
	f.DurationVar(&sc.SubmitEvery, "submit-every", sc.SubmitEvery, "a submission of every task this often (the sustained rate)")
	f.IntVar(&sc.TreesPerTask, "trees-per-task", sc.TreesPerTask, "trees per task of each submission")
	f.StringVar(&sc.GroupSizes, "group-sizes", sc.GroupSizes, "children sampled per turn (submit --group-sizes)")
	f.IntVar(&sc.MaxTurns, "max-turns", sc.MaxTurns, "turns per tree (submit --max-turns)")
	f.StringVar(&sc.Tasks, "tasks", sc.Tasks, "task file")
	f.DurationVar(&sc.RestartEvery, "restart-every", sc.RestartEvery, "restart one broker this often (0: never)")
	f.StringVar(&sc.Script, "kafka-script", sc.Script, "the cluster script (kafka.sh cluster stop|start N)")
	f.DurationVar(&sc.SampleEvery, "sample-every", sc.SampleEvery, "how often the stages are sampled")
	f.StringVar(&sc.Out, "out", "", "emit's directory (default: a temporary one, removed at the end)")
	return cmd
}

type soakStage struct {
	name string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// soakSample is one stage at one moment.
type soakSample struct {
	at         time.Duration
	rss        float64 // MB
	goroutines float64
	lag        float64
	trees      float64 // emitted so far (emit only)
}

func soakAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// lockedWriter serialises the lines of the soak's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// startSoakStages starts every stage as its own process (`murphy stage`)
// on brokers under prefix, each logging to logs; on an error it returns the
// processes started so far with it.
func startSoakStages(bin, brokers, prefix, dir, logs string) ([]*soakStage, error) {
	var procs []*soakStage
	for _, name := range stages.Names() {
		addr, err := soakAddr()
		if err != nil {
			return procs, err
		}
		args := []string{"stage", name, "--kafka.brokers", brokers, "--topics.prefix", prefix, "--topics.partitions", "4",
			"--log_level", "warn", "--http_addr", addr}
		if name == "emit" {
			args = append(args, "--emit.dir", filepath.Join(dir, "data"))
		}
		lf, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			return procs, err
		}
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = lf, lf
		if err := c.Start(); err != nil {
			lf.Close()
			return procs, err
		}
		p := &soakStage{name: name, addr: addr, cmd: c, done: make(chan struct{})}
		go func() { _ = c.Wait(); lf.Close(); close(p.done) }()
		procs = append(procs, p)
	}
	return procs, nil
}

// stopSoakStages stops the stages (SIGTERM, then SIGKILL after 30 s).
func stopSoakStages(procs []*soakStage) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	}
}

// soakSubmit submits every task once more (submission n: its run id and
// seed), reporting a failure on w.
func soakSubmit(ctx context.Context, w io.Writer, bin, brokers, prefix string, sc soakConfig, n int) {
	c := exec.CommandContext(ctx, bin, "submit", "--tasks", sc.Tasks, "--brokers", brokers, "--topic-prefix", prefix,
		"--partitions", "4", "--run-id", fmt.Sprintf("soak-%d", n), "--seed", strconv.Itoa(n),
		"--trees-per-task", strconv.Itoa(sc.TreesPerTask), "--group-sizes", sc.GroupSizes,
		"--max-turns", strconv.Itoa(sc.MaxTurns), "--calibrate=false")
	if b, err := c.CombinedOutput(); err != nil && ctx.Err() == nil {
		fmt.Fprintf(w, "submit %d: %v\n%s\n", n, err, lastLine(string(b)))
	}
}

func runSoak(ctx context.Context, out io.Writer, sc soakConfig) error {
	w := &lockedWriter{w: out}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	dir := sc.Out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "murphy-soak-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	prefix := fmt.Sprintf("soak-%d.", time.Now().Unix())
	brokers := strings.Join(sc.Brokers, ",")
	procs, err := startSoakStages(bin, brokers, prefix, dir, logs)
	defer stopSoakStages(procs)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "soak: %s, a submission of every task (%d tree(s) each, group sizes %s, %d turns) every %s, a broker restart every %s, stages' logs in %s\n",
		sc.Duration, sc.TreesPerTask, sc.GroupSizes, sc.MaxTurns, sc.SubmitEvery, sc.RestartEvery, logs)

	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, sc.Duration)
	defer cancel()
	submitT := time.NewTicker(sc.SubmitEvery)
	defer submitT.Stop()
	sampleT := time.NewTicker(sc.SampleEvery)
	defer sampleT.Stop()
	var restartC <-chan time.Time
	if sc.RestartEvery > 0 {
		rt := time.NewTicker(sc.RestartEvery)
		defer rt.Stop()
		restartC = rt.C
	}
	submissions, restarts := 0, []time.Duration{}
	series := map[string][]soakSample{}
	submissions++
	soakSubmit(ctx, w, bin, brokers, prefix, sc, submissions)
	for {
		select {
		case <-ctx.Done():
			report(w, series, restarts)
			return nil
		case <-submitT.C:
			submissions++
			go soakSubmit(ctx, w, bin, brokers, prefix, sc, submissions)
		case <-restartC:
			node := len(restarts)%3 + 1
			at := time.Since(start)
			if sc.Duration-at < 2*sc.SampleEvery {
				continue // too late to see the recovery
			}
			restarts = append(restarts, at)
			fmt.Fprintf(w, "%6s  restart of broker %d\n", at.Round(time.Second), node)
			// In the background: sampling goes on while the broker restarts.
			go func() {
				for _, verb := range []string{"stop", "start"} {
					if b, err := exec.CommandContext(ctx, sc.Script, "cluster", verb, strconv.Itoa(node)).CombinedOutput(); err != nil && ctx.Err() == nil {
						fmt.Fprintf(w, "cluster %s %d: %v\n%s\n", verb, node, err, lastLine(string(b)))
					}
				}
				fmt.Fprintf(w, "%6s  broker %d serving again\n", time.Since(start).Round(time.Second), node)
			}()
		case <-sampleT.C:
			if ctx.Err() != nil {
				continue // the end: reported above
			}
			at := time.Since(start)
			for _, p := range procs {
				select {
				case <-p.done:
					return fmt.Errorf("bench soak: stage %s exited at %s (log %s)", p.name, at.Round(time.Second), filepath.Join(logs, p.name+".log"))
				default:
				}
				s, err := scrape(ctx, p.addr)
				if err != nil && ctx.Err() != nil {
					break // the soak ended during the scrape
				}
				if err != nil {
					fmt.Fprintf(w, "%6s  %-8s scrape: %v\n", at.Round(time.Second), p.name, err)
					continue
				}
				s.at = at
				series[p.name] = append(series[p.name], s)
				trees := ""
				if p.name == "emit" {
					trees = fmt.Sprintf("  trees out %6.0f", s.trees)
				}
				fmt.Fprintf(w, "%6s  %-8s rss %7.1f MB  goroutines %5.0f  lag %7.0f%s\n", at.Round(time.Second), p.name, s.rss, s.goroutines, s.lag, trees)
			}
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// scrape reads a stage's resident memory, goroutines and summed lag.
func scrape(ctx context.Context, addr string) (soakSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return soakSample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return soakSample{}, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return soakSample{}, err
	}
	var s soakSample
	if f := fams["process_resident_memory_bytes"]; f != nil && len(f.Metric) > 0 {
		s.rss = f.Metric[0].GetGauge().GetValue() / (1 << 20)
	}
	if f := fams["go_goroutines"]; f != nil && len(f.Metric) > 0 {
		s.goroutines = f.Metric[0].GetGauge().GetValue()
	}
	if f := fams["murphy_emit_trees_total"]; f != nil {
		for _, m := range f.Metric {
			s.trees += m.GetCounter().GetValue()
		}
	}
	if f := fams["murphy_consumer_lag"]; f != nil {
		for _, m := range f.Metric {
			s.lag += m.GetGauge().GetValue()
		}
	}
	return s, nil
}

// slope is the least-squares slope of ys over xs (hours).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func report(w io.Writer, series map[string][]soakSample, restarts []time.Duration) {
	fmt.Fprintln(w, "\nslopes per hour (least squares; the first sample, the start-up, left out; then over the second half alone):")
	for _, name := range stages.Names() {
		ss := series[name]
		if len(ss) > 1 {
			ss = ss[1:]
		}
		all := slopes(ss)
		half := slopes(ss[len(ss)/2:])
		fmt.Fprintf(w, "  %-8s rss %+8.1f MB/h (%+8.1f)  goroutines %+8.1f /h (%+8.1f)  lag %+8.1f /h (%+8.1f)  %d samples\n",
			name, all[0], half[0], all[1], half[1], all[2], half[2], len(ss))
	}
	if ss := series["emit"]; len(ss) > 1 {
		first, last := ss[0], ss[len(ss)-1]
		fmt.Fprintf(w, "emitted %.0f trees, %.1f trees/min after the first sample\n", last.trees,
			(last.trees-first.trees)/(last.at-first.at).Minutes())
	}
	for _, r := range restarts {
		before, _ := lagSum(series, func(at time.Duration) bool { return at < r }, "last")
		peak, _ := lagSum(series, func(at time.Duration) bool { return at > r && at <= r+time.Minute }, "peak")
		after, ok := lagSum(series, func(at time.Duration) bool { return at >= r+time.Minute }, "first")
		a := "(no sample)"
		if ok {
			a = strconv.FormatFloat(after, 'f', 0, 64)
		}
		fmt.Fprintf(w, "restart at %s: lag (all stages) %0.f before, at most %.0f within the minute after, %s a minute after\n",
			r.Round(time.Second), before, peak, a)
	}
}

// slopes are the least-squares slopes per hour of RSS, goroutines and lag.
func slopes(ss []soakSample) [3]float64 {
	var xs, rss, gr, lag []float64
	for _, s := range ss {
		xs = append(xs, s.at.Hours())
		rss, gr, lag = append(rss, s.rss), append(gr, s.goroutines), append(lag, s.lag)
	}
	return [3]float64{slope(xs, rss), slope(xs, gr), slope(xs, lag)}
}

// lagSum sums every stage's lag in each sample round whose time is in, and
// returns that of the last round, the first, or the greatest (pick: "last",
// "first", "peak").
func lagSum(series map[string][]soakSample, in func(time.Duration) bool, pick string) (float64, bool) {
	byRound := map[time.Duration]float64{}
	var rounds []time.Duration
	for _, ss := range series {
		for _, s := range ss {
			if in(s.at) {
				if _, ok := byRound[s.at]; !ok {
					rounds = append(rounds, s.at)
				}
				byRound[s.at] += s.lag
			}
		}
	}
	if len(rounds) == 0 {
		return 0, false
	}
	slices.Sort(rounds)
	switch pick {
	case "last":
		return byRound[rounds[len(rounds)-1]], true
	case "first":
		return byRound[rounds[0]], true
	}
	peak := 0.0
	for _, r := range rounds {
		peak = max(peak, byRound[r])
	}
	return peak, true
}
