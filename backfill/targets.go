package backfill

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/backfill/cilog"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/topics"
)

// targetTolerance is how many lines apart a log's error and the sandbox
// build's may be and still be the same error by location and kind:
// toolchain versions place an error at its token or at its statement.
const targetTolerance = 2

// How a log target was found in the sandbox build.
const (
	ByMessage  = "message"  // diag.Match: compatible file and code, the same message (or code) near the line
	ByLocation = "location" // diag.SameError: same file, line within targetTolerance, same class
)

// TargetRef is one diagnostic as the provenance records it.
type TargetRef struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	Class   string `json:"class,omitempty"`
	// LogFile is the path as the log printed it, LogLines where (log
	// targets only).
	LogFile  string  `json:"log_file,omitempty"`
	LogLines *[2]int `json:"log_lines,omitempty"`
}

// TargetMatch records one of the log's compile errors: the sandbox build's
// diagnostic it is (the task's target, in the sandbox's words) and by
// what, or why it was dropped.
type TargetMatch struct {
	Log     TargetRef  `json:"log"`
	Sandbox *TargetRef `json:"sandbox,omitempty"`
	By      string     `json:"by,omitempty"`
	Dropped string     `json:"dropped,omitempty"`
}

func ref(d topics.Diagnostic) TargetRef {
	return TargetRef{File: d.File, Line: d.Line, Column: d.Column, Code: d.Code, Message: d.Message, Class: diag.Class(d)}
}

// logTarget is a compile error of the log with its path mapped into the
// snapshot.
type logTarget struct {
	d      topics.Diagnostic // mapped
	raw    cilog.Diagnostic
	inRepo bool
}

func (t logTarget) record() TargetRef {
	r := ref(t.d)
	r.LogFile = t.raw.File
	ll := t.raw.LogLines
	r.LogLines = &ll
	return r
}

// locate maps the log's compile errors into the snapshot (files).
func locate(ds []cilog.Diagnostic, files map[string]bool) []logTarget {
	var out []logTarget
	for i := range ds {
		d := &ds[i]
		if d.Severity != diag.SeverityError || d.Kind() != cilog.KindCompile || d.Message == "" && d.Code == "" {
			continue
		}
		t := d.Diagnostic
		t.Excerpt = ""
		mapped := MapPaths([]topics.Diagnostic{t}, files)[0]
		out = append(out, logTarget{d: mapped, raw: *d, inRepo: files[mapped.File]})
	}
	return out
}

// outside describes the log's errors that are in no file of the
// repository: inside installed dependencies when Python says so.
func outside(ts []logTarget) (detail string, installed bool) {
	var parts []string
	installed = len(ts) > 0
	for i, t := range ts {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("(%d more)", len(ts)-3))
			break
		}
		parts = append(parts, diag.Header(t.d))
	}
	for _, t := range ts {
		if !diag.InstalledPackage(t.d.File) {
			installed = false
		}
	}
	return strings.Join(parts, "; "), installed
}

