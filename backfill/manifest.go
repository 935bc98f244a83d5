package backfill

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Manifest is the input of a backfill job (`murphy backfill submit
// --manifest FILE`): the items to build and publish. The file is YAML or
// JSON, either a list of items or an object with an "items" list (and
// optionally "run_id"); a .jsonl file holds one item per line. Relative
// paths in items are relative to the manifest's directory.
type Manifest struct {
	// Path is the file it was read from; Dir resolves relative paths.
	Path string `json:"-" yaml:"-"`
	Dir  string `json:"-" yaml:"-"`
	// RunID, when set, names the run (tree ids <run-id>/<task-id>/<k>).
	RunID string `json:"run_id,omitempty" yaml:"run_id,omitempty"`
	Items []Item `json:"items" yaml:"items"`
	// Errors are the entries that could not be read, each with its
	// position; the others are in Items.
	Errors []error `json:"-" yaml:"-"`
}

// LoadManifest reads a manifest. A malformed entry is reported in
// Manifest.Errors with its line and left out; a file that cannot be read
// or parsed at all is an error.
func LoadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	m, err := ParseManifest(b, strings.HasSuffix(path, ".jsonl"))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	m.Path = path
	if m.Dir, err = filepath.Abs(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return m, nil
}

// ParseManifest parses manifest text (see Manifest); jsonl reads one item
// per line.
func ParseManifest(b []byte, jsonl bool) (*Manifest, error) {
	m := &Manifest{}
	if jsonl {
		for i, line := range bytes.Split(b, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 || line[0] == '#' {
				continue
			}
			var n yaml.Node
			if err := yaml.Unmarshal(line, &n); err != nil {
				m.Errors = append(m.Errors, fmt.Errorf("line %d: %w", i+1, err))
				continue
			}
			m.addItem(docRoot(&n), i+1)
		}
		return m, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	root := docRoot(&doc)
	if root == nil {
		return m, nil
	}
	var list *yaml.Node
	switch root.Kind {
	case yaml.SequenceNode:
		list = root
	case yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i].Value, root.Content[i+1]
			switch k {
			case "items":
				if v.Kind != yaml.SequenceNode {
					return nil, fmt.Errorf("line %d: items must be a list", v.Line)
				}
				list = v
			case "run_id":
				m.RunID = v.Value
			default:
				return nil, fmt.Errorf("line %d: unknown field %q (want items, run_id)", root.Content[i].Line, k)
			}
		}
		if list == nil {
			return nil, errors.New("no items list")
		}
	default:
		return nil, errors.New("want a list of items or an object with items")
	}
	for _, n := range list.Content {
		m.addItem(n, n.Line)
	}
	return m, nil
}

func docRoot(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return n.Content[0]
	}
	return n
}

// addItem decodes one entry strictly (unknown fields are errors: a typo
// must not silently build something else) and checks it.
func (m *Manifest) addItem(n *yaml.Node, line int) {
	if n == nil {
		return
	}
	var it Item
	err := strictDecode(n, &it)
	if err == nil {
		err = it.check()
	}
	if err != nil {
		what := fmt.Sprintf("item at line %d", line)
		if it.Name != "" {
			what += " (" + it.Name + ")"
		}
		m.Errors = append(m.Errors, fmt.Errorf("%s: %w", what, err))
		return
	}
	m.Items = append(m.Items, it)
}

func strictDecode(n *yaml.Node, v *Item) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("an item must be an object")
	}
	known := itemFields()
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !known[k.Value] {
			return fmt.Errorf("line %d: unknown field %q", k.Line, k.Value)
		}
	}
	return n.Decode(v)
}

// itemFields are Item's YAML field names.
func itemFields() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[Item]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// check is the manifest's own validation of an item: what every builder
// needs. Whether the files exist and build is the builder's to say.
func (it Item) check() error {
	var errs []error
	switch it.Kind {
	case KindHistory:
		if it.Fail == "" {
			errs = append(errs, errors.New("history item needs fail (the failing revision)"))
		}
		if it.Fix == "" && it.Patch == "" {
			errs = append(errs, errors.New("history item needs fix or patch"))
		}
	case KindInject:
	case "":
		errs = append(errs, fmt.Errorf("kind is required (%s or %s)", KindHistory, KindInject))
	default:
		errs = append(errs, fmt.Errorf("kind %q unknown (%s or %s)", it.Kind, KindHistory, KindInject))
	}
	if it.Repo == "" {
		errs = append(errs, errors.New("repo is required"))
	}
	return errors.Join(errs...)
}

// Key identifies an item in the job's state: a digest of the item as
// written in the manifest (before its paths are resolved), so the state
// survives moving the manifest with its files, and any change to an item
// makes it a new one.
func (it Item) Key() string {
	b, _ := json.Marshal(it)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// ReportName names the item in reports: its name, else its repository
// and revisions.
func (it Item) ReportName() string {
	if it.Name != "" {
		return it.Name
	}
	s := it.Repo
	if it.Fail != "" {
		s += "@" + it.Fail
	}
	return s
}

// resolved is it with relative paths made relative to dir.
func (it Item) resolved(dir string) Item {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	it.Repo, it.Log, it.Patch = abs(it.Repo), abs(it.Log), abs(it.Patch)
	return it
}

// DefaultRunID derives a run id from the items: the same manifest gives
// the same tree ids.
func DefaultRunID(items []Item) string {
	h := sha256.New()
	for _, it := range items {
		h.Write([]byte(it.Key()))
	}
	return "backfill-" + hex.EncodeToString(h.Sum(nil))[:12]
}
