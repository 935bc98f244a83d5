package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/murphy-rl/murphy/tasks/submit"
)

// The state directory of a job (BACKFILL.md, "Publish"):
//
//	run.json             the run id and tree shape, fixed by the first run
//	items/<key>.json     one file per item: its result, then its publication
//
// Every file is written whole to a temporary file and renamed over the old
// one, so a crash leaves the previous version or the new one, never a part.

// Item phases in the state directory.
const (
	// PhaseBuilt: the item's result is recorded; nothing published yet.
	PhaseBuilt = "built"
	// PhasePublishing: the topics' end offsets were recorded (the intent)
	// and publishing began; what is on the broker since those offsets is
	// this item's or someone else's, never unknown.
	PhasePublishing = "publishing"
	// PhasePublished: the brokers acknowledged every record of the item.
	PhasePublished = "published"
)

// runState is run.json.
type runState struct {
	RunID        string    `json:"run_id"`
	GroupSize    int       `json:"group_size"`
	GroupSizes   []int     `json:"group_sizes,omitempty"`
	TreesPerTask int       `json:"trees_per_task"`
	MaxTurns     int       `json:"max_turns"`
	Created      time.Time `json:"created"`
}

func newRunState(sc submit.Config, now time.Time) runState {
	return runState{RunID: sc.RunID, GroupSize: sc.GroupSize, GroupSizes: sc.GroupSizes, TreesPerTask: sc.TreesPerTask,
		MaxTurns: sc.MaxTurns, Created: now.UTC()}
}

// sameShape says whether a resumed run asks for the trees the first one
// published.
func (r runState) sameShape(o runState) error {
	if r.RunID != o.RunID {
		return fmt.Errorf("run id %q, but the state directory holds run %q (use its run id or a new state directory)", o.RunID, r.RunID)
	}
	if r.GroupSize != o.GroupSize || fmt.Sprint(r.GroupSizes) != fmt.Sprint(o.GroupSizes) || r.TreesPerTask != o.TreesPerTask || r.MaxTurns != o.MaxTurns {
		return fmt.Errorf("trees of G=%d %v, K=%d, %d turns, but run %q published G=%d %v, K=%d, %d turns (use the same settings or a new state directory)",
			o.GroupSize, o.GroupSizes, o.TreesPerTask, o.MaxTurns, r.RunID, r.GroupSize, r.GroupSizes, r.TreesPerTask, r.MaxTurns)
	}
	return nil
}

// itemState is items/<key>.json.
type itemState struct {
	Key   string `json:"key"`
	Name  string `json:"name"`
	Item  Item   `json:"item"`
	Phase string `json:"phase"`
	// Result is what the builder gave.
	Result  *Result   `json:"result"`
	BuiltAt time.Time `json:"built_at"`
	// TaskIDs are the tasks this item publishes (its own, less those an
	// earlier item of the run published) and Trees their tree ids; set
	// with the intent.
	TaskIDs []string `json:"task_ids,omitempty"`
	Trees   []string `json:"trees,omitempty"`
	// Intent holds the end offsets of the tasks and backfill-prompts topics,
	// per partition, before the first record of the item was produced.
	Intent map[string][]int64 `json:"intent,omitempty"`
	// Attempts counts publications begun (more than one: resumed).
	Attempts int `json:"attempts,omitempty"`
	// Published counts the trees this item's publication produced, Found
	// those a resumed publication found already on the broker.
	Published   int       `json:"published,omitempty"`
	Found       int       `json:"found,omitempty"`
	PublishedAt time.Time `json:"published_at,omitzero"`
}

type stateDir struct{ dir string }

func openState(dir string) (*stateDir, error) {
	if dir == "" {
		return nil, errors.New("backfill: no state directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, "items"), 0o755); err != nil {
		return nil, fmt.Errorf("backfill: state: %w", err)
	}
	return &stateDir{dir: dir}, nil
}

func (s *stateDir) runPath() string            { return filepath.Join(s.dir, "run.json") }
func (s *stateDir) itemPath(key string) string { return filepath.Join(s.dir, "items", key+".json") }

// readRun returns run.json, ok false when there is none yet.
func (s *stateDir) readRun() (r runState, ok bool, err error) {
	ok, err = readJSON(s.runPath(), &r)
	return r, ok, err
}

func (s *stateDir) writeRun(r runState) error { return writeJSON(s.runPath(), r) }

// readItem returns the item's state, nil when there is none.
func (s *stateDir) readItem(key string) (*itemState, error) {
	var st itemState
	ok, err := readJSON(s.itemPath(key), &st)
	if !ok || err != nil {
		return nil, err
	}
	return &st, nil
}

func (s *stateDir) writeItem(st *itemState) error { return writeJSON(s.itemPath(st.Key), st) }

// items reads every item's state (any order).
func (s *stateDir) items() ([]*itemState, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "items"))
	if err != nil {
		return nil, fmt.Errorf("backfill: state: %w", err)
	}
	var out []*itemState
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || filepath.Ext(name) != ".json" {
			continue
		}
		st, err := s.readItem(name[:len(name)-len(".json")])
		if err != nil {
			return nil, err
		}
		if st != nil {
			out = append(out, st)
		}
	}
	return out, nil
}

func readJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("backfill: state: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("backfill: state %s: %w", path, err)
	}
	return true, nil
}

// writeJSON writes v to path atomically: a temporary file in the same
// directory, synced, renamed over path, and the directory synced.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("backfill: state: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("backfill: state: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("backfill: state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