// packageOf names the installed distribution a file belongs to: the
// directory under site-packages or dist-packages, or the standard library.
func packageOf(file string) string {
	f := strings.ReplaceAll(file, `\`, "/")
	for _, dir := range []string{"/site-packages/", "/dist-packages/"} {
		if i := strings.LastIndex(f, dir); i >= 0 {
			rest := f[i+len(dir):]
			top, _, _ := strings.Cut(rest, "/")
			return strings.TrimSuffix(top, ".py")
		}
	}
	return "the standard library"
}

// installedFailure describes a log whose compile errors are all inside
// installed distributions ("" when they are not).
func installedFailure(ds []cilog.Diagnostic) string {
	var pkgs []string
	seen := map[string]bool{}
	var first *cilog.Diagnostic
	for i := range ds {
		d := &ds[i]
		if d.Severity != diag.SeverityError || d.Kind() != cilog.KindCompile {
			continue
		}
		if !diag.InstalledPackage(d.File) {
			return ""
		}
		if first == nil {
			first = d
		}
		if p := packageOf(d.File); !seen[p] {
			seen[p] = true
			pkgs = append(pkgs, p)
		}
	}
	if first == nil {
		return ""
	}
	return fmt.Sprintf("the failure is inside the installed %s (%s, log lines %d-%d)",
		plural(pkgs, "distribution", "distributions"), diag.Header(first.Diagnostic), first.LogLines[0], first.LogLines[1])
}

func plural(names []string, one, many string) string {
	if len(names) == 1 {
		return one + " " + names[0]
	}
	return many + " " + strings.Join(names, ", ")
}

// dependencyManifest reports files that say what is installed (pins).
func dependencyManifest(p string) bool {
	base := path.Base(p)
	switch {
	case strings.HasPrefix(base, "requirements") || strings.HasSuffix(base, "requirements.txt") ||
		strings.Contains(path.Dir(p), "requirements"),
		base == "setup.py", base == "setup.cfg", base == "pyproject.toml", base == "Pipfile", base == "Pipfile.lock",
		base == "poetry.lock", base == "tox.ini", base == "environment.yml", base == "pom.xml", base == "go.mod", base == "go.sum",
		strings.HasSuffix(base, ".gradle") || strings.HasSuffix(base, ".gradle.kts") || base == "gradle.properties",
		base == "package.json", base == "package-lock.json", base == "yarn.lock", base == "Cargo.toml", base == "Cargo.lock",
		base == "Gemfile", base == "Gemfile.lock", base == "constraints.txt":
		return true
	}
	return false
}

// noSourceDetail explains a fix that changes no source file, naming the
// log's failure when it is inside an installed dependency and the fix
// only changes what is installed.
func noSourceDetail(split *Split, rep *cilog.Report) string {
	var classes []string
	for c, fs := range split.Files {
		classes = append(classes, fmt.Sprintf("%s: %s", c, strings.Join(fs, ", ")))
	}
	sort.Strings(classes)
	if len(classes) == 0 {
		return "the fix changes nothing"
	}
	detail := "the fix changes no source file (" + strings.Join(classes, "; ") + ")"
	if rep == nil {
		return detail
	}
	pins := len(split.Files[ClassBuild]) > 0
	for c, fs := range split.Files {
		for _, f := range fs {
			if c != ClassDocs && (c != ClassBuild || !dependencyManifest(f)) {
				pins = false
			}
		}
	}
	if why := installedFailure(rep.Diagnostics); why != "" {
		detail = why + "; " + detail
		if pins {
			detail += ": it only changes which dependency versions are installed, nothing in the repository's sources to repair"
		}
	}
	return detail
}

// match pairs the log's targets with the baseline's errors: by message
// first (diag.Match), then by location and kind (diag.SameError), nearest
// line first. Each kept target is the baseline's diagnostic, in the
// sandbox's words, which is what candidates' builds are compared with.
func match(ts []logTarget, baseline []topics.Diagnostic) (kept []topics.Diagnostic, m []TargetMatch) {
	errs := diag.Errors(baseline)
	used := make([]bool, len(errs))
	found := make([]int, len(ts))
	by := make([]string, len(ts))
	for i := range found {
		found[i] = -1
	}
	for _, pass := range []string{ByMessage, ByLocation} {
		for i, t := range ts {
			if found[i] >= 0 {
				continue
			}
			best, dist := -1, 0
			for k, b := range errs {
				if used[k] {
					continue
				}
				ok := pass == ByMessage && diag.Match(t.d, b) || pass == ByLocation && diag.SameError(t.d, b, targetTolerance)
				if !ok {
					continue
				}
				if d := lineDistance(t.d, b); best < 0 || d < dist {
					best, dist = k, d
				}
			}
			if best >= 0 {
				found[i], by[i], used[best] = best, pass, true
			}
		}
	}
	for i, t := range ts {
		tm := TargetMatch{Log: t.record()}
		if k := found[i]; k >= 0 {
			s := ref(errs[k])
			tm.Sandbox, tm.By = &s, by[i]
			kept = append(kept, errs[k])
		} else {
			tm.Dropped = "the sandbox build reports no error there"
		}
		m = append(m, tm)
	}
	return kept, m
}

func lineDistance(a, b topics.Diagnostic) int {
	if a.Line == 0 || b.Line == 0 {
		return 1 << 20
	}
	if a.Line > b.Line {
		return a.Line - b.Line
	}
	return b.Line - a.Line
}
