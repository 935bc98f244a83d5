package deps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Repositories are the only places resolution fetches from.
type Repositories struct {
	// Maven repositories (base URLs), tried in order for every Maven and
	// Gradle artifact, whatever repository a build names.
	Maven []string `yaml:"maven" json:"maven"`
	// GoProxy is a Go module proxy (its /sumdb/ endpoint checks go.sum
	// against the checksum database).
	GoProxy string `yaml:"go_proxy" json:"go_proxy"`
	// PyPI is a PEP 503/691 simple index; PyPIFiles the host its pages
	// link files on (their links are rewritten to the mirror).
	PyPI      string `yaml:"pypi" json:"pypi"`
	PyPIFiles string `yaml:"pypi_files" json:"pypi_files"`
}

// DefaultRepositories are Maven Central, the Go module proxy and PyPI.
func DefaultRepositories() Repositories {
	return Repositories{
		Maven:     []string{"https://repo.maven.apache.org/maven2"},
		GoProxy:   "https://proxy.golang.org",
		PyPI:      "https://pypi.org/simple",
		PyPIFiles: "https://files.pythonhosted.org",
	}
}

// Validate checks that every repository is an absolute http(s) URL.
func (r Repositories) Validate() error {
	check := func(what, u string) error {
		if u == "" {
			return nil
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" {
			return fmt.Errorf("deps: %s repository %q is not an http(s) URL", what, u)
		}
		return nil
	}
	for _, m := range r.Maven {
		if m == "" {
			return errors.New("deps: empty Maven repository URL")
		}
		if err := check("maven", m); err != nil {
			return err
		}
	}
	for what, u := range map[string]string{"go": r.GoProxy, "pypi": r.PyPI, "pypi files": r.PyPIFiles} {
		if err := check(what, u); err != nil {
			return err
		}
	}
	if (r.PyPI == "") != (r.PyPIFiles == "") {
		return errors.New("deps: the PyPI index and its files host go together")
	}
	return nil
}

// String lists the repositories (part of a resolution's key).
func (r Repositories) String() string {
	return fmt.Sprintf("maven=%s go=%s pypi=%s files=%s", strings.Join(r.Maven, ","), r.GoProxy, r.PyPI, r.PyPIFiles)
}

// Mirror routes: what a resolution job asks for at sandbox.NetworkAddr.
const (
	routeMaven     = "/maven/"
	routeGo        = "/go/"
	routePyPI      = "/pypi/simple/"
	routePyPIFiles = "/pypi/files/"
)

// Limits of the mirror.
const (
	maxFileBytes    = 1 << 30
	maxPageBytes    = 64 << 20
	upstreamTimeout = 5 * time.Minute
)

// mirror serves a resolution job's requests from the configured
// repositories only: GET and HEAD of clean paths under its routes, each
// mapped onto a repository URL by appending the path. Nothing in a request
// chooses a host. Immutable files are kept in a host directory shared by
// every resolution (what a repository served for a path, never anything a
// job sent), so a second resolution of the same artifacts fetches nothing.
type mirror struct {
	repos  Repositories
	client *http.Client
	dir    string // host cache of immutable files ("" = none)

	mu    sync.Mutex
	stats MirrorStats
}

// MirrorStats count what a resolution asked the mirror for.
type MirrorStats struct {
	Requests int `json:"requests"`
	// Fetched were answered from a repository, Cached from the host cache.
	Fetched int `json:"fetched"`
	Cached  int `json:"cached"`
	// NotFound: no repository has the path; Refused: not a path the mirror
	// serves (the first few are listed).
	NotFound    int      `json:"not_found"`
	Refused     int      `json:"refused"`
	RefusedURLs []string `json:"refused_urls,omitempty"`
	Bytes       int64    `json:"bytes"`
}

func newMirror(repos Repositories, dir string) *mirror {
	hosts := map[string]bool{}
	for _, u := range append(append([]string(nil), repos.Maven...), repos.GoProxy, repos.PyPI, repos.PyPIFiles) {
		if p, err := url.Parse(u); err == nil && p.Host != "" {
			hosts[p.Host] = true
		}
	}
	client := &http.Client{
		Timeout: upstreamTimeout,
		// A repository may redirect within the configured hosts (a CDN
		// behind one of them must be configured to be reached).
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if !hosts[req.URL.Host] || req.URL.Scheme != "https" && req.URL.Scheme != "http" {
				return fmt.Errorf("redirect to %s: not a configured repository", req.URL.Host)
			}
			return nil
		},
	}
	return &mirror{repos: repos, client: client, dir: dir}
}

func (m *mirror) count(f func(s *MirrorStats)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.stats)
}

// Stats returns the counts so far.
func (m *mirror) Stats() MirrorStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.RefusedURLs = append([]string(nil), s.RefusedURLs...)
	return s
}

func (m *mirror) refuse(w http.ResponseWriter, r *http.Request, why string) {
	m.count(func(s *MirrorStats) {
		s.Refused++
		if len(s.RefusedURLs) < 8 {
			s.RefusedURLs = append(s.RefusedURLs, r.Method+" "+r.URL.String())
		}
	})
	http.Error(w, "murphy dependency mirror: "+why, http.StatusForbidden)
}

