package govern

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/murphy-rl/murphy/topics"
)

// ChatModel is what govern needs from an OpenAI-compatible chat endpoint:
// one completion of a conversation, deterministic settings (temperature 0,
// a bounded max_tokens) chosen by the implementation. Retries of transient
// failures belong to the implementation; an error returned here is final.
// OpenAIChat adapts the shared openai client.
type ChatModel interface {
	Chat(ctx context.Context, messages []topics.Message) (string, error)
}

// ErrUnparsable marks an LLM answer that does not follow the required
// output format.
var ErrUnparsable = errors.New("unparsable answer")

// DefaultJudgeRubric is the LLM judge's system prompt.
const DefaultJudgeRubric = `You are a strict reviewer of programs written for programming tasks.
Decide whether the candidate program is a semantically correct solution of the task.

Rubric:
- "correct": it implements what the task asks for all valid inputs, including edge cases the task implies; for a repair task, the patch fixes the cause of the failure without deleting, disabling or special-casing the failing code or its tests.
- "incorrect": anything else, including solutions that only work for the shown examples, hard-code expected outputs, or suppress errors instead of fixing them.
- "unsure": you cannot decide from the task, the reference (when one is shown) and the program, for example because the outcome depends on a requirement the task leaves open. Do not use it to avoid reading the program.
Style, naming and efficiency do not matter unless the task asks for them. A reference, when shown, is one correct solution; others may be correct too. The execution summary reports what running the visible tests showed; it may be incomplete.

Answer with exactly one JSON object and nothing else:
{"verdict": "correct" | "incorrect" | "unsure", "reason": "<one sentence>"}`

// DefaultScorerRubric is the LLM step scorer's system prompt.
const DefaultScorerRubric = `You rate the steps of an agent's attempt at a programming task.
Each step is one action of the agent (for example reading a file, editing a file, running a command) with the reasoning before it.

Give every step a score between 0 and 1:
- 1: the step makes progress: it gathers information not seen before, makes a needed change, or checks a change.
- about 0.5: the step is plausible but adds little.
- 0: the step is wasted: it repeats an earlier inspection without a change in between, makes an edit that changes nothing, undoes an earlier step, or is unrelated to the task.

Answer with exactly one JSON object and nothing else, one score per step, in order:
{"scores": [<score of step 1>, <score of step 2>, ...]}`

// cache is a bounded LRU of results keyed by string, with in-flight
// deduplication: concurrent callers of one key share one computation.
type cache[V any] struct {
	mu       sync.Mutex
	capacity int
	ll       *list.List
	items    map[string]*list.Element
	inflight map[string]*call[V]
}

type entry[V any] struct {
	key string
	val V
}

type call[V any] struct {
	done chan struct{}
	val  V
	err  error
}

func newCache[V any](capacity int) *cache[V] {
	return &cache[V]{capacity: capacity, ll: list.New(), items: map[string]*list.Element{}, inflight: map[string]*call[V]{}}
}

// do returns the cached value of key or computes it with fn. Errors are not
// cached. hit reports whether the value came from the cache or another
// caller's computation.
func (c *cache[V]) do(ctx context.Context, key string, fn func() (V, error)) (v V, hit bool, err error) {
	c.mu.Lock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		v = el.Value.(*entry[V]).val
		c.mu.Unlock()
		return v, true, nil
	}
	if cl, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-cl.done:
		case <-ctx.Done():
			return v, false, ctx.Err()
		}
		if cl.err == nil {
			return cl.val, true, nil
		}
		// The other caller failed (perhaps only its own context ended):
		// compute for this caller, without sharing.
		v, err = fn()
		return v, false, err
	}
	cl := &call[V]{done: make(chan struct{})}
	c.inflight[key] = cl
	c.mu.Unlock()

	cl.val, cl.err = fn()

	c.mu.Lock()
	delete(c.inflight, key)
	if cl.err == nil && c.capacity > 0 {
		c.items[key] = c.ll.PushFront(&entry[V]{key, cl.val})
		for c.ll.Len() > c.capacity {
			last := c.ll.Back()
			c.ll.Remove(last)
			delete(c.items, last.Value.(*entry[V]).key)
		}
	}
	c.mu.Unlock()
	close(cl.done)
	return cl.val, false, cl.err
}

func hashKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// parseStrictJSON decodes an LLM answer that must be exactly one JSON
// object, optionally inside one ```json fence, into v; unknown fields and
// trailing text are errors.
func parseStrictJSON(answer string, v any) error {
	s := strings.TrimSpace(answer)
	if strings.HasPrefix(s, "```") {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 || !strings.HasSuffix(s, "```") || len(s) < nl+4 {
			return fmt.Errorf("%w: unterminated code fence", ErrUnparsable)
		}
		if lang := strings.TrimSpace(s[3:nl]); lang != "" && lang != "json" {
			return fmt.Errorf("%w: code fence of %q", ErrUnparsable, lang)
		}
		s = strings.TrimSpace(s[nl+1 : len(s)-3])
	}
	if !strings.HasPrefix(s, "{") {
		return fmt.Errorf("%w: not a JSON object: %q", ErrUnparsable, clip(s, 80))
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrUnparsable, err)
	}
	var rest bytes.Buffer
	_, _ = rest.ReadFrom(dec.Buffered()) // an in-memory reader into a buffer: cannot fail
	if strings.TrimSpace(rest.String()) != "" {
		return fmt.Errorf("%w: text after the JSON object", ErrUnparsable)
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// askJSON asks the model and parses its answer with parse, asking again
// (up to attempts times in all) when the answer does not parse. Model
// errors are returned at once: the ChatModel has already retried.
func askJSON(ctx context.Context, m ChatModel, msgs []topics.Message, attempts int, parse func(string) error) (parseFailures int, err error) {
	var last error
	for a := 0; a < attempts; a++ {
		answer, err := m.Chat(ctx, msgs)
		if err != nil {
			return parseFailures, err
		}
		if last = parse(answer); last == nil {
			return parseFailures, nil
		}
		parseFailures++
	}
	return parseFailures, last
}

// llmEvents receives what the LLM judge and scorer did, for metrics.
type llmEvents func(component, result string)

// LLMJudge asks a model whether a candidate is correct, with the rubric of
// LLMJudgeConfig.Rubric (DefaultJudgeRubric), and caches verdicts (correct,
// wrong or unsure) by (task id, hash of the candidate program). An unparsable answer is asked again
// up to Attempts times; then, like any model failure, the judgement fails
// with a *JudgeError (infrastructure, never the candidate's fault).
type LLMJudge struct {
	cfg    LLMJudgeConfig
	model  ChatModel
	cache  *cache[Verdict]
	events llmEvents
}

// NewLLMJudge returns an LLM judge.
func NewLLMJudge(cfg LLMJudgeConfig, model ChatModel) (*LLMJudge, error) {
	if model == nil {
		return nil, errors.New("llm judge: no chat model configured")
	}
	if errs := cfg.validate("llm_judge"); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &LLMJudge{cfg: cfg, model: model, cache: newCache[Verdict](cfg.CacheSize), events: func(string, string) {}}, nil
}

// Name implements Judge.
func (j *LLMJudge) Name() string { return JudgeLLM }

type judgeAnswer struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// ParseJudgeAnswer parses the judge's answer strictly.
func ParseJudgeAnswer(answer string) (Verdict, error) {
	var a judgeAnswer
	if err := parseStrictJSON(answer, &a); err != nil {
		return Abstain, err
	}
	switch a.Verdict {
	case "correct":
		return Correct, nil
	case "incorrect":
		return Wrong, nil
	case "unsure":
		return Unsure, nil
	}
	return Abstain, fmt.Errorf("%w: verdict %q is not \"correct\", \"incorrect\" or \"unsure\"", ErrUnparsable, a.Verdict)
}

// DefaultRepairRubric is the LLM judge's system prompt for compile-fix
// repairs: two patches, in an order that does not say which is the
// reference.
const DefaultRepairRubric = `You compare two patches that each try to repair the same build failure of a repository.
Decide whether patch A and patch B are equivalent repairs: they fix the cause the diagnostics name in the same way, so that the program behaves the same after either. Different formatting, comments, names of new locals or an equivalent expression do not matter. A patch that deletes or stubs out the failing code, or fixes a different spot, is different.
Answer with one JSON object and nothing else: {"verdict": "equivalent" | "different" | "unsure", "reason": "<one sentence>"}`

// ParseRepairAnswer parses the judge's answer about two repairs strictly:
// equivalent is Correct, different Wrong, unsure Unsure.
func ParseRepairAnswer(answer string) (Verdict, error) {
	var a judgeAnswer
	if err := parseStrictJSON(answer, &a); err != nil {
		return Abstain, err
	}
	switch a.Verdict {
	case "equivalent":
		return Correct, nil
	case "different":
		return Wrong, nil
	case "unsure":
		return Unsure, nil
	}
	return Abstain, fmt.Errorf("%w: verdict %q is not \"equivalent\", \"different\" or \"unsure\"", ErrUnparsable, a.Verdict)
}

// RepairMessages builds the conversation about a compile-fix candidate:
// the target diagnostics and both diffs, in an order fixed by a hash of the
// task and the candidate, so the judge cannot tell the reference by place.
func (j *LLMJudge) RepairMessages(task *topics.Task, ex *topics.Execution) []topics.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Build failure of task %s", task.TaskID)
	if task.CompileFix != nil {
		fmt.Fprintf(&b, " (build command: %s)", strings.Join(task.CompileFix.Build, " "))
		b.WriteString(":\n")
		for _, d := range task.CompileFix.Targets {
			fmt.Fprintf(&b, "%s:%d:%d: %s %s %s\n", d.File, d.Line, d.Column, d.Severity, d.Code, d.Message)
		}
	} else {
		b.WriteString(":\n")
	}
	a, c := headTail(ex.Code, j.cfg.MaxCodeBytes), headTail(task.ReferencePatch, j.cfg.MaxCodeBytes)
	if referenceFirst(task.TaskID, ex.Code) {
		a, c = c, a
	}
	fmt.Fprintf(&b, "\nPatch A:\n```diff\n%s\n```\n\nPatch B:\n```diff\n%s\n```\n", a, c)
	return []topics.Message{{Role: "system", Content: DefaultRepairRubric}, {Role: "user", Content: b.String()}}
}

