package backfill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/murphy-rl/murphy/backfill/cilog"
	"github.com/murphy-rl/murphy/compilefix"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/patch"
	"github.com/murphy-rl/murphy/topics"
)

// File classes of a fix's changes.
const (
	ClassSource = "source"
	ClassTest   = "test"
	ClassBuild  = "build"
	ClassDocs   = "docs"
	ClassOther  = "other"
)

// docNames are documentation files by base name (any extension).
var docNames = []string{"README", "CHANGELOG", "CHANGES", "HISTORY", "NEWS", "LICENSE", "LICENCE", "COPYING",
	"AUTHORS", "CONTRIBUTORS", "CONTRIBUTING", "CODE_OF_CONDUCT", "SECURITY", "NOTICE", "MAINTAINERS"}

// Classify is the class of a repository path in a fix: build
// configuration (build files, dependency manifests, CI files), tests
// (test directories and test file names: *_test.go, test_*.py, *Test.java,
// *.test.ts...), documentation (*.md, *.rst, docs/, README, LICENSE...),
// source (files with a source extension) or other.
func Classify(p string) string {
	p = strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "./")
	base := path.Base(p)
	ext := strings.ToLower(path.Ext(base))
	dirs := strings.Split(path.Dir(p), "/")
	if path.Dir(p) == "." {
		dirs = nil
	}
	lowerDirs := make([]string, len(dirs))
	for i, d := range dirs {
		lowerDirs[i] = strings.ToLower(d)
	}
	has := func(names ...string) bool {
		for _, d := range lowerDirs {
			for _, n := range names {
				if d == n {
					return true
				}
			}
		}
		return false
	}
	switch {
	case patch.BuildConfig(p):
		return ClassBuild
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	switch {
	case has("test", "tests", "testing", "testdata", "__tests__", "spec", "specs", "t"),
		len(lowerDirs) >= 2 && lowerDirs[0] == "src" && lowerDirs[1] == "test",
		strings.HasSuffix(base, "_test.go"), strings.HasPrefix(base, "test_") && ext == ".py",
		strings.HasSuffix(stem, "_test") && ext == ".py", base == "conftest.py",
		ext == ".java" && (strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests") || strings.HasPrefix(stem, "Test")),
		ext == ".kt" && strings.HasSuffix(stem, "Test"),
		strings.Contains(base, ".test.") || strings.Contains(base, ".spec."):
		return ClassTest
	}
	upper := strings.ToUpper(stem)
	for _, n := range docNames {
		if upper == n {
			return ClassDocs
		}
	}
	switch {
	case ext == ".md" || ext == ".rst" || ext == ".adoc" || ext == ".txt" && len(dirs) == 0 || ext == ".markdown",
		has("doc", "docs", "documentation", "man"), strings.HasPrefix(p, ".github/"):
		return ClassDocs
	}
	if _, ok := sourceExts[ext]; ok {
		return ClassSource
	}
	return ClassOther
}

// Split is a fix divided by file class.
type Split struct {
	// Patches holds one unified diff per class present.
	Patches map[string]string
	// Files lists the files of each class.
	Files map[string][]string
}

// SplitPatch divides a unified diff (git's or plain) into its files by
// Classify; binary changes are "other".
func SplitPatch(diff string) (*Split, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return nil, fmt.Errorf("the fix is not a unified diff: %w", err)
	}
	s := &Split{Patches: map[string]string{}, Files: map[string][]string{}}
	parts := map[string]*strings.Builder{}
	for _, f := range files {
		name := f.NewName
		if f.IsDelete || name == "" {
			name = f.OldName
		}
		class := Classify(name)
		if f.IsBinary && class == ClassSource {
			class = ClassOther
		}
		if parts[class] == nil {
			parts[class] = &strings.Builder{}
		}
		text := f.String()
		if !strings.HasPrefix(text, "diff --git ") {
			// go-gitdiff writes the git header; keep patches uniform.
			text = fmt.Sprintf("diff --git a/%s b/%s\n%s", name, name, text)
		}
		parts[class].WriteString(text)
		s.Files[class] = append(s.Files[class], name)
	}
	for c, b := range parts {
		s.Patches[c] = b.String()
	}
	return s, nil
}

// LogTargets returns the compile errors among a log's diagnostics: the
// located errors of compilers and linkers (cilog's KindCompile), not a
// build tool's summary, a failed test or a run-time exception.
func LogTargets(ds []cilog.Diagnostic) []topics.Diagnostic {
	var out []topics.Diagnostic
	for i := range ds {
		d := &ds[i]
		if d.Severity == diag.SeverityError && d.Kind() == cilog.KindCompile && (d.Message != "" || d.Code != "") {
			t := d.Diagnostic
			t.Excerpt = ""
			out = append(out, t)
		}
	}
	return out
}

