package episode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// BuildFunc runs the task's build on the snapshot with the episode's edits:
// changed maps workspace paths to their new contents (new files included),
// deleted lists removed paths. ok says whether the build passed; output is
// what the build printed (the diagnostics the model reads). A non-nil error
// is an infrastructure failure (the build could not run), not a failed build.
type BuildFunc func(ctx context.Context, changed map[string][]byte, deleted []string) (ok bool, output string, err error)

// Tool names.
const (
	ToolReadFile  = "read_file"
	ToolSearch    = "search"
	ToolListFiles = "list_files"
	ToolEdit      = "edit"
	ToolBuild     = "build"
	ToolSubmit    = "submit"
)

// ToolsConfig bounds what the tools read and answer.
type ToolsConfig struct {
	// MaxOutputBytes caps every tool answer: longer answers keep their head
	// and tail around a note of what was cut (see CapOutput). 0 = 4 KiB.
	MaxOutputBytes int
	// MaxReadLines is the most lines read_file shows when no end_line is
	// given. 0 = 400.
	MaxReadLines int
	// MaxSearchResults caps the matching lines search lists. 0 = 50.
	MaxSearchResults int
	// MaxListEntries caps the files list_files lists. 0 = 500.
	MaxListEntries int
	// MaxFileBytes: larger files are not read, searched or edited. 0 = 1 MiB.
	MaxFileBytes int64
}

func (c ToolsConfig) withDefaults() ToolsConfig {
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = 4 << 10
	}
	if c.MaxReadLines <= 0 {
		c.MaxReadLines = 400
	}
	if c.MaxSearchResults <= 0 {
		c.MaxSearchResults = 50
	}
	if c.MaxListEntries <= 0 {
		c.MaxListEntries = 500
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = 1 << 20
	}
	return c
}

// Tools are an episode's tools over one private workspace: a read-only
// snapshot directory and an in-memory overlay of the episode's edits. Every
// path is relative to the workspace root and stays inside it: absolute
// paths, ".." components and symbolic links are refused. Tools are not
// safe for concurrent use (an episode is sequential).
type Tools struct {
	root    string
	cfg     ToolsConfig
	build   BuildFunc
	overlay map[string]*entry
	builds  int
}

// entry is an overlay file: new contents, or a deletion.
type entry struct {
	data    []byte
	deleted bool
}

// NewTools opens the snapshot at root. build runs the build tool; nil
// makes the build tool answer that no build is available.
func NewTools(root string, build BuildFunc, cfg ToolsConfig) (*Tools, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("episode: workspace %s: %w", root, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("episode: workspace: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("episode: workspace %s is not a directory", root)
	}
	return &Tools{root: abs, cfg: cfg.withDefaults(), build: build, overlay: map[string]*entry{}}, nil
}

// Config is the tools' configuration with defaults filled in.
func (t *Tools) Config() ToolsConfig { return t.cfg }

// Builds is the number of build tool calls that ran the build.
func (t *Tools) Builds() int { return t.builds }

// Output is a tool's answer.
type Output struct {
	// Text is what the model reads (capped).
	Text string
	// Failed marks an answer that reports a misuse of the tool (a bad path,
	// an edit whose old text does not match...): Text starts with "error: ".
	Failed bool
	// Submitted is set by the submit tool: the episode ends.
	Submitted bool
}

func failed(format string, args ...any) Output {
	return Output{Text: "error: " + fmt.Sprintf(format, args...), Failed: true}
}

// Call runs tool name with its JSON arguments. Misuse (unknown tool, bad
// arguments, paths outside the workspace, edits that do not apply) is an
// answer with Failed set; the error is for infrastructure failures only
// (the context ended, the build could not run, the snapshot is unreadable).
func (t *Tools) Call(ctx context.Context, name, arguments string) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	var out Output
	var err error
	switch name {
	case ToolReadFile:
		var a struct {
			Path      string `json:"path"`
			StartLine int    `json:"start_line"`
			EndLine   int    `json:"end_line"`
		}
		if o, ok := decodeArgs(arguments, &a); !ok {
			return o, nil
		}
		out, err = t.readFile(a.Path, a.StartLine, a.EndLine)
	case ToolSearch:
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if o, ok := decodeArgs(arguments, &a); !ok {
			return o, nil
		}
		out, err = t.search(a.Pattern, a.Path)
	case ToolListFiles:
		var a struct {
			Path string `json:"path"`
		}
		if o, ok := decodeArgs(arguments, &a); !ok {
			return o, nil
		}
		out, err = t.listFiles(a.Path)
	case ToolEdit:
		var a struct {
			Path string  `json:"path"`
			Old  *string `json:"old"`
			New  *string `json:"new"`
		}
		if o, ok := decodeArgs(arguments, &a); !ok {
			return o, nil
		}
		if a.Old == nil || a.New == nil {
			return failed("edit needs path, old and new"), nil
		}
		out, err = t.edit(a.Path, *a.Old, *a.New)
	case ToolBuild:
		out, err = t.runBuild(ctx)
	case ToolSubmit:
		return Output{Submitted: true}, nil
	default:
		return failed("unknown tool %q; the tools are %s", name, strings.Join(ToolNames(), ", ")), nil
	}
	if err != nil {
		return Output{}, err
	}
	out.Text = CapOutput(out.Text, t.cfg.MaxOutputBytes)
	return out, nil
}

