// Package chromiumtest runs headless Chromium for tests of the inspect
// page: it dumps the DOM after the page's script ran and takes screenshots.
// Without Chromium a test is skipped with a message saying how to install
// it, unless CI or MURPHY_REQUIRE_CHROMIUM is set: then it fails.
package chromiumtest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// EnvRequire makes a missing Chromium a test failure (as does CI).
const EnvRequire = "MURPHY_REQUIRE_CHROMIUM"

// EnvBinary names a Chromium binary to use instead of looking one up.
const EnvBinary = "MURPHY_CHROMIUM"

// candidates are the binaries looked up on PATH, in order.
var candidates = [...]string{"chromium", "chromium-headless-shell", "chromium-browser"}

// Find returns the Chromium binary, or skips t when there is none (fails it
// when CI or MURPHY_REQUIRE_CHROMIUM is set).
func Find(t testing.TB) string {
	t.Helper()
	if b := os.Getenv(EnvBinary); b != "" {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
		t.Fatalf("%s=%s: not an executable", EnvBinary, b)
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "headless Chromium not installed (looked for " + fmt.Sprint(candidates) +
		" on PATH): install the Debian package chromium, e.g. bash internal/inspect/install-test-deps.sh"
	if os.Getenv("CI") != "" || os.Getenv(EnvRequire) != "" {
		t.Fatalf("%s; required because CI or %s is set", msg, EnvRequire)
	}
	t.Skip(msg)
	return ""
}

// FileURL returns the file: URL of path with an optional fragment.
func FileURL(path, fragment string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	u := url.URL{Scheme: "file", Path: abs, Fragment: fragment}
	return u.String()
}

// run starts Chromium headless on target with extra flags and returns its
// stdout. Each run gets its own profile directory; the whole process group
// is killed when the run ends or times out.
func run(t testing.TB, bin string, target string, extra ...string) []byte {
	t.Helper()
	profile, err := os.MkdirTemp("", "murphy-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's helpers may still be writing as it exits: remove the
	// profile best effort, never failing the test on it.
	defer os.RemoveAll(profile)
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-dev-shm-usage", "--disable-background-networking",
		"--user-data-dir=" + profile}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium refuses root otherwise; the page is our own file
	}
	args = append(append(args, extra...), target)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind
	}
	if err != nil {
		t.Fatalf("%s %v: %v (after %s)\nstderr:\n%s", bin, args, err, time.Since(start).Round(time.Millisecond), tail(stderr.Bytes(), 4000))
	}
	return out.Bytes()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// DumpDOM loads target (a URL) and returns the DOM serialised after the
// page's scripts ran.
func DumpDOM(t testing.TB, bin, target string) string {
	t.Helper()
	dom := run(t, bin, target, "--dump-dom")
	if len(dom) == 0 {
		t.Fatalf("chromium --dump-dom %s: empty output", target)
	}
	return string(dom)
}

// Screenshot renders target at width×height into a PNG file under dir and
// returns its path.
func Screenshot(t testing.TB, bin, target, dir string, width, height int) string {
	t.Helper()
	path := filepath.Join(dir, "screenshot.png")
	run(t, bin, target, "--hide-scrollbars", "--screenshot="+path, fmt.Sprintf("--window-size=%d,%d", width, height))
	return path
}

// CheckPNG decodes the PNG at path and fails t unless it is width×height
// and not a single flat colour (something was drawn).
func CheckPNG(t testing.TB, path string, width, height int) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if len(b) == 0 {
		t.Fatal("screenshot: empty file")
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot %s (%d bytes): not a PNG: %v", path, len(b), err)
	}
	if r := img.Bounds(); r.Dx() != width || r.Dy() != height {
		t.Errorf("screenshot is %dx%d, want %dx%d", r.Dx(), r.Dy(), width, height)
	}
	colours := map[[4]uint32]bool{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y && len(colours) < 16; y += 7 {
		for x := r.Min.X; x < r.Max.X && len(colours) < 16; x += 7 {
			c0, c1, c2, c3 := img.At(x, y).RGBA()
			colours[[4]uint32{c0, c1, c2, c3}] = true
		}
	}
	if len(colours) < 16 {
		t.Errorf("screenshot has only %d distinct colours: nothing drawn?", len(colours))
	}
	return img
}

// BodyAttr returns the value of attribute name on the dumped
// page's <body>, failing t when it is absent.
func BodyAttr(t testing.TB, dom, name string) string {
	t.Helper()
	body := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
	if body == "" {
		t.Fatalf("no <body> in the dumped DOM:\n%.2000s", dom)
	}
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s on %s", name, body)
	}
	return m[1]
}

// BodyInt is BodyAttr as an integer.
func BodyInt(t testing.TB, dom, name string) int {
	t.Helper()
	v := BodyAttr(t, dom, name)
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
