package backfill

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/backfill/inject"
	"github.com/murphy-rl/murphy/compilefix/diag"
	"github.com/murphy-rl/murphy/compilefix/workspace"
	"github.com/murphy-rl/murphy/topics"
)

// nearLines is how far from a line the operator expects a diagnostic may
// be and still be the injected one.
const nearLines = 3

// maxDuplicates bounds the identical patches drawn per operator before it
// is given up.
const maxDuplicates = 8

// inject builds up to it.Count tasks by planting compile errors in a
// clean tree (BACKFILL.md).
func (b *Builder) inject(ctx context.Context, it Item, name string, res *Result) error {
	rejectErr := func(err error) error {
		if errors.Is(err, errBadInput) {
			res.reject(name, RejectBadInput, strings.TrimPrefix(err.Error(), errBadInput.Error()+": "))
			return nil
		}
		return err
	}
	tmp, err := b.tempDir("murphy-backfill-inject-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return err
	}
	commit, err := b.materialise(ctx, it.Repo, it.Fail, tree)
	if err != nil {
		return rejectErr(err)
	}
	lang := inject.Lang(it.Language)
	if it.Language == "" {
		lang = detectLanguage(tree)
	}
	if lang == "" {
		res.reject(name, RejectBadInput, fmt.Sprintf("no injection operators for language %q (have %s)", it.Language, strings.Join(inject.Languages(), ", ")))
		return nil
	}
	ops, err := operators(lang, it)
	if err != nil {
		return rejectErr(err)
	}
	clean, output, err := b.cleanBaseline(ctx, it, name, lang, tree, res)
	if clean == nil || err != nil {
		return err
	}
	files, err := candidateFiles(tree, lang, it.Build, output)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		res.reject(name, RejectBadInput, fmt.Sprintf("no %s source file to inject into", lang))
		return nil
	}
	p := &planting{it: it, name: name, lang: lang, tree: tree, commit: commit, deps: clean.CompileFix.Dependencies, res: res}
	return b.plant(ctx, p, ops, files)
}

// cleanBaseline is the task of the clean tree and its build's output. The
// clean tree must build: otherwise no failure says anything about a
// planted error. A nil task with a nil error is an item rejected in res.
func (b *Builder) cleanBaseline(ctx context.Context, it Item, name, lang, tree string, res *Result) (*topics.Task, string, error) {
	digest, err := b.put(ctx, tree)
	if err != nil {
		res.reject(name, RejectBadInput, fmt.Sprintf("snapshot: %v", err))
		return nil, "", nil
	}
	clean := b.newTask(it, SourceInject, lang, digest, "")
	if ok, err := b.resolved(ctx, name, "the clean tree: ", clean, &Provenance{}, res); !ok {
		return nil, "", err
	}
	base, v, err := b.baseline(ctx, clean)
	if err != nil {
		return nil, "", err
	}
	if !v.ok() {
		res.reject(name, v.reason, "the clean tree: "+v.detail)
		return nil, "", nil
	}
	if !base.OK || len(diag.Errors(base.Diagnostics)) > 0 {
		if dep, ok := missingDependency(base.Output); ok {
			res.reject(name, RejectMissingDependency, "the clean tree needs what the offline sandbox lacks: "+dep)
			return nil, "", nil
		}
		detail := fmt.Sprintf("the clean tree does not build (%s)", strings.Join(it.Build, " "))
		if out := tail(base.Output, detailBytes); out != "" {
			detail += ": " + out
		}
		res.reject(name, RejectBadInput, detail)
		return nil, "", nil
	}
	return clean, base.Output, nil
}

// planting is what plant needs of an inject item: the item, its clean
// tree and commit, and the dependencies its clean task resolved.
type planting struct {
	it                       Item
	name, lang, tree, commit string
	deps                     string
	res                      *Result
}

