package fakeserver

import (
	"context"
	"encoding/json"
	"net/http"
)

// Full weights updated at run time, answered as SGLang answers them
// (docs/advanced_features/sglang_for_rl.md: "pause_generation — update
// weights — continue_generation is the correct execution flow when
// updating weights from training"):
//
//   - POST /pause_generation {"mode"}: "abort" (the default) returns the
//     requests in flight at once, each choice with what it had decoded
//     and finish_reason "abort" (Server.response); "retract" and
//     "in_place" put the engine in a paused state: new requests wait.
//   - POST /continue_generation: ends the paused state.
//   - POST /update_weights_from_disk {"model_path", "weight_version", ...}:
//     {"success", "message", "num_paused_requests"}; the weights then
//     answer under every model name, labelled weight_version.
//
// A request answered by other weights than those it started with counts
// in Stats.Straddled: the update the protocol exists to prevent.

// waitUnpaused waits while generation is paused.
func (s *Server) waitUnpaused(ctx context.Context) error {
	for {
		s.mu.Lock()
		p := s.paused
		s.mu.Unlock()
		if p == nil {
			return nil
		}
		select {
		case <-p:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) pauseGeneration(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Mode string `json:"mode"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	if req.Mode == "" || req.Mode == "abort" {
		close(s.abort)
		s.abort = make(chan struct{})
	} else if s.paused == nil {
		s.paused = make(chan struct{})
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"success": true, "message": "Generation paused."})
}

func (s *Server) continueGeneration(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	if s.paused != nil {
		close(s.paused)
		s.paused = nil
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"success": true, "message": "Generation continued."})
}

func (s *Server) updateWeights(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ModelPath     string `json:"model_path"`
		WeightVersion string `json:"weight_version"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ModelPath == "" {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"success": false, "message": "model_path is required", "num_paused_requests": 0})
		return
	}
	if s.cfg.CheckAdapter != nil {
		if err := s.cfg.CheckAdapter(req.ModelPath); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"success": false, "message": "Failed to update weights: " + err.Error(), "num_paused_requests": 0})
			return
		}
	}
	s.mu.Lock()
	s.weights = req.WeightVersion
	s.stats.Loads = append(s.stats.Loads, req.WeightVersion)
	s.mu.Unlock()
	writeJSON(w, map[string]any{"success": true, "message": "Succeeded to update model weights.", "num_paused_requests": 0})
}

// WeightsVersion is the weights' version label (Weights; "" before any
// update).
func (s *Server) WeightsVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.weights
}
