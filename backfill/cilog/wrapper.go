package cilog

import (
	"regexp"
	"strconv"
	"strings"
)

// The CI wrappers: what each service puts around a build's output, and how
// it marks steps and failures.
var (
	// gha: "2022-05-30T09:11:02.8577255Z " before every line.
	ghaStampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?`)
	// gh run view --log: "job<TAB>step<TAB>stamp line".
	ghCLIRE = regexp.MustCompile(`^([^\t]*)\t([^\t]*)\t(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) ?`)
	// GitLab's sections; newer runners also put "stamp 00O " before lines.
	glSectionRE = regexp.MustCompile(`^section_(start|end):\d+:([^\[\s]+)(?:\[[^\]]*\])?`)
	glStampRE   = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z \d\d[OE]\+? ?`)
	travisRE    = regexp.MustCompile(`^travis_(fold|time):(start|end):([^\s:]*)`)
	travisExit  = regexp.MustCompile(`^The command "(.*)" exited with (\d+)\.$`)
	// Jenkins: pipeline stages, freestyle shell steps, the timestamper.
	jenkinsStageRE = regexp.MustCompile(`^\[Pipeline\] \{ \((.*)\)$`)
	jenkinsShellRE = regexp.MustCompile(`^\[[^\]]+\] \$ (?:/bin/)?(?:ba|z)?sh `)
	jenkinsStepRE  = regexp.MustCompile(`^Build step '(.+)' marked build as failure`)
	jenkinsStepErr = regexp.MustCompile(`^ERROR: Step .(.+). (?:failed|aborted)`)
	jenkinsStampRE = regexp.MustCompile(`^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?\] `)
	buildkiteRE    = regexp.MustCompile(`^(---|\+\+\+|~~~) (.*)$`)
	// Maven's mojo executions and Gradle's tasks: steps of a log whose CI
	// marks none.
	mavenMojoRE  = regexp.MustCompile(`^\[INFO\] --- (\S+:\S+(?::\S+)?) (\(\S+\)) @ (\S+) ---`)
	mavenFailRE  = regexp.MustCompile(`^\[ERROR\] Failed to execute goal (\S+) (\(\S+\))`)
	mavenEndRE   = regexp.MustCompile(`^\[INFO\] (?:BUILD (?:SUCCESS|FAILURE)|Reactor Summary)`)
	gradleTaskRE = regexp.MustCompile(`^> Task (:\S+)(?: (FAILED|UP-TO-DATE|NO-SOURCE|SKIPPED|FROM-CACHE))?$`)
	annotationRE = regexp.MustCompile(`^::(error|warning)((?: [^:]*)?)::(.*)$`)
	annotationKV = regexp.MustCompile(`(\w+)=([^,]*)`)
	ghaExitRE    = regexp.MustCompile(`^Process completed with exit code (\d+)\.?$`)
	// go test's results and diff headers look like Buildkite's groups.
	notBuildkiteHeader = regexp.MustCompile(`^(?:--- (?:FAIL|PASS|SKIP):|--- a/|\+\+\+ b/|--- /dev/null|\+\+\+ /dev/null)`)
	buildkiteFail      = regexp.MustCompile(`^(?:🚨 )?Error: The command exited with status [1-9]`)
)

// detect names the CI service of a log from its first lines.
func detect(lines []string) string {
	var gha, ghcli, gl, travis, jenkins, bk int
	for _, l := range lines {
		l = cleanLine(l)
		switch {
		case ghCLIRE.MatchString(l):
			ghcli++
		case ghaStampRE.MatchString(l):
			gha++
		}
		if glSectionRE.MatchString(l) || strings.HasPrefix(l, "Running with gitlab-runner") || glStampRE.MatchString(l) {
			gl += 5
		}
		if travisRE.MatchString(l) || strings.HasPrefix(l, "Worker information") {
			travis += 5
		}
		if strings.HasPrefix(l, "[Pipeline] ") || strings.HasPrefix(l, "Started by ") || strings.HasPrefix(l, "Building in workspace ") ||
			strings.HasPrefix(l, "Building remotely on ") || jenkinsShellRE.MatchString(l) || strings.HasPrefix(l, "Finished: ") {
			jenkins += 5
		}
		if strings.Contains(l, "buildkite") || strings.HasPrefix(l, "~~~ ") || strings.HasPrefix(l, "_bk;t=") {
			bk += 2
		}
	}
	best, ci := 2, CIPlain
	for _, c := range []struct {
		n  int
		ci string
	}{{ghcli, CIGitHubCLI}, {gl, CIGitLab}, {travis, CITravis}, {jenkins, CIJenkins}, {bk, CIBuildkite}, {gha, CIGitHubActions}} {
		if c.n > best {
			best, ci = c.n, c.ci
		}
	}
	return ci
}