// plant draws mutations from each operator in turn, over the files in a
// seeded order, and keeps the tasks whose planted error the build reports,
// until it has it.Count, the attempts run out or no operator has a
// mutation left.
func (b *Builder) plant(ctx context.Context, p *planting, ops, files []string) error {
	it, name, res := p.it, p.name, p.res
	count := it.Count
	if count <= 0 {
		count = 1
	}
	rng := rand.New(rand.NewPCG(uint64(it.Seed), 0x6261636b66696c6c))
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	draws := make([]*drawer, len(ops))
	for i, op := range ops {
		fs := slices.Clone(files)
		rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		draws[i] = &drawer{lang: p.lang, op: op, tree: p.tree, files: fs, seed: it.Seed}
	}
	maxAttempts := b.Opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 4*count + len(ops)
	}
	seen := map[[32]byte]string{}
	kept, attempts := 0, 0
	for kept < count && attempts < maxAttempts {
		progress := false
		for _, d := range draws {
			if kept >= count || attempts >= maxAttempts {
				break
			}
			m := d.next(seen, name, res)
			if m == nil {
				continue
			}
			progress = true
			attempts++
			task, prov, v, err := b.injected(ctx, it, name, p.lang, p.tree, p.deps, m)
			if err != nil {
				return err
			}
			if !v.ok() {
				res.reject(name, v.reason, fmt.Sprintf("%s in %s:%d (%s): %s", m.Operator, m.File, m.Line, m.Description, v.detail))
				continue
			}
			prov.Rev, prov.Dependencies = p.commit, res.Dependencies
			res.Tasks = append(res.Tasks, *task)
			res.Provenance = append(res.Provenance, prov)
			kept++
			b.logf("%s: task %s (%s in %s:%d)", name, task.TaskID, m.Operator, m.File, m.Line)
		}
		if !progress {
			break
		}
	}
	return nil
}