// referenceFirst decides the blind order of RepairMessages.
func referenceFirst(taskID, code string) bool { return hashKey(taskID, code)[0]&1 == 1 }

// JudgeMessages builds the conversation the judge is asked.
func (j *LLMJudge) JudgeMessages(task *topics.Task, ex *topics.Execution) []topics.Message {
	rubric := j.cfg.Rubric
	if strings.TrimSpace(rubric) == "" {
		rubric = DefaultJudgeRubric
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s (%s):\n%s\n\n", task.TaskID, task.Kind, task.Prompt)
	if j.cfg.IncludeReference {
		if task.ReferencePatch != "" {
			fmt.Fprintf(&b, "Reference patch (one correct fix; others may be correct too):\n%s\n\n", headTail(task.ReferencePatch, j.cfg.MaxCodeBytes))
		} else if task.Reference != "" {
			fmt.Fprintf(&b, "Reference solution (one correct solution; others may be correct too):\n%s\n\n", headTail(task.Reference, j.cfg.MaxCodeBytes))
		}
	}
	fmt.Fprintf(&b, "Candidate:\n```%s\n%s\n```\n", languageOf(task.Kind), headTail(ex.Code, j.cfg.MaxCodeBytes))
	fmt.Fprintf(&b, "Result: %s, %d of %d tests passed.\n", ex.Status, ex.TestsPassed, ex.TestsTotal)
	if ex.Feedback != "" {
		fmt.Fprintf(&b, "Feedback:\n%s\n", headTail(ex.Feedback, 2048))
	}
	return []topics.Message{{Role: "system", Content: rubric}, {Role: "user", Content: b.String()}}
}

// Judge implements Judge.
func (j *LLMJudge) Judge(ctx context.Context, task *topics.Task, ex *topics.Execution) (Verdict, error) {
	key := hashKey(task.TaskID, ex.Code)
	v, hit, err := j.cache.do(ctx, key, func() (Verdict, error) {
		cctx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
		defer cancel()
		var v Verdict
		msgs, parse := j.JudgeMessages(task, ex), ParseJudgeAnswer
		if task.Kind == topics.KindCompileFix && task.ReferencePatch != "" {
			msgs, parse = j.RepairMessages(task, ex), ParseRepairAnswer
		}
		failures, err := askJSON(cctx, j.model, msgs, j.cfg.Attempts, func(a string) error {
			var perr error
			v, perr = parse(a)
			return perr
		})
		for range failures {
			j.events("judge", "parse_error")
		}
		return v, err
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return Abstain, ctx.Err()
	case err != nil:
		j.events("judge", "error")
		return Abstain, &JudgeError{Judge: JudgeLLM, Err: err}
	case hit:
		j.events("judge", "cache_hit")
	default:
		j.events("judge", "ok")
	}
	return v, nil
}

// LLMScorer asks a model to score the steps of a response, with the rubric
// of LLMScorerConfig.Rubric (DefaultScorerRubric). The answer must hold
// exactly one score in [0,1] per step. Scores are cached by (task id, hash
// of the response text and its step ends).
type LLMScorer struct {
	cfg    LLMScorerConfig
	model  ChatModel
	cache  *cache[[]float32]
	events llmEvents
}

// NewLLMScorer returns an LLM step scorer.
func NewLLMScorer(cfg LLMScorerConfig, model ChatModel) (*LLMScorer, error) {
	if model == nil {
		return nil, errors.New("llm scorer: no chat model configured")
	}
	if errs := llmCommon("llm_scorer", cfg.Attempts, cfg.CacheSize, cfg.Timeout); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &LLMScorer{cfg: cfg, model: model, cache: newCache[[]float32](cfg.CacheSize), events: func(string, string) {}}, nil
}

// Name implements StepScorer.
func (s *LLMScorer) Name() string { return ScorerLLM }

type scorerAnswer struct {
	Scores []float64 `json:"scores"`
}

// ParseScorerAnswer parses a scorer answer that must hold n scores in [0,1].
func ParseScorerAnswer(answer string, n int) ([]float32, error) {
	var a scorerAnswer
	if err := parseStrictJSON(answer, &a); err != nil {
		return nil, err
	}
	if len(a.Scores) != n {
		return nil, fmt.Errorf("%w: %d scores for %d steps", ErrUnparsable, len(a.Scores), n)
	}
	out := make([]float32, n)
	for i, v := range a.Scores {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("%w: score %d is %g, outside [0,1]", ErrUnparsable, i+1, v)
		}
		out[i] = float32(v)
	}
	return out, nil
}

// ScorerMessages builds the conversation the scorer is asked.
func (s *LLMScorer) ScorerMessages(task *topics.Task, steps []Step) []topics.Message {
	rubric := s.cfg.Rubric
	if strings.TrimSpace(rubric) == "" {
		rubric = DefaultScorerRubric
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Task (%s)\n%s\n\n## Steps (%d)\n", task.TaskID, task.Prompt, len(steps))
	for i, st := range steps {
		fmt.Fprintf(&b, "\n### Step %d\n%s\n", i+1, headTail(st.Text, s.cfg.MaxStepBytes))
	}
	return []topics.Message{{Role: "system", Content: rubric}, {Role: "user", Content: b.String()}}
}

// Score implements StepScorer. Steps whose text could not be aligned with
// the response are not scored (ErrUnaligned).
func (s *LLMScorer) Score(ctx context.Context, task *topics.Task, ex *topics.Execution, steps []Step, aligned bool) ([]float32, error) {
	if !aligned {
		s.events("scorer", "unaligned")
		return nil, ErrUnaligned
	}
	ends := make([]string, len(steps))
	for i, st := range steps {
		ends[i] = strconv.Itoa(st.End)
	}
	key := hashKey(task.TaskID, ex.ResponseText, strings.Join(ends, ","))
	v, hit, err := s.cache.do(ctx, key, func() ([]float32, error) {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		var scores []float32
		failures, err := askJSON(cctx, s.model, s.ScorerMessages(task, steps), s.cfg.Attempts, func(a string) error {
			var perr error
			scores, perr = ParseScorerAnswer(a, len(steps))
			return perr
		})
		for range failures {
			s.events("scorer", "parse_error")
		}
		return scores, err
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		s.events("scorer", "error")
		return nil, &ScorerError{Scorer: ScorerLLM, Err: err}
	case hit:
		s.events("scorer", "cache_hit")
	default:
		s.events("scorer", "ok")
	}
	return append([]float32(nil), v...), nil
}