// stepTracker records steps and their line ranges.
type stepTracker struct {
	steps []Step
	open  int // index of the open step, -1 when none
	depth []int
	over  bool
}

func newSteps() *stepTracker { return &stepTracker{open: -1} }

func (t *stepTracker) start(name string, line int) {
	t.end(line - 1)
	if len(t.steps) >= MaxSteps {
		t.over = true
		return
	}
	t.steps = append(t.steps, Step{Name: strings.TrimSpace(name), LogLines: [2]int{line, line}})
	t.open = len(t.steps) - 1
}

func (t *stepTracker) end(line int) {
	if t.open >= 0 {
		s := &t.steps[t.open]
		if line < s.LogLines[0] {
			line = s.LogLines[0]
		}
		s.LogLines[1] = line
		t.open = -1
	}
}

// extend keeps the open step's end at line.
func (t *stepTracker) extend(line int) {
	if t.open >= 0 {
		t.steps[t.open].LogLines[1] = line
	}
}

// fail marks the open step failed, else the last one.
func (t *stepTracker) fail() {
	if t.open >= 0 {
		t.steps[t.open].Failed = true
	} else if n := len(t.steps); n > 0 {
		t.steps[n-1].Failed = true
	}
}

func (t *stepTracker) current() string {
	if t.open >= 0 {
		return t.steps[t.open].Name
	}
	return ""
}

// decoder strips a CI service's wrapping from each raw line and follows
// its steps.
type decoder struct {
	ci    string
	steps *stepTracker
	tool  *stepTracker // Maven mojos and Gradle tasks
	// ghcli: the job and step of the previous line.
	ghJob, ghStep string
	// travis: the folds open.
	folds int
	// annotations are ::error/::warning workflow commands seen.
	annotations []Diagnostic
	// jobFailed: the CI said the job failed.
	jobFailed, jobPassed bool
}

func newDecoder(ci string) *decoder {
	return &decoder{ci: ci, steps: newSteps(), tool: newSteps()}
}

// decode returns the build output carried by raw line n (cleaned), and
// false for a line that is only the wrapper's marker.
func (d *decoder) decode(raw string, n int) (string, bool) {
	l := cleanLine(raw)
	var ok bool
	switch d.ci {
	case CIGitHubCLI:
		return d.gha(d.ghCLIColumns(l, n), n, false)
	case CIGitHubActions:
		return d.gha(ghaStampRE.ReplaceAllString(l, ""), n, true)
	case CIGitLab:
		l, ok = d.gitlab(l, n)
	case CITravis:
		l, ok = d.travis(l, n)
	case CIJenkins:
		l, ok = d.jenkins(l, n)
	case CIBuildkite:
		l, ok = d.buildkite(l, n)
	default:
		ok = true
	}
	if !ok {
		return "", false
	}
	d.steps.extend(n)
	d.toolStep(l, n)
	return l, true
}

// ghCLIColumns strips the job and step columns of `gh run view --log`
// from l, starting a step where they change.
func (d *decoder) ghCLIColumns(l string, n int) string {
	m := ghCLIRE.FindStringSubmatch(l)
	if m == nil {
		return l
	}
	if m[1] != d.ghJob || m[2] != d.ghStep {
		// a step is named by its column; a log of several jobs
		// repeats names ("Set up job"), told apart by their lines
		d.ghJob, d.ghStep = m[1], m[2]
		d.steps.start(m[2], n)
	}
	return l[len(m[0]):]
}

