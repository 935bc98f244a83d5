package tasks

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

// visibleCount is how many of n split tests are visible (may appear in
// feedback): the first min(3, ceil(n/2)). The rest are hidden.
func visibleCount(n int) int { return min(3, (n+1)/2) }

type humanEvalRow struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	CanonicalSolution string `json:"canonical_solution"`
	Test              string `json:"test"`
	EntryPoint        string `json:"entry_point"`
}

func humanEvalTask(raw []byte) (*topics.Task, error) {
	var r humanEvalRow
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.TaskID == "" || r.EntryPoint == "" || r.Test == "" {
		return nil, errors.New("humaneval record needs task_id, entry_point and test")
	}
	t := &topics.Task{
		TaskID: r.TaskID, Kind: topics.KindPythonFunction, Source: FormatHumanEval,
		Prompt: r.Prompt, EntryPoint: r.EntryPoint,
	}
	if r.CanonicalSolution != "" {
		t.Reference = r.Prompt + r.CanonicalSolution
	}
	cs, err := splitCheck(r.Test)
	if err != nil || cs.param != "candidate" {
		// Loops, helpers or randomised checks: keep the code whole, as one
		// hidden test.
		t.Check = r.Test
		return t, nil
	}
	t.Setup = cs.setup
	vis := visibleCount(len(cs.tests))
	for i, c := range cs.tests {
		tc := topics.TestCase{Name: "test " + strconv.Itoa(i+1), Hidden: i >= vis}
		if c.value {
			tc.Args, tc.Expected = c.args, c.expected
		} else {
			tc.Assert = c.expr
		}
		t.Tests = append(t.Tests, tc)
	}
	return t, nil
}

type mbppRow struct {
	TaskID            json.RawMessage `json:"task_id"`
	Text              string          `json:"text"`
	Prompt            string          `json:"prompt"`
	Code              string          `json:"code"`
	TestList          []string        `json:"test_list"`
	TestSetupCode     string          `json:"test_setup_code"`
	ChallengeTestList []string        `json:"challenge_test_list"`
}