// ServeHTTP answers one request of a resolution job.
func (m *mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.count(func(s *MirrorStats) { s.Requests++ })
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		m.refuse(w, r, "only GET and HEAD")
		return
	}
	p, ok := cleanPath(r.URL)
	if !ok {
		m.refuse(w, r, "not a clean path")
		return
	}
	var bases []string
	var rest string
	rewrite := false
	switch {
	case strings.HasPrefix(p, routeMaven) && len(m.repos.Maven) > 0:
		bases, rest = m.repos.Maven, strings.TrimPrefix(p, routeMaven)
	case strings.HasPrefix(p, routeGo) && m.repos.GoProxy != "":
		bases, rest = []string{m.repos.GoProxy}, strings.TrimPrefix(p, routeGo)
	case strings.HasPrefix(p, routePyPI) && m.repos.PyPI != "":
		bases, rest, rewrite = []string{m.repos.PyPI}, strings.TrimPrefix(p, routePyPI), true
		if strings.HasSuffix(r.URL.Path, "/") && !strings.HasSuffix(rest, "/") {
			rest += "/"
		}
	case strings.HasPrefix(p, routePyPIFiles) && m.repos.PyPIFiles != "":
		bases, rest = []string{m.repos.PyPIFiles}, strings.TrimPrefix(p, routePyPIFiles)
	default:
		m.refuse(w, r, "no configured repository serves "+p)
		return
	}
	if rest == "" {
		m.refuse(w, r, "no path")
		return
	}
	m.fetch(w, r, bases, rest, rewrite)
}

// cleanPath returns the request's path when it is clean: no dot segments,
// no empty segments, no escaped separators or dots, no control bytes.
func cleanPath(u *url.URL) (string, bool) {
	p := u.Path
	if p == "" || p[0] != '/' || strings.ContainsAny(p, "\\\x00\r\n") {
		return "", false
	}
	lower := strings.ToLower(u.EscapedPath())
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%2e") || strings.Contains(lower, "%5c") {
		return "", false
	}
	trimmed := strings.TrimSuffix(p, "/")
	for _, seg := range strings.Split(trimmed[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", false
		}
	}
	return trimmed, path.Clean(trimmed) == trimmed
}

// immutable reports paths whose content never changes once published:
// not Maven metadata or snapshots, Go version lists and latest queries,
// or the simple index's pages.
func immutable(bases []string, rest string, rewrite bool) bool {
	if rewrite {
		return false
	}
	b := path.Base(rest)
	switch {
	case strings.HasPrefix(b, "maven-metadata"), strings.Contains(rest, "-SNAPSHOT"),
		b == "list" || b == "@latest" || b == "latest" || b == "supported", strings.Contains(rest, "/lookup/"):
		return false
	}
	return true
}

func (m *mirror) cachePath(upstream string) string {
	sum := sha256.Sum256([]byte(upstream))
	h := hex.EncodeToString(sum[:])
	return filepath.Join(m.dir, h[:2], h)
}

// fetch answers from the first repository that has rest.
func (m *mirror) fetch(w http.ResponseWriter, r *http.Request, bases []string, rest string, rewrite bool) {
	keep := m.dir != "" && immutable(bases, rest, rewrite)
	for _, base := range bases {
		upstream := strings.TrimSuffix(base, "/") + "/" + rest
		if keep {
			if f, err := os.Open(m.cachePath(upstream)); err == nil {
				m.count(func(s *MirrorStats) { s.Cached++ })
				http.ServeContent(w, r, "", time.Time{}, f)
				f.Close()
				return
			}
		}
		body, hdr, status, err := m.get(r.Context(), upstream, r.Header.Get("Accept"), rewrite)
		if err != nil {
			http.Error(w, "murphy dependency mirror: "+err.Error(), http.StatusBadGateway)
			return
		}
		if status == http.StatusNotFound || status == http.StatusGone {
			continue
		}
		if status != http.StatusOK {
			http.Error(w, fmt.Sprintf("murphy dependency mirror: %s answered %d", upstream, status), status)
			return
		}
		if rewrite {
			body = m.rewriteLinks(body)
		}
		m.count(func(s *MirrorStats) { s.Fetched++; s.Bytes += int64(len(body)) })
		if keep {
			m.store(m.cachePath(upstream), body)
		}
		if ct := hdr.Get("Content-Type"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
		return
	}
	m.count(func(s *MirrorStats) { s.NotFound++ })
	http.Error(w, "murphy dependency mirror: not found in the configured repositories", http.StatusNotFound)
}

// get fetches one upstream URL whole (bounded).
func (m *mirror) get(ctx context.Context, u, accept string, page bool) ([]byte, http.Header, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	req.Header.Set("User-Agent", "murphy-deps-mirror")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil, resp.Header, resp.StatusCode, nil
	}
	limit := int64(maxFileBytes)
	if page {
		limit = maxPageBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", u, err)
	}
	if int64(len(body)) > limit {
		return nil, nil, 0, fmt.Errorf("%s: larger than %d bytes", u, limit)
	}
	return body, resp.Header, resp.StatusCode, nil
}

// rewriteLinks points an index page's absolute links to its files host at
// the mirror's files route (pip resolves them against the page's URL).
func (m *mirror) rewriteLinks(body []byte) []byte {
	files := strings.TrimSuffix(m.repos.PyPIFiles, "/") + "/"
	return bytes.ReplaceAll(body, []byte(files), []byte(routePyPIFiles))
}

// store keeps body under p (written whole, then renamed).
func (m *mirror) store(p string, body []byte) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".part-")
	if err != nil {
		return
	}
	_, werr := tmp.Write(body)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		_ = os.Remove(tmp.Name())
	}
}