// decodeArgs reads a call's arguments object into v ("" reads as {}).
func decodeArgs(arguments string, v any) (Output, bool) {
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	if err := json.Unmarshal([]byte(arguments), v); err != nil {
		return failed("the arguments are not a JSON object of the tool's parameters: %v", err), false
	}
	return Output{}, true
}

// pathError is a path the tools refuse; it becomes a Failed answer.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func refuse(format string, args ...any) error { return &pathError{fmt.Sprintf(format, args...)} }

// answer turns a refused path into a Failed answer and passes other errors on.
func answer(err error) (Output, error) {
	var pe *pathError
	if errors.As(err, &pe) {
		return failed("%s", pe.msg), nil
	}
	return Output{}, err
}

// clean checks a workspace path and returns it in canonical form ("." is
// the root). It refuses absolute paths and ".." components, and symbolic
// links (or non-directories) among the path's existing components in the
// snapshot.
func (t *Tools) clean(p string, allowRoot bool) (string, error) {
	if p == "" {
		if allowRoot {
			return ".", nil
		}
		return "", refuse("a path is required")
	}
	if strings.ContainsRune(p, 0) {
		return "", refuse("path %q contains a NUL byte", p)
	}
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return "", refuse("path %q is absolute; paths are relative to the workspace root", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", refuse("path %q leaves the workspace (..)", p)
		}
	}
	c := path.Clean(p)
	if c == "." {
		if allowRoot {
			return ".", nil
		}
		return "", refuse("path %q names the workspace root, not a file", p)
	}
	// Existing components must be real directories, and the last one a
	// real file or directory: no symbolic link is followed.
	parts := strings.Split(c, "/")
	cur := t.root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("episode: snapshot: %w", err)
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return "", refuse("%s is a symbolic link; links are not followed", strings.Join(parts[:i+1], "/"))
		case i < len(parts)-1 && !st.IsDir():
			return "", refuse("%s is not a directory", strings.Join(parts[:i+1], "/"))
		case !st.IsDir() && !st.Mode().IsRegular():
			return "", refuse("%s is not a regular file", c)
		}
	}
	return c, nil
}

