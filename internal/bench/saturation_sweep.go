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
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// sweepAll measures every server's peak at once: a direct sweep of
// concurrency (1, 2, 4, ... requests of one sample in flight, each level
// for sc.Level after a warm-up of a quarter of it), until two doublings
// in a row gain less than 3%.
func sweepAll(ctx context.Context, servers []*fakeserver.Server, sc SaturationConfig, ts []topics.Task, runs []ServerRun) error {
	var prompts []string
	for i := range ts {
		prompts = append(prompts, submit.RootPromptText(&ts[i]))
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i].Sweep, errs[i] = sweep(ctx, s.URL(), sc, prompts)
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

func sweep(ctx context.Context, root string, sc SaturationConfig, prompts []string) ([]SweepPoint, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	defer client.CloseIdleConnections()
	var out []SweepPoint
	best, flat := 0.0, 0
	for c := 1; c <= 1024 && flat < 2; c *= 2 {
		rate, err := level(ctx, client, root, c, sc, prompts)
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

// level keeps c requests in flight on root and returns the requests
// completed per second after a warm-up of one round (c completions),
// measured for at least sc.Level and two more rounds.
func level(ctx context.Context, client *http.Client, root string, c int, sc SaturationConfig, prompts []string) (float64, error) {
	var done atomic.Int64
	var stop atomic.Bool
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; !stop.Load() && ctx.Err() == nil; k++ {
				if err := chat(ctx, client, root, prompts[(w+k)%len(prompts)], sc.Tokens); err != nil {
					once.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				done.Add(1)
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
	t0, n0 := time.Now(), done.Load()
	if err := wait(func() bool { return time.Since(t0) >= sc.Level && done.Load()-n0 >= int64(2*c) }); err != nil {
		return 0, err
	}
	return float64(done.Load()-n0) / time.Since(t0).Seconds(), nil
}

// chat is one plain chat completion request of one sample.
func chat(ctx context.Context, client *http.Client, root, prompt string, tokens int) error {
	body, err := json.Marshal(map[string]any{"model": "fake", "messages": []map[string]string{{"role": "user", "content": prompt}},
		"max_tokens": tokens, "temperature": 1})
	if err != nil {
		return err
	}
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
			}
			if k++; k == 20 {
				for i := range servers {
					runs[i].Timeline = append(runs[i].Timeline, sums[i]/20)
					sums[i] = 0
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
			case "murphy_generate_server_routed_total":
				s.Routed[labels["how"]] += m.GetCounter().GetValue()
			}
		}
	}
}
