package fakeserver

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
)

// LoRA adapters loaded at run time, answered as vLLM 0.8 answers them
// (vllm/entrypoints/openai/serving_models.py and serving_engine.py, run
// with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True):
//
//   - POST /v1/load_lora_adapter {"lora_name", "lora_path"}: 200 with the
//     text "Success: LoRA adapter '<name>' added successfully."; 400
//     InvalidUserInput "Both 'lora_name' and 'lora_path' must be
//     provided."; 400 InvalidUserInput "The lora adapter '<name>' has
//     already been loaded."; a path that is no adapter: 404 NotFoundError
//     when nothing is there ("No adapter found for <path>"), else 400
//     BadRequestError with the loader's message.
//   - POST /v1/unload_lora_adapter {"lora_name"}: 200 "Success: LoRA
//     adapter '<name>' removed successfully."; 404 NotFoundError "The lora
//     adapter '<name>' cannot be found.".
//   - A request naming a model that is neither the base model nor a
//     loaded adapter: 404 NotFoundError "The model `<name>` does not
//     exist.".
//
// Errors are vLLM's ErrorResponse: {"object": "error", "message", "type",
// "param": null, "code"}.

// serves says whether a request naming model is answered.
func (s *Server) serves(model string) bool {
	if !s.cfg.LoRA || model == "" || model == s.cfg.Name {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.adapters[model]
	return ok
}

func vllmError(w http.ResponseWriter, code int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": msg, "type": kind, "param": nil, "code": code})
}

// checkAdapter is vLLM's check of an adapter directory: a PEFT LoRA
// adapter (adapter_config.json and adapter_model.safetensors), then the
// Config's own check.
func (s *Server) checkAdapter(path string) (int, string) {
	if _, err := os.Stat(filepath.Join(path, "adapter_config.json")); err != nil {
		return http.StatusNotFound, "No adapter found for " + path
	}
	if _, err := os.Stat(filepath.Join(path, "adapter_model.safetensors")); err != nil {
		return http.StatusBadRequest, "Loading lora " + path + " failed: No adapter_model.safetensors found"
	}
	if s.cfg.CheckAdapter != nil {
		if err := s.cfg.CheckAdapter(path); err != nil {
			return http.StatusBadRequest, "Loading lora " + path + " failed: " + err.Error()
		}
	}
	return http.StatusOK, ""
}

func (s *Server) loadAdapter(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.Name == "" || req.Path == "" {
		vllmError(w, http.StatusBadRequest, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.")
		return
	}
	s.mu.Lock()
	_, dup := s.adapters[req.Name]
	s.mu.Unlock()
	if dup {
		vllmError(w, http.StatusBadRequest, "InvalidUserInput", "The lora adapter '"+req.Name+"' has already been loaded.")
		return
	}
	if code, msg := s.checkAdapter(req.Path); code != http.StatusOK {
		kind := "BadRequestError"
		if code == http.StatusNotFound {
			kind = "NotFoundError"
		}
		vllmError(w, code, kind, msg)
		return
	}
	s.mu.Lock()
	s.adapters[req.Name] = req.Path
	s.stats.Loads = append(s.stats.Loads, req.Name)
	s.stats.MaxLoaded = max(s.stats.MaxLoaded, len(s.adapters))
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("Success: LoRA adapter '" + req.Name + "' added successfully."))
}

func (s *Server) unloadAdapter(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	_, ok := s.adapters[req.Name]
	if ok {
		delete(s.adapters, req.Name)
		s.stats.Unloads = append(s.stats.Unloads, req.Name)
	}
	s.mu.Unlock()
	if !ok {
		vllmError(w, http.StatusNotFound, "NotFoundError", "The lora adapter '"+req.Name+"' cannot be found.")
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("Success: LoRA adapter '" + req.Name + "' removed successfully."))
}