// MapPaths rewrites each target's file, as the CI printed it (absolute
// under the runner's checkout, or relative to where the tool ran), to the
// longest of its suffixes that is a file of the snapshot; targets whose
// file is not in the snapshot keep theirs.
func MapPaths(ds []topics.Diagnostic, files map[string]bool) []topics.Diagnostic {
	out := make([]topics.Diagnostic, len(ds))
	for i, d := range ds {
		out[i] = d
		if d.File == "" {
			continue
		}
		f := strings.ReplaceAll(d.File, `\`, "/")
		parts := strings.Split(strings.Trim(path.Clean(f), "/"), "/")
		for k := range parts {
			cand := strings.Join(parts[k:], "/")
			if files[cand] {
				out[i].File = cand
				break
			}
		}
	}
	return out
}

// listFiles returns the files under dir, slash-separated and relative.
func listFiles(dir string) (map[string]bool, error) {
	files := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return files, err
}

// history builds the task of a failing/fixing pair (BACKFILL.md).
func (b *Builder) history(ctx context.Context, it Item, name string, res *Result) error {
	rejectErr := func(err error) error {
		if errors.Is(err, errBadInput) {
			res.reject(name, RejectBadInput, strings.TrimPrefix(err.Error(), errBadInput.Error()+": "))
			return nil
		}
		return err
	}
	switch {
	case it.Fail == "":
		res.reject(name, RejectBadInput, "a history item needs the failing revision (fail)")
		return nil
	case it.Fix == "" && it.Patch == "":
		res.reject(name, RejectBadInput, "a history item needs the fixing revision (fix) or a patch file (patch)")
		return nil
	case it.Log == "":
		res.reject(name, RejectBadInput, "a history item needs the failing log (log)")
		return nil
	}
	g, err := b.openGit(ctx, it.Repo)
	if err != nil {
		return rejectErr(err)
	}
	defer g.cleanup()
	prov := Provenance{Kind: KindHistory}
	split, err := b.fixSplit(ctx, g, it, &prov)
	if err != nil {
		return rejectErr(err)
	}
	rep, err := cilog.ParseFile(it.Log)
	if err != nil {
		return rejectErr(badInput("log %s: %v", it.Log, err))
	}
	res.Cause = rep.Cause
	for _, d := range rep.Diagnostics {
		if res.Diagnostics == nil {
			res.Diagnostics = map[string]int{}
		}
		res.Diagnostics[d.Tool]++
	}
	ref := split.Patches[ClassSource]
	if ref == "" {
		res.reject(name, RejectNoSourceChange, noSourceDetail(split, rep))
		return nil
	}
	prov.SplitFiles = split.Files
	for c, p := range split.Patches {
		if c != ClassSource {
			if prov.Split == nil {
				prov.Split = map[string]string{}
			}
			prov.Split[c] = p
		}
	}
	tmp, err := b.tempDir("murphy-backfill-snap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := g.archive(ctx, prov.Fail, tmp); err != nil {
		return rejectErr(err)
	}
	files, err := listFiles(tmp)
	if err != nil {
		return err
	}
	targets := locate(rep.Diagnostics, files)
	if len(targets) == 0 {
		res.reject(name, RejectNoDiagnostics, fmt.Sprintf("the log (cause %s, %d diagnostics) names no compile error", rep.Cause, len(rep.Diagnostics)))
		return nil
	}
	prov.LogTargets = len(targets)
	inRepo, v := inRepository(targets, &prov)
	if !v.ok() {
		res.reject(name, v.reason, v.detail)
		return nil
	}
	digest, err := b.put(ctx, tmp)
	if err != nil {
		return rejectErr(badInput("snapshot of %s: %v", prov.Fail, err))
	}
	task := b.newTask(it, SourceHistory, inferLanguage(it.Language, tmp), digest, ref)
	if ok, err := b.resolved(ctx, name, "", task, &prov, res); !ok {
		return err
	}
	return b.verifyHistory(ctx, name, task, inRepo, &prov, res)
}

// inRepository returns the targets in files of the repository, recording
// the others as dropped; it refuses an item none of whose targets is.
func inRepository(targets []logTarget, prov *Provenance) ([]logTarget, *verdict) {
	var inRepo, away []logTarget
	for _, t := range targets {
		if t.inRepo {
			inRepo = append(inRepo, t)
		} else {
			away = append(away, t)
			prov.TargetMap = append(prov.TargetMap, TargetMatch{Log: t.record(), Dropped: "no file of the repository"})
		}
	}
	if len(inRepo) > 0 {
		return inRepo, nil
	}
	detail, installed := outside(away)
	if installed {
		return nil, refuse(RejectDependency, "the log's compile errors are all inside installed dependencies, not the repository's sources: %s", detail)
	}
	return nil, refuse(RejectNotReproduced, "the log's compile errors name no file of the repository: %s", detail)
}

// fixSplit resolves the item's revisions into prov and splits its fix by
// file class.
func (b *Builder) fixSplit(ctx context.Context, g *gitRepo, it Item, prov *Provenance) (*Split, error) {
	fail, err := g.resolve(ctx, it.Fail)
	if err != nil {
		return nil, err
	}
	prov.Fail = fail
	var diff string
	if it.Patch != "" {
		raw, err := os.ReadFile(it.Patch)
		if err != nil {
			return nil, badInput("patch: %v", err)
		}
		diff = string(raw)
	} else {
		fix, err := g.resolve(ctx, it.Fix)
		if err != nil {
			return nil, err
		}
		prov.Fix = fix
		if diff, err = g.diff(ctx, fail, fix); err != nil {
			return nil, err
		}
	}
	split, err := SplitPatch(diff)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return split, nil
}

// verifyHistory builds the failing snapshot, keeps the log's targets it
// reproduces (by message, or by location and kind) and checks the
// reference.
func (b *Builder) verifyHistory(ctx context.Context, name string, task *topics.Task, targets []logTarget, prov *Provenance, res *Result) error {
	base, v, err := b.baseline(ctx, task)
	if err != nil {
		return err
	}
	if !v.ok() {
		res.reject(name, v.reason, v.detail)
		return nil
	}
	errs := diag.Errors(base.Diagnostics)
	if base.OK && len(errs) == 0 {
		res.reject(name, RejectNotReproduced, "the failing revision builds in the sandbox")
		return nil
	}
	kept, matches := match(targets, base.Diagnostics)
	prov.TargetMap = append(matches, prov.TargetMap...)
	prov.Dropped = prov.LogTargets - len(kept)
	if len(kept) == 0 {
		reason, detail := unreproduced(base, targets)
		res.reject(name, reason, detail)
		return nil
	}
	task.CompileFix.Targets = kept
	runs := b.Opts.HistoryRuns
	if runs <= 0 {
		runs = 2
	}
	v, err = b.checkReference(ctx, task, runs)
	if err != nil {
		return err
	}
	if !v.ok() {
		res.reject(name, v.reason, v.detail)
		return nil
	}
	task.TaskID = taskID(name, "", task.CompileFix.Workspace, task.ReferencePatch)
	task.Prompt = b.prompt(ctx, task)
	if err := task.Validate(); err != nil {
		return fmt.Errorf("backfill: task %s: %w", task.TaskID, err)
	}
	prov.TaskID = task.TaskID
	res.Tasks = append(res.Tasks, *task)
	res.Provenance = append(res.Provenance, *prov)
	b.logf("%s: task %s (%d of %d log targets reproduced)", name, task.TaskID, len(kept), prov.LogTargets)
	return nil
}

// unreproduced is the rejection of a failing snapshot whose build
// reproduces none of the log's targets: a missing dependency when its
// output says so, a build that stops before compiling anything with the
// tool's last words, else the two sets of errors side by side.
func unreproduced(base compilefix.Baseline, targets []logTarget) (string, string) {
	if dep, ok := missingDependency(base.Output); ok {
		return RejectMissingDependency, "the failing revision needs what the offline sandbox lacks: " + dep
	}
	logged := make([]topics.Diagnostic, len(targets))
	for i, t := range targets {
		logged[i] = t.d
	}
	compiled := 0
	for _, d := range base.Diagnostics {
		if compileTool(d) && d.File != "" && d.Line > 0 {
			compiled++
		}
	}
	if compiled == 0 {
		detail := "the failing revision's build stops before it compiles anything"
		if out := tail(base.Output, detailBytes); out != "" {
			detail += ": " + out
		}
		return RejectBuildFails, detail
	}
	return RejectNotReproduced, fmt.Sprintf("the sandbox build of the failing revision reproduces none of the log's %d compile error(s) (log: %s; sandbox: %s)",
		len(targets), headers(logged, 3), headers(diag.Errors(base.Diagnostics), 3))
}

// compileTool reports a compiler's diagnostic (Python's: a syntax error).
func compileTool(d topics.Diagnostic) bool {
	switch d.Tool {
	case diag.ToolGCC, diag.ToolClang, diag.ToolGo, diag.ToolJavac, diag.ToolMaven, diag.ToolGradle, diag.ToolRustc, diag.ToolTsc, diag.ToolMake:
		return true
	case diag.ToolPython:
		return diag.PythonSyntaxError(d.Code)
	}
	return false
}

// inferLanguage is lang normalised, or the language most of dir's
// sources are in.
func inferLanguage(lang, dir string) string {
	if lang != "" {
		return strings.ToLower(lang)
	}
	return detectLanguage(dir)
}