// snapshotFile reads a regular file of the snapshot; ok is false when the
// snapshot has no regular file there. p must be clean.
func (t *Tools) snapshotFile(p string) (data []byte, ok bool, err error) {
	full := filepath.Join(t.root, filepath.FromSlash(p))
	st, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("episode: snapshot: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, false, nil
	}
	if st.Size() > t.cfg.MaxFileBytes {
		return nil, true, refuse("%s is %d bytes, over the %d-byte limit of the tools", p, st.Size(), t.cfg.MaxFileBytes)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return nil, false, fmt.Errorf("episode: snapshot: %w", err)
	}
	return b, true, nil
}

// current returns a file's contents as the episode sees it (overlay over
// snapshot); ok is false when no such file exists. p must be clean.
func (t *Tools) current(p string) (data []byte, ok bool, err error) {
	if e, in := t.overlay[p]; in {
		if e.deleted {
			return nil, false, nil
		}
		return e.data, true, nil
	}
	return t.snapshotFile(p)
}

// isDir says whether p is a directory of the episode's view. p must be clean.
func (t *Tools) isDir(p string) bool {
	if p == "." {
		return true
	}
	if st, err := os.Lstat(filepath.Join(t.root, filepath.FromSlash(p))); err == nil && st.IsDir() {
		return true
	}
	for q, e := range t.overlay {
		if !e.deleted && strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// Read returns a file's current contents (the overlay over the snapshot).
func (t *Tools) Read(p string) ([]byte, error) {
	c, err := t.clean(p, false)
	if err != nil {
		return nil, err
	}
	b, ok, err := t.current(c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("episode: %s: %w", c, fs.ErrNotExist)
	}
	return b, nil
}

// files lists the regular files of the episode's view under dir (clean),
// sorted. Symbolic links and other special files of the snapshot are left
// out.
func (t *Tools) files(dir string) ([]string, error) {
	set := map[string]bool{}
	base := filepath.Join(t.root, filepath.FromSlash(dir))
	if st, err := os.Lstat(base); err == nil && st.IsDir() {
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 || !(d.IsDir() || d.Type().IsRegular()) {
				return nil
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(t.root, p)
			if err != nil {
				return err
			}
			set[filepath.ToSlash(rel)] = true
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("episode: snapshot: %w", err)
		}
	}
	for p, e := range t.overlay {
		if dir != "." && p != dir && !strings.HasPrefix(p, dir+"/") {
			continue
		}
		if e.deleted {
			delete(set, p)
		} else {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// splitLines splits text into lines without their line ends; a final line
// end does not start another line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// numbered renders lines[from-1:to] with their 1-based numbers, as cat -n.
func numbered(lines []string, from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return b.String()
}

func (t *Tools) readFile(p string, start, end int) (Output, error) {
	c, err := t.clean(p, false)
	if err != nil {
		return answer(err)
	}
	data, ok, err := t.current(c)
	if err != nil {
		return answer(err)
	}
	if !ok {
		if t.isDir(c) {
			return failed("%s is a directory; list_files lists it", c), nil
		}
		return failed("%s does not exist", c), nil
	}
	if isBinary(data) {
		return failed("%s is a binary file", c), nil
	}
	lines := splitLines(string(data))
	n := len(lines)
	if n == 0 {
		return Output{Text: c + " is empty\n"}, nil
	}
	if start < 0 || end < 0 {
		return failed("start_line and end_line are 1-based line numbers"), nil
	}
	if start == 0 {
		start = 1
	}
	if start > n {
		return failed("start_line %d is past the end of %s (%d lines)", start, c, n), nil
	}
	more := ""
	switch {
	case end == 0:
		end = min(n, start+t.cfg.MaxReadLines-1)
		if end < n {
			more = fmt.Sprintf("(%d more lines; pass start_line and end_line to read them)\n", n-end)
		}
	case end < start:
		return failed("end_line %d is before start_line %d", end, start), nil
	default:
		end = min(end, n)
	}
	text := fmt.Sprintf("%s (lines %d-%d of %d)\n", c, start, end, n) + numbered(lines, start, end) + more
	return Output{Text: text}, nil
}

// maxMatchLine caps one line of search output.
const maxMatchLine = 240

func (t *Tools) search(pattern, p string) (Output, error) {
	if pattern == "" {
		return failed("search needs a pattern"), nil
	}
	note := ""
	re, err := regexp.Compile(pattern)
	if err != nil {
		re = regexp.MustCompile(regexp.QuoteMeta(pattern))
		note = "(the pattern is not a valid regular expression; it was searched for literally)\n"
	}
	c, err := t.clean(p, true)
	if err != nil {
		return answer(err)
	}
	var paths []string
	_, isFile, err := t.current(c)
	switch {
	case err != nil:
		return answer(err)
	case isFile:
		paths = []string{c}
	case t.isDir(c):
		if paths, err = t.files(c); err != nil {
			return Output{}, err
		}
	default:
		return failed("%s does not exist", c), nil
	}
	var b strings.Builder
	b.WriteString(note)
	shown, total := 0, 0
	for _, f := range paths {
		data, ok, err := t.current(f)
		var pe *pathError
		if errors.As(err, &pe) || !ok || isBinary(data) {
			continue // too large, gone or binary: not searched
		}
		if err != nil {
			return Output{}, err
		}
		for i, line := range splitLines(string(data)) {
			if !re.MatchString(line) {
				continue
			}
			total++
			if shown < t.cfg.MaxSearchResults {
				if len(line) > maxMatchLine {
					line = truncateUTF8(line, maxMatchLine) + "..."
				}
				fmt.Fprintf(&b, "%s:%d: %s\n", f, i+1, line)
				shown++
			}
		}
	}
	switch {
	case total == 0:
		fmt.Fprintf(&b, "no matches for %q\n", pattern)
	case total > shown:
		fmt.Fprintf(&b, "(%d matches; the first %d are shown)\n", total, shown)
	}
	return Output{Text: b.String()}, nil
}

func (t *Tools) listFiles(p string) (Output, error) {
	c, err := t.clean(p, true)
	if err != nil {
		return answer(err)
	}
	if _, ok, err := t.current(c); err == nil && ok {
		return Output{Text: c + "\n"}, nil
	}
	if !t.isDir(c) {
		return failed("%s does not exist", c), nil
	}
	files, err := t.files(c)
	if err != nil {
		return Output{}, err
	}
	var b strings.Builder
	for i, f := range files {
		if i == t.cfg.MaxListEntries {
			fmt.Fprintf(&b, "(%d more files; list a subdirectory)\n", len(files)-i)
			break
		}
		b.WriteString(f)
		if e, ok := t.overlay[f]; ok && !e.deleted {
			if _, inSnap, _ := t.snapshotFile(f); inSnap {
				b.WriteString(" (edited)")
			} else {
				b.WriteString(" (new)")
			}
		}
		b.WriteByte('\n')
	}
	if len(files) == 0 {
		b.WriteString("no files\n")
	}
	return Output{Text: b.String()}, nil
}

func (t *Tools) edit(p, old, new string) (Output, error) {
	c, err := t.clean(p, false)
	if err != nil {
		return answer(err)
	}
	data, ok, err := t.current(c)
	if err != nil {
		return answer(err)
	}
	if !ok {
		if t.isDir(c) {
			return failed("%s is a directory", c), nil
		}
		if old != "" {
			return failed("%s does not exist (an edit with an empty old creates a file)", c), nil
		}
		t.set(c, []byte(new))
		return Output{Text: fmt.Sprintf("created %s (%d lines)\n", c, len(splitLines(new)))}, nil
	}
	if isBinary(data) {
		return failed("%s is a binary file", c), nil
	}
	if old == "" {
		return failed("old is empty: quote the exact text to replace (an empty old only creates a file that does not exist)"), nil
	}
	s := string(data)
	switch n := strings.Count(s, old); n {
	case 0:
		return failed("old does not occur in %s; it must match the file exactly, white space included (read_file shows the current text)", c), nil
	case 1:
	default:
		return failed("old occurs %d times in %s; it must occur exactly once: include more of the surrounding lines", n, c), nil
	}
	at := strings.Index(s, old)
	updated := s[:at] + new + s[at+len(old):]
	t.set(c, []byte(updated))
	first := strings.Count(s[:at], "\n") + 1
	lines := splitLines(updated)
	last := first + strings.Count(new, "\n")
	if strings.HasSuffix(new, "\n") || new == "" {
		last--
	}
	from, to := max(1, first-2), min(len(lines), max(last, first)+2)
	text := fmt.Sprintf("edited %s; lines %d-%d now read:\n", c, from, to)
	if len(lines) == 0 {
		text = fmt.Sprintf("edited %s; it is now empty\n", c)
	} else if from <= to {
		text += numbered(lines, from, to)
	}
	return Output{Text: text}, nil
}

// set records new contents for p (clean), dropping the overlay entry when
// they equal the snapshot's.
func (t *Tools) set(p string, data []byte) {
	if snap, ok, err := t.snapshotFile(p); err == nil && ok && bytes.Equal(snap, data) {
		delete(t.overlay, p)
		return
	}
	t.overlay[p] = &entry{data: data}
}

// Delete removes a file from the episode's view (no tool offers it yet;
// the diff and the build see deletions).
func (t *Tools) Delete(p string) error {
	c, err := t.clean(p, false)
	if err != nil {
		return err
	}
	_, ok, err := t.current(c)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("episode: %s: %w", c, fs.ErrNotExist)
	}
	if _, inSnap, _ := t.snapshotFile(c); inSnap {
		t.overlay[c] = &entry{deleted: true}
	} else {
		delete(t.overlay, c)
	}
	return nil
}

// Changed returns the episode's edits: new contents by path, and deleted
// paths (sorted).
func (t *Tools) Changed() (changed map[string][]byte, deleted []string) {
	changed = map[string][]byte{}
	for p, e := range t.overlay {
		if e.deleted {
			deleted = append(deleted, p)
		} else {
			changed[p] = bytes.Clone(e.data)
		}
	}
	sort.Strings(deleted)
	return changed, deleted
}

func (t *Tools) runBuild(ctx context.Context) (Output, error) {
	if t.build == nil {
		return failed("no build is available in this episode"), nil
	}
	changed, deleted := t.Changed()
	ok, out, err := t.build(ctx, changed, deleted)
	if err != nil {
		return Output{}, fmt.Errorf("episode: build: %w", err)
	}
	t.builds++
	out = strings.TrimRight(out, "\n")
	if ok {
		if out == "" {
			return Output{Text: "build succeeded\n"}, nil
		}
		return Output{Text: "build succeeded\n" + out + "\n"}, nil
	}
	if out == "" {
		return Output{Text: "build failed (no output)\n"}, nil
	}
	return Output{Text: "build failed:\n" + out + "\n"}, nil
}

// CapOutput bounds text to about max bytes: longer text keeps its head and
// its tail (cut at line ends where one is near, never inside a UTF-8
// sequence) around a line saying how many bytes were left out. max <= 0
// leaves text whole.
func CapOutput(text string, max int) string {
	if max <= 0 || len(text) <= max {
		return text
	}
	const noteRoom = 48
	keep := max - noteRoom
	if keep < 2 {
		return truncateUTF8(text, max)
	}
	headLen, tailLen := keep/2, keep-keep/2
	head := truncateUTF8(text, headLen)
	if i := strings.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	tailStart := len(text) - tailLen
	for tailStart < len(text) && !utf8Start(text[tailStart]) {
		tailStart++
	}
	tail := text[tailStart:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	omitted := len(text) - len(head) - len(tail)
	return head + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + tail
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// truncateUTF8 cuts s to at most n bytes at a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}
