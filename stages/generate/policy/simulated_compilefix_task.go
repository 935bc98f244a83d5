package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/topics"
)

// cfTask is what the simulated policy reads of a compile-fix task.
type cfTask struct {
	lang  string            // the task's language, lower case
	files map[string]string // path → content, from the prompt's file blocks
	ref   string            // the reference patch as the task states it
	// fixed holds, for each file the reference changes (and that it applies
	// to), the file's content after the reference patch.
	fixed   map[string]string
	targets []cfTarget
}

// cfTarget is a place to act on: a target diagnostic's line (0-based) in a
// file the prompt shows.
type cfTarget struct {
	file string
	line int
}

var reFileBlock = regexp.MustCompile(`^--- (\S(?:.*\S)?) ---$`)

// parseCompileFix reads the task: the prompt's "--- path ---" file blocks
// (each runs to the next header or the end of the prompt), the reference
// patch (go-gitdiff, applied to those files) and the target diagnostics.
// Targets outside the shown files are skipped; without any, the first line
// the reference changes is the target.
func parseCompileFix(task *topics.Task) *cfTask {
	c := &cfTask{lang: strings.ToLower(task.TaskLanguage()), files: fileBlocks(task.Prompt),
		ref: task.ReferencePatch, fixed: map[string]string{}}
	if strings.TrimSpace(c.ref) == "" {
		c.ref = ""
	} else {
		c.ref = tidyDiff(c.ref)
	}
	if c.ref != "" {
		if fs, err := patch.Parse(c.ref); err == nil {
			for _, f := range fs {
				p := patch.FilePath(f)
				old, ok := c.files[p]
				if !ok || f.IsBinary || f.IsNew || f.IsDelete || len(f.TextFragments) == 0 {
					continue
				}
				if fixed, err := patch.ApplyFile([]byte(old), f, patch.Options{}); err == nil && string(fixed) != old {
					c.fixed[p] = string(fixed)
				}
			}
		}
	}
	if task.CompileFix != nil {
		for _, d := range task.CompileFix.Targets {
			p := cleanPath(d.File)
			content, ok := c.files[p]
			if ok && d.Line >= 1 && d.Line <= len(splitKeep(content)) {
				c.targets = append(c.targets, cfTarget{p, d.Line - 1})
			}
		}
	}
	if len(c.targets) == 0 {
		for _, p := range sortedKeys(c.fixed) {
			old := c.files[p]
			if es := lineEdits(old, c.fixed[p]); len(es) > 0 {
				l := min(es[0].start, len(splitKeep(old))-1)
				if l >= 0 {
					c.targets = append(c.targets, cfTarget{p, l})
					break
				}
			}
		}
	}
	return c
}

// fileBlocks parses the "--- path ---\n<content>" blocks of a prompt. A
// block whose content is one fenced code block loses the fence. Blank lines
// at the end of a block are taken for a separator, not for the file's: a
// prompt may or may not space its blocks, and few source files end with a
// blank line, while a phantom one breaks every hunk that reaches the end
// of the file (patch anchors such a hunk there).
func fileBlocks(prompt string) map[string]string {
	files := map[string]string{}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur != "" {
			files[cur] = trimBlankTail(unfence(b.String()))
		}
		b.Reset()
	}
	for _, l := range strings.SplitAfter(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n") {
		if m := reFileBlock.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			flush()
			cur = cleanPath(m[1])
			continue
		}
		if cur != "" {
			b.WriteString(l)
		}
	}
	flush()
	return files
}

func trimBlankTail(s string) string {
	ls := splitKeep(s)
	for len(ls) > 0 && blank(ls[len(ls)-1]) {
		ls = ls[:len(ls)-1]
	}
	return strings.Join(ls, "")
}

func unfence(s string) string {
	ls := splitKeep(s)
	first, last := 0, len(ls)-1
	for last >= 0 && strings.TrimSpace(ls[last]) == "" {
		last--
	}
	if last <= first || fenceOf(strings.TrimSpace(ls[first])) == "" {
		return s
	}
	f := fenceOf(strings.TrimSpace(ls[first]))
	if t := strings.TrimSpace(ls[last]); !strings.HasPrefix(t, f) || strings.Trim(t, f[:1]) != "" {
		return s
	}
	return strings.Join(ls[first+1:last], "")
}

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	return strings.TrimPrefix(path.Clean(p), "./")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// splitKeep splits s into lines that keep their "\n" (the last may lack it).
func splitKeep(s string) []string {
	ls := strings.SplitAfter(s, "\n")
	if len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// lineEdit replaces lines [start, end) with ins.
type lineEdit struct {
	start, end int
	ins        []string
}

// lineEdits are the line edits (go-udiff) that turn old into new.
func lineEdits(old, new string) []lineEdit {
	var out []lineEdit
	for _, e := range udiff.Lines(old, new) {
		s := strings.Count(old[:e.Start], "\n")
		end := strings.Count(old[:e.End], "\n")
		if e.End == len(old) && len(old) > 0 && old[len(old)-1] != '\n' {
			end++
		}
		out = append(out, lineEdit{s, end, splitKeep(e.New)})
	}
	return out
}

// applyEdits applies sorted, disjoint line edits.
func applyEdits(lines []string, es []lineEdit) []string {
	var out []string
	pos := 0
	for _, e := range es {
		out = append(out, lines[pos:e.start]...)
		out = append(out, e.ins...)
		pos = e.end
	}
	return append(out, lines[pos:]...)
}

// langOf is a file's language, by extension, else the task's.
func (c *cfTask) langOf(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".py":
		return "python"
	case ".go":
		return "go"
	case ".java":
		return "java"
	case ".c", ".h":
		return "c"
	case ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx":
		return "cpp"
	case ".rs":
		return "rust"
	case ".js", ".mjs", ".ts", ".tsx", ".jsx":
		return "js"
	case ".sh", ".bash":
		return "sh"
	case ".rb":
		return "ruby"
	}
	return c.lang
}

func commentPrefix(lang string) string {
	switch lang {
	case "python", "sh", "bash", "ruby", "perl", "r", "make", "yaml", "toml":
		return "#"
	case "sql", "lua", "haskell":
		return "--"
	}
	return "//"
}

func blank(l string) bool { return strings.TrimSpace(l) == "" }

func indentOf(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }
