package openai

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The scheduler gauges a server's metrics endpoint may expose, by what
// they measure: vLLM's V1 engine (vllm/v1/metrics/loggers.py, labels
// engine and model_name; vllm:gpu_cache_usage_perc is the name before
// vllm:kv_cache_usage_perc replaced it) and SGLang's
// (docs/references/production_metrics.md, with --enable-metrics).
var (
	loadRunning = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	loadWaiting = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	loadKV      = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
)

// errNoMetrics: the server has no metrics endpoint, or one without the
// scheduler's gauges.
var errNoMetrics = errors.New("no scheduler metrics")

// serverRoot is a server's root: its API root without a trailing /v1
// (vLLM and SGLang serve /metrics beside /v1, not under it).
func serverRoot(api string) string {
	return strings.TrimSuffix(strings.TrimRight(api, "/"), "/v1")
}

// startScrapeLocked starts s's metrics loop unless it runs or metrics are
// off.
func (p *Pool) startScrapeLocked(s *poolServer) {
	if s.scraping || p.pc.Limit.MetricsPath == "" || p.closed {
		return
	}
	s.scraping = true
	p.wg.Add(1)
	go p.scrapeLoop(s)
}

// scrapeLoop scrapes s's metrics every MetricsInterval and feeds its
// limit until s is removed or the pool closes. A server without metrics
// (404, no scheduler gauges) or that failed three scrapes in a row gets a
// throughput limit and is tried again with a backoff up to 30 s.
func (p *Pool) scrapeLoop(s *poolServer) {
	defer p.wg.Done()
	interval := p.pc.Limit.MetricsInterval
	wait, fails := time.Duration(0), 0
	for {
		t := time.NewTimer(wait)
		select {
		case <-p.done:
			t.Stop()
			return
		case <-t.C:
		}
		p.mu.Lock()
		if s.removed {
			s.scraping = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		load, err := p.scrape(s)
		p.mu.Lock()
		changed := false
		if err == nil {
			fails, wait = 0, interval
			s.load, s.loaded = load, true
			changed = s.lim.observe(load, s.inflight)
		} else {
			fails++
			wait = interval
			if errors.Is(err, errNoMetrics) || fails >= 3 {
				s.loaded = false
				s.lim.noMetrics(p.now())
				wait = min(30*time.Second, interval<<min(fails, 7))
			}
		}
		if changed {
			p.dispatchLocked()
		}
		p.mu.Unlock()
		if changed {
			p.notifyCapacity()
		}
	}
}

// scrape GETs s's metrics endpoint and reads the scheduler's load.
func (p *Pool) scrape(s *poolServer) (ServerLoad, error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(p.cc.Timeout, 5*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, serverRoot(s.url)+p.pc.Limit.MetricsPath, nil)
	if err != nil {
		return ServerLoad{}, err
	}
	if p.cc.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.cc.APIKey)
	}
	for k, v := range p.cc.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.http.Do(req)
	if err != nil {
		return ServerLoad{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return ServerLoad{}, errNoMetrics
	case resp.StatusCode/100 != 2:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return ServerLoad{}, fmt.Errorf("metrics: HTTP %d", resp.StatusCode)
	}
	return ParseLoad(io.LimitReader(resp.Body, 16<<20))
}

// ParseLoad reads a server's load from its metrics in the Prometheus text
// format: running and waiting sequences summed over the series (data
// parallel engines), KV cache usage the highest; series of a tensor or
// pipeline parallel rank other than 0 (SGLang's tp_rank, pp_rank) repeat
// rank 0's and are skipped. errNoMetrics when neither count is there.
func ParseLoad(r io.Reader) (ServerLoad, error) {
	load := ServerLoad{KVUsage: -1}
	found := false
	kv := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := parseSample(line)
		if !ok || labels["tp_rank"] != "" && labels["tp_rank"] != "0" || labels["pp_rank"] != "" && labels["pp_rank"] != "0" {
			continue
		}
		switch {
		case slices.Contains(loadRunning, name):
			load.Running += value
			found = true
		case slices.Contains(loadWaiting, name):
			load.Waiting += value
			found = true
		case slices.Contains(loadKV, name):
			if v, seen := kv[name]; !seen || value > v {
				kv[name] = value
			}
		}
	}
	if err := sc.Err(); err != nil {
		return ServerLoad{}, fmt.Errorf("metrics: %w", err)
	}
	if !found {
		return ServerLoad{}, errNoMetrics
	}
	for _, n := range loadKV { // the current name over the deprecated one
		if v, ok := kv[n]; ok {
			load.KVUsage = v
			break
		}
	}
	return load, nil
}

// parseSample splits one sample line, name{labels} value [timestamp].
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", nil, 0, false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		labels = map[string]string{}
		j := 1
		for {
			for j < len(rest) && (rest[j] == ' ' || rest[j] == ',') {
				j++
			}
			if j >= len(rest) {
				return "", nil, 0, false
			}
			if rest[j] == '}' {
				rest = rest[j+1:]
				break
			}
			eq := strings.IndexByte(rest[j:], '=')
			if eq < 0 || j+eq+1 >= len(rest) || rest[j+eq+1] != '"' {
				return "", nil, 0, false
			}
			key := strings.TrimSpace(rest[j : j+eq])
			k := j + eq + 2
			var b strings.Builder
			for k < len(rest) && rest[k] != '"' {
				if rest[k] == '\\' && k+1 < len(rest) {
					k++
				}
				b.WriteByte(rest[k])
				k++
			}
			if k >= len(rest) {
				return "", nil, 0, false
			}
			labels[key] = b.String()
			j = k + 1
		}
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}