// operators are the item's operators (all of the language's by default);
// a build that only byte-compiles Python catches syntax errors alone.
func operators(lang string, it Item) ([]string, error) {
	all := inject.Operators(lang)
	ops := all
	if len(it.Operators) > 0 {
		ops = nil
		for _, op := range it.Operators {
			if !slices.Contains(all, op) {
				return nil, badInput("operator %q is not defined for %s (have %s)", op, lang, strings.Join(all, ", "))
			}
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
	}
	if syntaxOnly(it.Build) {
		var syn []string
		for _, op := range ops {
			if inject.Syntactic(lang, op) {
				syn = append(syn, op)
			}
		}
		if len(syn) == 0 {
			return nil, badInput("the build (%s) only parses the sources, and none of the operators %s plants a syntax error", strings.Join(it.Build, " "), strings.Join(ops, ", "))
		}
		ops = syn
	}
	return slices.Clone(ops), nil
}

// syntaxOnly reports a build that byte-compiles Python without running
// it (compileall, py_compile): only syntax errors fail it.
func syntaxOnly(argv []string) bool {
	if diag.NormalizeTool(argv[0]) != diag.ToolPython {
		return false
	}
	for _, a := range argv[1:] {
		if a == "compileall" || a == "py_compile" {
			return true
		}
	}
	return false
}

// drawer draws the mutations of one operator: the files in a seeded
// order, a fresh seed on each pass over them.
type drawer struct {
	lang, op, tree string
	files          []string
	seed           int64
	cursor, pass   int
	found          bool // a site was found in the current pass
	dups           int
	done           bool
}

func (d *drawer) next(seen map[[32]byte]string, name string, res *Result) *inject.Mutation {
	for !d.done {
		if d.cursor == len(d.files) {
			if !d.found {
				d.done = true // no file has a site
				break
			}
			d.cursor, d.found = 0, false
			d.pass++
		}
		f := d.files[d.cursor]
		d.cursor++
		src, err := os.ReadFile(filepath.Join(d.tree, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		m, err := inject.Inject(d.lang, d.op, f, src, mixSeed(d.seed, d.op, f, d.pass))
		if err != nil {
			continue // no site in this file (inject.ErrNoSite) or not parseable
		}
		d.found = true
		p := m.Patch()
		if p == "" {
			continue
		}
		h := sha256.Sum256([]byte(p))
		if other, dup := seen[h]; dup {
			res.reject(name, RejectDuplicate, fmt.Sprintf("%s in %s:%d gives the same patch as %s", m.Operator, m.File, m.Line, other))
			if d.dups++; d.dups >= maxDuplicates {
				d.done = true
			}
			continue
		}
		seen[h] = fmt.Sprintf("%s in %s:%d", m.Operator, m.File, m.Line)
		return m
	}
	return nil
}

// mixSeed derives the seed of one draw from the item's.
func mixSeed(seed int64, op, file string, pass int) int64 {
	h := sha256.New()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(pass))
	h.Write(b[:])
	h.Write([]byte(op + "\x00" + file))
	return int64(binary.LittleEndian.Uint64(h.Sum(nil)[:8]) >> 1)
}

// injected verifies one mutation: the mutated snapshot's build fails with
// an error at the mutated place, and the inverse patch builds.
func (b *Builder) injected(ctx context.Context, it Item, name, lang, tree, deps string, m *inject.Mutation) (*topics.Task, Provenance, *verdict, error) {
	var prov Provenance
	digest, err := b.putReplaced(ctx, tree, m.File, m.New)
	if err != nil {
		return nil, prov, nil, err
	}
	task := b.newTask(it, SourceInject, lang, digest, m.Patch())
	// a mutation changes a source file, never a manifest: the clean
	// tree's dependencies are the mutated tree's
	task.CompileFix.Dependencies = deps
	base, v, err := b.baseline(ctx, task)
	if err != nil || !v.ok() {
		return nil, prov, v, err
	}
	errs := diag.Errors(base.Diagnostics)
	if base.OK && len(errs) == 0 {
		return nil, prov, refuse(RejectNotDiagnosed, "the mutated tree builds"), nil
	}
	if len(near(errs, m)) == 0 {
		if dep, ok := missingDependency(base.Output); ok {
			return nil, prov, refuse(RejectMissingDependency, "%s", dep), nil
		}
		return nil, prov, refuse(RejectNotDiagnosed, "the build reports no error at %s near lines %v (errors: %s)", m.File, m.Expect, headers(errs, 3)), nil
	}
	task.CompileFix.Targets = errs
	runs := b.Opts.InjectRuns
	if runs <= 0 {
		runs = 1
	}
	if v, err := b.checkReference(ctx, task, runs); err != nil || !v.ok() {
		return nil, prov, v, err
	}
	task.TaskID = taskID(name, m.Operator, digest, task.ReferencePatch)
	task.Prompt = b.prompt(ctx, task)
	if err := task.Validate(); err != nil {
		return nil, prov, nil, fmt.Errorf("backfill: task %s: %w", task.TaskID, err)
	}
	prov = Provenance{TaskID: task.TaskID, Kind: KindInject, Operator: m.Operator, File: m.File, Line: m.Line, Description: m.Description}
	return task, prov, nil, nil
}

// near returns the diagnostics at m's file within nearLines of a line the
// operator expects (any line of the file when it expects none).
func near(ds []topics.Diagnostic, m *inject.Mutation) []topics.Diagnostic {
	var out []topics.Diagnostic
	for _, d := range ds {
		if d.File != m.File {
			continue
		}
		ok := len(m.Expect) == 0
		for _, l := range m.Expect {
			ok = ok || d.Line == 0 || (d.Line >= l-nearLines && d.Line <= l+nearLines)
		}
		if ok {
			out = append(out, d)
		}
	}
	return out
}

// replaceFS is a tree with one file's content replaced.
type replaceFS struct {
	fs.FS
	name string
	data []byte
}

func (r replaceFS) ReadFile(name string) ([]byte, error) {
	if name == r.name {
		return r.data, nil
	}
	return fs.ReadFile(r.FS, name)
}

func (r replaceFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(r.FS, name) }

// putReplaced stores the snapshot of tree with file's content replaced,
// without copying the tree.
func (b *Builder) putReplaced(ctx context.Context, tree, file string, data []byte) (string, error) {
	root, err := os.OpenRoot(tree)
	if err != nil {
		return "", err
	}
	defer root.Close()
	digest, tarball, err := workspace.Pack(replaceFS{FS: root.FS(), name: file, data: data})
	if err != nil {
		return "", err
	}
	if err := b.Store.Put(ctx, digest, tarball); err != nil {
		return "", fmt.Errorf("backfill: workspace store: %w", err)
	}
	return digest, nil
}

// candidateFiles are the source files of lang that the build compiles, as
// far as can be told: not tests, docs or vendored code; under the paths
// the build command names when it names some; Go files that match the
// build constraints; C files the build's output names (with the headers
// beside them) when it names some.
func candidateFiles(tree, lang string, argv []string, cleanOutput string) ([]string, error) {
	files, err := sourceFiles(tree, lang, namedPaths(tree, argv))
	if err != nil {
		return nil, err
	}
	if lang == "c" {
		files = builtCFiles(files, cleanOutput)
	}
	sort.Strings(files)
	return files, nil
}

// namedPaths are the paths in tree that the build command argv names
// (slash-separated, relative to tree), flags and "." and "./..." aside.
func namedPaths(tree string, argv []string) []string {
	var named []string
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || a == "." || a == "./..." {
			continue
		}
		c := path.Clean(strings.TrimPrefix(filepath.ToSlash(a), "./"))
		if !filepath.IsLocal(filepath.FromSlash(c)) {
			continue
		}
		if _, err := os.Stat(filepath.Join(tree, filepath.FromSlash(c))); err == nil {
			named = append(named, c)
		}
	}
	return named
}

// underAny reports whether p is one of named or below one; every path is
// when named is empty.
func underAny(p string, named []string) bool {
	if len(named) == 0 {
		return true
	}
	for _, n := range named {
		if p == n || strings.HasPrefix(p, n+"/") {
			return true
		}
	}
	return false
}

// sourceFiles walks tree for the regular source files of lang under
// named (Classify's sources; no .pyi stubs; Go files that match the build
// constraints), skipping the directories skipDir names.
func sourceFiles(tree, lang string, named []string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		ext := path.Ext(rel)
		if !d.Type().IsRegular() || sourceExts[ext] != lang || ext == ".pyi" || Classify(rel) != ClassSource || !underAny(rel, named) {
			return nil
		}
		if lang == "go" {
			ok, err := build.Default.MatchFile(filepath.Dir(p), filepath.Base(p))
			if err != nil || !ok {
				return nil
			}
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

// builtCFiles narrows C files to the .c files the build's output names and
// the headers in their directories; all of files when it names none.
func builtCFiles(files []string, cleanOutput string) []string {
	var mentioned []string
	dirs := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".c") && mentions(cleanOutput, f) {
			mentioned = append(mentioned, f)
			dirs[path.Dir(f)] = true
		}
	}
	if len(mentioned) == 0 {
		return files
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".h") && dirs[path.Dir(f)] {
			mentioned = append(mentioned, f)
		}
	}
	return mentioned
}

// mentions reports whether out names file f as a word (a compile command
// line "cc -c cJSON.c").
func mentions(out, f string) bool {
	base := path.Base(f)
	for i := 0; ; {
		j := strings.Index(out[i:], base)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(base)
		before := j == 0 || strings.ContainsRune(" \t\n/\"'=", rune(out[j-1]))
		after := end == len(out) || strings.ContainsRune(" \t\r\n\"';", rune(out[end]))
		if before && after {
			return true
		}
		i = end
	}
}
