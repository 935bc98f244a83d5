package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/murphy-rl/murphy/openai/fakeserver"
)

var loopDefRE = regexp.MustCompile(`def (\w+)\(`)

func byteTokens(s string) []int {
	ids := make([]int, len(s))
	for i := range len(s) {
		ids[i] = int(s[i]) + 1
	}
	return ids
}

// checkPEFTAdapter checks what vLLM checks of a LoRA adapter before it
// loads one (vllm/lora/peft_helper.py): adapter_config.json of a PEFT LoRA
// with its rank within --max-lora-rank (64 here) and target modules, and
// adapter_model.safetensors holding the lora_A/lora_B weights of those
// modules (its header: an 8-byte little-endian length, then JSON).
func checkPEFTAdapter(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return err
	}
	var cfg struct {
		PeftType      string   `json:"peft_type"`
		R             int      `json:"r"`
		LoraAlpha     float64  `json:"lora_alpha"`
		TargetModules []string `json:"target_modules"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("adapter_config.json: %w", err)
	}
	if cfg.PeftType != "LORA" || cfg.R < 1 || cfg.R > 64 || len(cfg.TargetModules) == 0 {
		return fmt.Errorf("adapter_config.json: peft_type %q, r %d, target_modules %v: not a LoRA adapter vLLM takes", cfg.PeftType, cfg.R, cfg.TargetModules)
	}
	f, err := os.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return err
	}
	defer f.Close()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil || n > 1<<24 {
		return fmt.Errorf("adapter_model.safetensors: no header (%v)", err)
	}
	header := make([]byte, n)
	if _, err := f.Read(header); err != nil {
		return err
	}
	var tensors map[string]json.RawMessage
	if err := json.Unmarshal(header, &tensors); err != nil {
		return fmt.Errorf("adapter_model.safetensors header: %w", err)
	}
	var a, bb int
	for name := range tensors {
		a += strings.Count(name, "lora_A")
		bb += strings.Count(name, "lora_B")
	}
	if a == 0 || a != bb {
		return errors.New("adapter_model.safetensors: no lora_A/lora_B weight pairs")
	}
	return nil
}

// loopServers are the two inference servers of the loop: vLLM-like
// (fakeserver with LoRA: only the base model and the adapters loaded
// answer), answering the loop's tasks right or wrong with probability
// 1/2, every answer saying which model wrote it, in byte tokens.
func loopServers(t *testing.T, base string) []*fakeserver.Server {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 7))
	answer := func(model, prompt string, _ int) string {
		name := ""
		if m := loopDefRE.FindStringSubmatch(prompt); m != nil {
			name = m[1]
		}
		mu.Lock()
		right := rng.IntN(2) == 0
		mu.Unlock()
		body := "return None"
		for _, lt := range loopTasks {
			if lt.name == name {
				body = lt.wrong
				if right {
					body = lt.right
				}
			}
		}
		return fmt.Sprintf("```python\n# answered by %s\ndef %s(a, b):\n    %s\n```", model, name, body)
	}
	var out []*fakeserver.Server
	for range 2 {
		s, err := fakeserver.Start(fakeserver.Config{Name: base, MaxSeqs: 64, TokenRate: 20000, Tokens: 128, LoRA: true,
			CheckAdapter: checkPEFTAdapter, Answer: answer, Tokenize: byteTokens})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		out = append(out, s)
	}
	return out
}
