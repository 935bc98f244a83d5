// Package tasks turns task files into topics.Task records and looks tasks up
// by id. Formats: HumanEval JSONL(.gz), MBPP JSONL, LiveCodeBench-style
// stdin/stdout JSON and the project's native format; see FORMATS.md for the
// fields read and how tests are split into visible and hidden ones.
package tasks

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

// Formats.
const (
	FormatHumanEval = "humaneval"
	FormatMBPP      = "mbpp"
	FormatStdio     = "stdio"
	FormatNative    = "native"
)

// Formats lists the accepted format names.
func Formats() []string { return []string{FormatHumanEval, FormatMBPP, FormatStdio, FormatNative} }

// LineError is a record that could not be turned into a task. Line is the
// 1-based line of a JSONL file, or the 1-based element of a JSON array.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Load reads a task file. format is one of Formats or "" to detect it from
// the first record. Gzip input is recognised by its magic bytes. Broken
// records are skipped and reported in the returned LineErrors; the error is
// non-nil only when the file cannot be read or its format is unknown.
func Load(path, format string) ([]topics.Task, []LineError, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("tasks: %w", err)
	}
	defer f.Close()
	ts, lerrs, err := Parse(f, format)
	if err != nil {
		return nil, nil, fmt.Errorf("tasks: %s: %w", path, err)
	}
	return ts, lerrs, nil
}

// Parse is Load over a reader.
func Parse(r io.Reader, format string) ([]topics.Task, []LineError, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	recs, err := records(br)
	if err != nil {
		return nil, nil, err
	}
	if format == "" {
		if format, err = detect(recs); err != nil {
			return nil, nil, err
		}
	}
	conv := converter(format)
	if conv == nil {
		return nil, nil, fmt.Errorf("unknown task format %q (want one of %s)", format, strings.Join(Formats(), ", "))
	}
	var (
		out   []topics.Task
		lerrs []LineError
		seen  = map[string]int{}
	)
	for _, rec := range recs {
		if rec.err != nil {
			lerrs = append(lerrs, LineError{Line: rec.line, Err: rec.err})
			continue
		}
		t, err := conv(rec.raw)
		if err == nil {
			t.SchemaVersion = topics.SchemaVersion
			err = t.Validate()
		}
		if err == nil {
			if prev, dup := seen[t.TaskID]; dup {
				err = fmt.Errorf("duplicate task_id %q (first on line %d)", t.TaskID, prev)
			}
		}
		if err != nil {
			lerrs = append(lerrs, LineError{Line: rec.line, Err: err})
			continue
		}
		seen[t.TaskID] = rec.line
		out = append(out, *t)
	}
	return out, lerrs, nil
}

type record struct {
	line int
	raw  []byte
	err  error
}