// gitlab follows GitLab's section markers and job result.
func (d *decoder) gitlab(l string, n int) (string, bool) {
	l = glStampRE.ReplaceAllString(l, "")
	if m := glSectionRE.FindStringSubmatch(l); m != nil {
		if m[1] == "start" {
			d.steps.start(m[2], n)
		} else {
			d.steps.end(n)
		}
		return "", false
	}
	if strings.HasPrefix(l, "ERROR: Job failed") {
		d.steps.fail()
		d.jobFailed = true
	} else if strings.HasPrefix(l, "Job succeeded") {
		d.jobPassed = true
	}
	return l, true
}

// travis follows Travis CI's folds, its top-level commands and their
// exit codes, and the build's result.
func (d *decoder) travis(l string, n int) (string, bool) {
	if m := travisRE.FindStringSubmatch(l); m != nil {
		rest := l[len(m[0]):]
		if m[1] == "fold" {
			if m[2] == "start" {
				d.steps.start(m[3], n)
				d.folds++
			} else {
				d.steps.end(n)
				d.folds = max(0, d.folds-1)
			}
		}
		if strings.TrimSpace(rest) == "" {
			return "", false
		}
		l = rest
	}
	if d.folds == 0 && strings.HasPrefix(l, "$ ") {
		d.steps.start(strings.TrimPrefix(l, "$ "), n)
	}
	if m := travisExit.FindStringSubmatch(l); m != nil {
		if m[2] != "0" {
			d.steps.fail()
		}
		if d.folds == 0 {
			d.steps.end(n)
		}
	}
	if strings.HasPrefix(l, "Done. Your build exited with ") {
		if strings.HasSuffix(l, " 0.") {
			d.jobPassed = true
		} else {
			d.jobFailed = true
		}
	}
	return l, true
}

// jenkins follows a Jenkins pipeline's stages, its freestyle shell
// steps, the steps that failed, and the build's result.
func (d *decoder) jenkins(l string, n int) (string, bool) {
	l = jenkinsStampRE.ReplaceAllString(l, "")
	if strings.HasPrefix(l, "[Pipeline] ") {
		d.jenkinsPipeline(l, n)
		return "", false
	}
	if len(d.steps.steps) == 0 && n == 1 {
		d.steps.start("setup", n)
	}
	if jenkinsShellRE.MatchString(l) && len(d.steps.depth) == 0 {
		d.steps.start("Execute shell", n)
	}
	if m := jenkinsStepRE.FindStringSubmatch(l); m != nil {
		if d.steps.open >= 0 && len(d.steps.depth) == 0 {
			d.steps.steps[d.steps.open].Name = m[1]
		}
		d.steps.fail()
		d.steps.end(n)
	}
	if m := jenkinsStepErr.FindStringSubmatch(l); m != nil {
		if len(d.steps.depth) == 0 {
			d.steps.start(m[1], n)
		}
		d.steps.fail()
		d.steps.end(n)
	}
	switch {
	case strings.HasPrefix(l, "Finished: SUCCESS"):
		d.jobPassed = true
	case strings.HasPrefix(l, "Finished: "):
		d.jobFailed = true
	}
	return l, true
}

// jenkinsPipeline follows a "[Pipeline] " line's nesting: a stage opens a
// step, a block opens a level, and the level's close ends its stage.
func (d *decoder) jenkinsPipeline(l string, n int) {
	if m := jenkinsStageRE.FindStringSubmatch(l); m != nil {
		d.steps.start(m[1], n)
		d.steps.depth = append(d.steps.depth, 1)
	} else if strings.HasPrefix(l, "[Pipeline] {") {
		d.steps.depth = append(d.steps.depth, 0)
	} else if strings.HasPrefix(l, "[Pipeline] }") {
		if k := len(d.steps.depth); k > 0 {
			if d.steps.depth[k-1] == 1 {
				d.steps.end(n)
			}
			d.steps.depth = d.steps.depth[:k-1]
		}
	}
}