func mbppTask(raw []byte) (*topics.Task, error) {
	var r mbppRow
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	id := strings.Trim(string(r.TaskID), `"`)
	if id == "" || id == "null" {
		return nil, errors.New("mbpp record needs task_id")
	}
	if len(r.TestList) == 0 {
		return nil, errors.New("mbpp record has an empty test_list")
	}
	text := r.Text
	if text == "" {
		text = r.Prompt
	}
	crlf := strings.NewReplacer("\r\n", "\n")
	fn, err := callee(r.TestList[0])
	if err != nil {
		return nil, fmt.Errorf("mbpp entry point: %w", err)
	}
	t := &topics.Task{
		TaskID: "MBPP/" + id, Kind: topics.KindPythonFunction, Source: FormatMBPP,
		EntryPoint: fn, Reference: crlf.Replace(r.Code), Setup: crlf.Replace(r.TestSetupCode),
	}
	// The conventional MBPP prompt shows test_list: those tests are visible;
	// challenge_test_list is hidden.
	t.Prompt = strings.TrimSpace(text) + "\nYour code should pass these tests:\n\n" + strings.Join(r.TestList, "\n") + "\n"
	add := func(src string, hidden bool, n int) error {
		src = crlf.Replace(strings.TrimSpace(src))
		f, err := parsePython(src)
		if err != nil {
			return err
		}
		sts := statements(f.Root)
		if len(sts) != 1 {
			return fmt.Errorf("test %q is not one statement", src)
		}
		args, expected, expr, value, ok := splitAssert(f, sts[0], fn)
		if !ok {
			return fmt.Errorf("test %q is not an assert", src)
		}
		tc := topics.TestCase{Name: "test " + strconv.Itoa(n), Hidden: hidden}
		if value {
			tc.Args, tc.Expected = args, expected
		} else {
			tc.Assert = expr
		}
		t.Tests = append(t.Tests, tc)
		return nil
	}
	for i, s := range r.TestList {
		if err := add(s, false, i+1); err != nil {
			return nil, err
		}
	}
	for i, s := range r.ChallengeTestList {
		if err := add(s, true, len(r.TestList)+i+1); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// stdioRow accepts LiveCodeBench's code_generation rows and close variants.
type stdioRow struct {
	QuestionID      json.RawMessage `json:"question_id"`
	TaskID          json.RawMessage `json:"task_id"`
	Title           string          `json:"question_title"`
	Content         string          `json:"question_content"`
	Prompt          string          `json:"prompt"`
	Platform        string          `json:"platform"`
	PublicTests     json.RawMessage `json:"public_test_cases"`
	PrivateTests    json.RawMessage `json:"private_test_cases"`
	Reference       string          `json:"reference"`
	FloatTolerance  float64         `json:"float_tolerance"`
	TimeoutMS       int             `json:"timeout_ms"`
	MemoryMB        int             `json:"memory_mb"`
	RewardPolicy    string          `json:"reward_policy"`
	ReferenceSource string          `json:"solution"`
}

type stdioCase struct {
	Input    string `json:"input"`
	Output   string `json:"output"`
	TestType string `json:"testtype"`
}

func stdioTask(raw []byte) (*topics.Task, error) {
	var r stdioRow
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	id := strings.Trim(string(r.TaskID), `"`)
	if id == "" || id == "null" {
		id = strings.Trim(string(r.QuestionID), `"`)
	}
	if id == "" || id == "null" {
		return nil, errors.New("stdio record needs task_id or question_id")
	}
	prompt := r.Content
	if prompt == "" {
		prompt = r.Prompt
	}
	if r.Title != "" && r.Content != "" {
		prompt = r.Title + "\n\n" + r.Content
	}
	t := &topics.Task{
		TaskID: id, Kind: topics.KindStdio, Source: "livecodebench", Prompt: prompt,
		FloatTolerance: r.FloatTolerance, TimeoutMS: r.TimeoutMS, MemoryMB: r.MemoryMB,
		RewardPolicy: r.RewardPolicy, Reference: r.Reference,
	}
	if t.Reference == "" {
		t.Reference = r.ReferenceSource
	}
	if r.Platform != "" {
		t.Source = "livecodebench/" + r.Platform
	}
	pub, err := decodeCases(r.PublicTests)
	if err != nil {
		return nil, fmt.Errorf("public_test_cases: %w", err)
	}
	priv, err := decodeCases(r.PrivateTests)
	if err != nil {
		return nil, fmt.Errorf("private_test_cases: %w", err)
	}
	for i, c := range append(pub, priv...) {
		if c.TestType != "" && c.TestType != "stdin" {
			return nil, fmt.Errorf("test type %q is not supported (stdin only)", c.TestType)
		}
		hidden := i >= len(pub)
		name := "public " + strconv.Itoa(i+1)
		if hidden {
			name = "private " + strconv.Itoa(i-len(pub)+1)
		}
		t.Tests = append(t.Tests, topics.TestCase{Name: name, Stdin: c.Input, Expected: c.Output, Hidden: hidden})
	}
	return t, nil
}

// decodeCases reads test cases given as a JSON array, a JSON string holding
// one, or LiveCodeBench's compressed form: base64(zlib(pickle(json str))).
func decodeCases(raw json.RawMessage) ([]stdioCase, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var cases []stdioCase
	if raw[0] == '[' {
		err := json.Unmarshal(raw, &cases)
		return cases, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		err := json.Unmarshal([]byte(s), &cases)
		return cases, err
	}
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("neither JSON nor base64: %w", err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(zr, 1<<30))
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if len(body) > 0 && body[0] == 0x80 {
		str, err := unpickleString(body)
		if err != nil {
			return nil, err
		}
		body = []byte(str)
	}
	err = json.Unmarshal(body, &cases)
	return cases, err
}

// unpickleString reads a pickle whose only object is a str. Any other
// opcode is refused: nothing is ever executed.
func unpickleString(b []byte) (string, error) {
	var out *string
	i := 0
	need := func(n int) error {
		if i+n > len(b) {
			return errors.New("pickle: truncated")
		}
		return nil
	}
	for i < len(b) {
		op := b[i]
		i++
		switch op {
		case 0x80: // PROTO
			if err := need(1); err != nil {
				return "", err
			}
			i++
		case 0x95: // FRAME
			if err := need(8); err != nil {
				return "", err
			}
			i += 8
		case 0x94: // MEMOIZE
		case 0x8c, 'X', 0x8d: // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
			var n uint64
			switch op {
			case 0x8c:
				if err := need(1); err != nil {
					return "", err
				}
				n = uint64(b[i])
				i++
			case 'X':
				if err := need(4); err != nil {
					return "", err
				}
				n = uint64(binary.LittleEndian.Uint32(b[i:]))
				i += 4
			default:
				if err := need(8); err != nil {
					return "", err
				}
				n = binary.LittleEndian.Uint64(b[i:])
				i += 8
			}
			if n > uint64(len(b)-i) {
				return "", errors.New("pickle: truncated string")
			}
			s := string(b[i : i+int(n)])
			i += int(n)
			if out != nil {
				return "", errors.New("pickle: more than one object")
			}
			out = &s
		case '.': // STOP
			if out == nil {
				return "", errors.New("pickle: no string")
			}
			return *out, nil
		default:
			return "", fmt.Errorf("pickle: opcode 0x%02x is not allowed (only a str is accepted)", op)
		}
	}
	return "", errors.New("pickle: no STOP")
}
