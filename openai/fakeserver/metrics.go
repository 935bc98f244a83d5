package fakeserver

import (
	"fmt"
	"net/http"
	"strings"
)

// metrics answers GET /metrics (at the server's root, beside /v1, as vLLM
// serves it) in the Prometheus text format with the scheduler gauges of
// vLLM's V1 engine, named and labelled as vLLM 0.11 exposes them
// (vllm/v1/metrics/loggers.py; docs/usage/metrics.md, "Production
// Metrics"):
//
//	vllm:num_requests_running{engine="0",model_name="…"}  sequences decoding
//	vllm:num_requests_waiting{engine="0",model_name="…"}  sequences queued
//	vllm:kv_cache_usage_perc{engine="0",model_name="…"}   KV cache used, 0–1
//
// vLLM's V1 engine splits a request for n samples into n sequences, so
// the counts are sequences here too. With the fixed-capacity model the KV
// cache usage is the share of the MaxSeqs slots in use. Config.NoMetrics
// turns the endpoint off (404, as a server started without metrics).
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	if s.isFailing() {
		http.Error(w, "failing", http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	running, waiting := s.active, len(s.queue)+len(s.eng.waiting)
	var usage float64
	if s.cfg.Engine.Step > 0 {
		usage = float64(s.eng.kvUsed) / float64(s.cfg.Engine.KVTokens)
	} else {
		usage = float64(s.active) / float64(s.cfg.MaxSeqs)
	}
	s.mu.Unlock()
	labels := fmt.Sprintf(`{engine="0",model_name=%q}`, s.cfg.Name)
	var b strings.Builder
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s%s %g\n", name, help, name, name, labels, v)
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}