// buildkite follows Buildkite's step headers and failure lines.
func (d *decoder) buildkite(l string, n int) (string, bool) {
	if m := buildkiteRE.FindStringSubmatch(l); m != nil && !notBuildkiteHeader.MatchString(l) {
		d.steps.start(m[2], n)
		return "", false
	}
	if strings.HasPrefix(l, "^^^ +++") {
		return "", false
	}
	if buildkiteFail.MatchString(l) {
		d.steps.fail()
		d.jobFailed = true
	}
	return l, true
}

// gha handles GitHub Actions' markers and workflow commands; raw is true
// for the raw job log, whose steps start at "##[group]Run ...".
func (d *decoder) gha(l string, n int, raw bool) (string, bool) {
	if raw {
		switch {
		case n == 1 || len(d.steps.steps) == 0:
			d.steps.start("Set up job", n)
		case strings.HasPrefix(l, "##[group]Run "):
			d.steps.start(strings.TrimPrefix(l, "##[group]"), n)
		case strings.HasPrefix(l, "Post job cleanup."):
			d.steps.start("Post job cleanup", n)
		case strings.HasPrefix(l, "Cleaning up orphan processes") && !strings.HasPrefix(d.steps.current(), "Complete job"):
			d.steps.start("Complete job", n)
		}
	}
	d.steps.extend(n)
	if strings.HasPrefix(l, "##[") {
		marker, rest, ok := strings.Cut(l[3:], "]")
		if ok {
			switch marker {
			case "group", "endgroup":
				return "", false
			case "error":
				d.steps.fail()
				if m := ghaExitRE.FindStringSubmatch(rest); m != nil {
					d.jobFailed = true
					return "", false
				}
				d.toolStep(rest, n)
				return rest, true
			}
			l = rest
		}
	}
	if m := annotationRE.FindStringSubmatch(l); m != nil {
		d.annotation(m, n)
	}
	d.toolStep(l, n)
	return l, true
}

// annotation records an ::error or ::warning workflow command.
func (d *decoder) annotation(m []string, n int) {
	if len(d.annotations) >= MaxDiagnostics {
		return
	}
	a := Diagnostic{LogLines: [2]int{n, n}, Step: d.steps.current()}
	a.Tool = "annotation"
	a.Severity = m[1]
	a.Message = strings.TrimSpace(m[3])
	for _, kv := range annotationKV.FindAllStringSubmatch(m[2], -1) {
		switch kv[1] {
		case "file":
			a.File = kv[2]
		case "line":
			a.Line, _ = strconv.Atoi(kv[2])
		case "col":
			a.Column, _ = strconv.Atoi(kv[2])
		case "title":
			if a.Code == "" {
				a.Code = kv[2]
			}
		}
	}
	if a.Severity == "error" {
		d.steps.fail()
	}
	d.annotations = append(d.annotations, a)
}

// toolStep follows Maven's mojos and Gradle's tasks.
func (d *decoder) toolStep(l string, n int) {
	t := d.tool
	if m := mavenMojoRE.FindStringSubmatch(l); m != nil {
		t.start(m[1]+" "+m[2]+" @ "+m[3], n)
		return
	}
	if m := gradleTaskRE.FindStringSubmatch(l); m != nil {
		t.start(m[1], n)
		if m[2] == "FAILED" {
			t.fail()
		}
		return
	}
	if mavenEndRE.MatchString(l) {
		t.end(n - 1)
		return
	}
	if m := mavenFailRE.FindStringSubmatch(l); m != nil {
		// "org.apache.maven.plugins:maven-compiler-plugin:3.1:compile" names
		// the mojo "maven-compiler-plugin:3.1:compile" (or "compiler:...").
		goal := m[1]
		for i := len(t.steps) - 1; i >= 0; i-- {
			name := t.steps[i].Name
			mojo, _, _ := strings.Cut(name, " ")
			if strings.Contains(name, m[2]) && (strings.HasSuffix(goal, mojo) || strings.HasSuffix(goal, ":"+lastTwo(mojo))) {
				t.steps[i].Failed = true
				break
			}
		}
		return
	}
	t.extend(n)
}

func lastTwo(mojo string) string {
	parts := strings.Split(mojo, ":")
	if len(parts) < 2 {
		return mojo
	}
	return strings.Join(parts[len(parts)-2:], ":")
}
