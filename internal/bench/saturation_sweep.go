package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/murphy-rl/murphy/openai/fakeserver"
)

// sweepAll measures every server's peak at once: a direct sweep of
// concurrency (1, 2, 4, ... requests in flight, each level for sc.Level
// after a warm-up of one round), until sc.SweepFlat doublings in a row gain
// less than 3%. The requests are bodies, the pipeline run's own chat
// requests as the servers received them (root groups and refinements,
// their n samples each), replayed in order by plain HTTP; the rate counts
// sequences.
func sweepAll(ctx context.Context, servers []*fakeserver.Server, sc SaturationConfig, bodies [][]byte, runs []ServerRun) error {
	if len(bodies) == 0 {
		return errors.New("no requests to replay")
	}
	reqs := make([]replay, len(bodies))
	for i, b := range bodies {
		var r struct {
			N int `json:"n"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("recorded request: %w", err)
		}
		reqs[i] = replay{body: b, seqs: max(r.N, 1)}
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i].Sweep, errs[i] = sweep(ctx, s.URL(), sc, reqs)
			for _, p := range runs[i].Sweep {
				if p.Rate > runs[i].Peak {
					runs[i].Peak, runs[i].PeakAt = p.Rate, p.Concurrency
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// replay is one recorded request: its body and its sequences.
type replay struct {
	body []byte
	seqs int
}

func sweep(ctx context.Context, root string, sc SaturationConfig, reqs []replay) ([]SweepPoint, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	defer client.CloseIdleConnections()
	var out []SweepPoint
	best, flat := 0.0, 0
	var next atomic.Int64
	for c := 1; c <= 1024 && flat < sc.SweepFlat; c *= 2 {
		rate, err := level(ctx, client, root, c, sc, reqs, &next)
		if err != nil {
			return out, err
		}
		out = append(out, SweepPoint{Concurrency: c, Rate: rate})
		if rate > best*1.03 || best == 0 {
			best, flat = rate, 0
		} else {
			flat++
		}
	}
	return out, nil
}

// level keeps c requests in flight on root (the next of reqs, in order,
// cycling) and returns the sequences completed per second after a
// warm-up of one round (c requests), measured for at least sc.Level and
// two more rounds.
func level(ctx context.Context, client *http.Client, root string, c int, sc SaturationConfig, reqs []replay, next *atomic.Int64) (float64, error) {
	var done, seqs atomic.Int64
	var stop atomic.Bool
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				r := reqs[int(next.Add(1)-1)%len(reqs)]
				if err := post(ctx, client, root, r.body); err != nil {
					once.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				done.Add(1)
				seqs.Add(int64(r.seqs))
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	wait := func(cond func() bool) error {
		for !cond() {
			if stop.Load() || ctx.Err() != nil {
				return errors.Join(firstErr, ctx.Err())
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	if err := wait(func() bool { return done.Load() >= int64(c) }); err != nil {
		return 0, err
	}
	t0, n0, s0 := time.Now(), done.Load(), seqs.Load()
	if err := wait(func() bool { return time.Since(t0) >= sc.Level && done.Load()-n0 >= int64(2*c) }); err != nil {
		return 0, err
	}
	return float64(seqs.Load()-s0) / time.Since(t0).Seconds(), nil
}

// post is one plain chat completion request of a recorded body.
func post(ctx context.Context, client *http.Client, root string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// sampleServers samples the servers' sequences in flight every 50 ms into
// runs' timelines until the returned func is called.
func sampleServers(servers []*fakeserver.Server, runs []ServerRun) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		sums := make([]float64, len(servers))
		waits := make([]float64, len(servers))
		samples := make([]int, len(servers))
		queued := make([]int, len(servers))
		k := 0
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for i, s := range servers {
				st := s.Stats()
				sums[i] += float64(st.Active + st.Queued)
				waits[i] += float64(st.Queued)
				samples[i]++
				if st.Queued > 0 {
					queued[i]++
				}
				runs[i].Queued = float64(queued[i]) / float64(samples[i])
			}
			if k++; k == 20 {
				for i := range servers {
					runs[i].Timeline = append(runs[i].Timeline, sums[i]/20)
					runs[i].Waiting = append(runs[i].Waiting, waits[i]/20)
					sums[i], waits[i] = 0, 0
				}
				k = 0
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// poolMetrics reads the pool's last limits and routing from the pipeline's
// registry.
func (r *SaturationResult) poolMetrics() {
	if r.Pipeline.reg == nil {
		return
	}
	mfs, err := r.Pipeline.reg.Gather()
	if err != nil {
		return
	}
	by := map[string]*ServerRun{}
	for i := range r.Servers {
		by[r.Servers[i].URL] = &r.Servers[i]
		r.Servers[i].Routed = map[string]float64{}
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s := by[labels["server"]]
			if s == nil {
				continue
			}
			switch mf.GetName() {
			case "murphy_generate_server_limit":
				s.Limit = m.GetGauge().GetValue()
			case "murphy_generate_server_limit_from_metrics":
				s.FromMetrics = m.GetGauge().GetValue() == 1
			case "murphy_generate_server_routed_total":
				s.Routed[labels["how"]] += m.GetCounter().GetValue()
			}
		}
	}
}