// records splits JSONL, or a JSON array, into raw records. Blank lines and
// lines starting with // are skipped.
func records(br *bufio.Reader) ([]record, error) {
	all, err := io.ReadAll(br)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(all)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var arr []json.RawMessage
		if err := json.Unmarshal(trimmed, &arr); err == nil {
			recs := make([]record, len(arr))
			for i, raw := range arr {
				recs[i] = record{line: i + 1, raw: raw}
			}
			return recs, nil
		}
	}
	var recs []record
	for n, line := range bytes.Split(all, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		rec := record{line: n + 1, raw: line}
		if !json.Valid(line) {
			rec.err = errors.New("not a JSON object")
		} else if line[0] != '{' {
			rec.err = errors.New("not a JSON object")
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// detect guesses the format from the keys of the first valid record.
func detect(recs []record) (string, error) {
	for _, rec := range recs {
		if rec.err != nil {
			continue
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal(rec.raw, &keys) != nil {
			continue
		}
		has := func(k string) bool { _, ok := keys[k]; return ok }
		switch {
		case has("canonical_solution") || (has("entry_point") && has("test") && has("prompt")):
			return FormatHumanEval, nil
		case has("test_list"):
			return FormatMBPP, nil
		case has("public_test_cases") || has("private_test_cases"):
			return FormatStdio, nil
		case has("kind") && (has("tests") || has("check")):
			return FormatNative, nil
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		return "", fmt.Errorf("cannot detect the task format from fields %v; pass a format", names)
	}
	return "", errors.New("no task records")
}

func converter(format string) func([]byte) (*topics.Task, error) {
	switch format {
	case FormatHumanEval:
		return humanEvalTask
	case FormatMBPP:
		return mbppTask
	case FormatStdio:
		return stdioTask
	case FormatNative:
		return nativeTask
	}
	return nil
}

func nativeTask(raw []byte) (*topics.Task, error) {
	var t topics.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	if v := t.SchemaVersion; v != 0 && (v < topics.MinSchemaVersion || v > topics.SchemaVersion) {
		return nil, fmt.Errorf("schema_version %d, this build reads %d to %d", v, topics.MinSchemaVersion, topics.SchemaVersion)
	}
	t.SchemaVersion = topics.SchemaVersion
	if t.Source == "" {
		t.Source = FormatNative
	}
	return &t, nil
}

// ErrNotFound is returned (wrapped) by a Lookup for an unknown task id.
var ErrNotFound = errors.New("task not found")

// Lookup finds a task by id. The execute and govern stages use it; the
// pipeline runtime provides one over the compacted tasks topic.
type Lookup interface {
	Task(ctx context.Context, id string) (*topics.Task, error)
}

// Memory is an in-memory Lookup.
type Memory struct {
	mu    sync.RWMutex
	tasks map[string]*topics.Task
}

// NewMemory indexes ts by task id (later duplicates win).
func NewMemory(ts []topics.Task) *Memory {
	m := &Memory{tasks: make(map[string]*topics.Task, len(ts))}
	for i := range ts {
		m.Put(ts[i])
	}
	return m
}

// Put adds or replaces a task.
func (m *Memory) Put(t topics.Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tasks[t.TaskID] = &t
}

// Task implements Lookup. The returned task is a copy the caller may change.
func (m *Memory) Task(_ context.Context, id string) (*topics.Task, error) {
	m.mu.RLock()
	t, ok := m.tasks[id]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return copyTask(t), nil
}

// copyTask is a copy of t the caller may change.
func copyTask(t *topics.Task) *topics.Task {
	c := *t
	c.Tests = append([]topics.TestCase(nil), t.Tests...)
	return &c
}

// Len is the number of tasks.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.tasks)
}

// Getter reads the latest raw value of a key (pipeline.Table over the
// compacted tasks topic implements it).
type Getter interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// FromTable turns a raw key-value reader into a Lookup: values are decoded
// and validated as topics.Task records. notFound is the getter's error for
// an unknown key (pipeline.ErrNotFound); it is reported as ErrNotFound.
// A value the getter returns again (the same bytes, as a cache does) is not
// decoded again. Returned tasks are copies the caller may change.
func FromTable(g Getter, notFound error) Lookup {
	return &tableLookup{g: g, notFound: notFound, decoded: map[string]decodedTask{}}
}

// maxDecodedTasks bounds tableLookup's decoded tasks (each also keeps its
// value alive): the tasks of the trees in flight.
const maxDecodedTasks = 256

type tableLookup struct {
	g        Getter
	notFound error
	mu       sync.Mutex
	decoded  map[string]decodedTask
}

// decodedTask is a task and the value it was decoded from.
type decodedTask struct {
	raw  []byte
	task *topics.Task
}

func (l *tableLookup) Task(ctx context.Context, id string) (*topics.Task, error) {
	b, err := l.g.Get(ctx, id)
	if err != nil {
		if l.notFound != nil && errors.Is(err, l.notFound) {
			return nil, fmt.Errorf("%w: %q: %w", ErrNotFound, id, err)
		}
		// The table could not be read (the broker is restarting): retry the
		// record until it can, never dead-letter it.
		return nil, topics.Transient(fmt.Errorf("tasks: lookup %q: %w", id, err))
	}
	l.mu.Lock()
	d, ok := l.decoded[id]
	l.mu.Unlock()
	if !ok || !sameBytes(d.raw, b) {
		var t topics.Task
		if err := topics.Decode(b, &t); err != nil {
			return nil, fmt.Errorf("tasks: task %q on the tasks topic: %w", id, err)
		}
		d = decodedTask{raw: b, task: &t}
		l.mu.Lock()
		if len(l.decoded) >= maxDecodedTasks {
			clear(l.decoded)
		}
		l.decoded[id] = d
		l.mu.Unlock()
	}
	return copyTask(d.task), nil
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// DefaultTaskWait is how long a stage waits, by default, for a task that is
// not (yet) in its lookup (Await).
const DefaultTaskWait = 30 * time.Second

// Await is the one policy of every stage for the task a record names. The
// lookup may lag behind the tasks topic (tasks are published before their
// prompts), so a missing task is looked up again, with exponential backoff,
// for up to wait. Still missing, the record is poison with reason
// task_not_found: dead-lettered, and replayable from the DLQ once the task
// is published. A task that cannot be decoded is poison (bad_task). Any
// other failure of the lookup is transient: the runtime retries the record
// and never dead-letters it. When ctx ends, Await returns ctx's error.
func Await(ctx context.Context, l Lookup, id string, wait time.Duration) (*topics.Task, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 50*time.Millisecond, time.Second
	until := untilDeadline{b: b, deadline: time.Now().Add(wait)}
	t, err := backoff.Retry(ctx, func() (*topics.Task, error) {
		t, err := l.Task(ctx, id)
		switch {
		case err == nil && t == nil:
			err = fmt.Errorf("%w: %q", ErrNotFound, id)
		case err == nil:
			return t, nil
		}
		if errors.Is(err, ErrNotFound) && ctx.Err() == nil {
			return nil, err
		}
		return nil, backoff.Permanent(err)
	}, backoff.WithBackOff(&until), backoff.WithMaxElapsedTime(0))
	switch {
	case err == nil:
		return t, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrNotFound):
		return nil, topics.Poison("task_not_found", fmt.Errorf("task %q not found after %s: %w", id, wait, err))
	case topics.IsPoison(err):
		return nil, topics.Poison("bad_task", fmt.Errorf("task %q: %w", id, err))
	}
	return nil, topics.Transient(fmt.Errorf("task %q: %w", id, err))
}

// untilDeadline is b with each interval cut to what is left of the wait, so
// the last lookup is made when the wait is over, never a whole interval
// before it (a MaxElapsedTime gives up as soon as the next interval would
// cross it), and Stop after that.
type untilDeadline struct {
	b        backoff.BackOff
	deadline time.Time
}

func (u *untilDeadline) Reset() { u.b.Reset() }

func (u *untilDeadline) NextBackOff() time.Duration {
	left := time.Until(u.deadline)
	if left <= 0 {
		return backoff.Stop
	}
	return min(u.b.NextBackOff(), left)
}

// Awaiting is l with every lookup made through Await (for a core that takes
// a Lookup, such as govern's Governor).
func Awaiting(l Lookup, wait time.Duration) Lookup { return awaiting{l: l, wait: wait} }

type awaiting struct {
	l    Lookup
	wait time.Duration
}

func (a awaiting) Task(ctx context.Context, id string) (*topics.Task, error) {
	return Await(ctx, a.l, id, a.wait)
}
