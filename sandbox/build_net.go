package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// A build job has no network: bubblewrap gives it a network namespace of
// its own with nothing but a loopback interface. A job with a Network
// handler (a dependency resolution) gets one listening socket in that
// namespace, at NetworkAddr, created by the host process inside the
// sandbox's namespace (setns on a thread of its own) and served by the
// host: the handler decides everything the job can fetch, and nothing else
// is reachable, not even the host's loopback. No process inside the
// sandbox relays anything.

// NetworkAddr is where a job's Network handler is served, inside the job's
// network namespace.
const NetworkAddr = "127.0.0.1:3142"

// infoPipe adds the write end of bubblewrap's info descriptor to extra
// for a job with a Network handler and returns the read end (nil for
// other jobs). On error every file of extra is closed.
func infoPipe(job *BuildJob, extra []*os.File) (*os.File, []*os.File, error) {
	if job.Network == nil {
		return nil, extra, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		for _, f := range extra {
			f.Close()
		}
		return nil, nil, err
	}
	return r, append(extra, w), nil
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// serveNetwork reads the sandbox's pid from bwrap's info descriptor and
// serves h on NetworkAddr in its network namespace until stop; without a
// handler it does nothing.
func serveNetwork(info *os.File, h http.Handler) (stop func(), err error) {
	if h == nil {
		return func() {}, nil
	}
	var bw struct {
		ChildPid int `json:"child-pid"`
	}
	_ = info.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewDecoder(info).Decode(&bw); err != nil || bw.ChildPid <= 0 {
		return nil, fmt.Errorf("bubblewrap did not say the sandbox's pid: %v", err)
	}
	ln, err := listenInNetns(bw.ChildPid, NetworkAddr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}

// listenInNetns listens on addr in the network namespace of pid. The
// socket is made on an OS thread switched into that namespace; the thread
// switches back, or, if it cannot, dies with its goroutine (a locked
// thread whose goroutine exits is never reused).
func listenInNetns(pid int, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer self.Close()
		target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, lerr := net.Listen("tcp", addr)
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			if ln != nil {
				ln.Close()
			}
			ch <- result{err: fmt.Errorf("setns back: %w", err)} // the thread stays locked and ends
			return
		}
		runtime.UnlockOSThread()
		ch <- result{ln: ln, err: lerr}
	}()
	r := <-ch
	return r.ln, r.err
}

// depsMount is where BuildJob.Deps is bound.
const depsMount = "/deps"

// The layout of a dependency cache (BuildJob.Deps): one directory per
// ecosystem, each what its tool reads offline.
const (
	DepsMaven  = "maven"  // a Maven local repository
	DepsGo     = "go"     // a Go module cache (GOMODCACHE)
	DepsPython = "python" // an installation target (PYTHONPATH)
	DepsGradle = "gradle" // a read-only Gradle dependency cache (GRADLE_RO_DEP_CACHE: modules-2/)
)

// DepsEnv is the environment that points the tools at a dependency cache
// on the host (dir), mounted at mount: only the ecosystems it holds.
func DepsEnv(dir, mount string) []string {
	var env []string
	has := func(name string) bool {
		fi, err := os.Stat(filepath.Join(dir, name))
		return err == nil && fi.IsDir()
	}
	if has(DepsMaven) {
		env = append(env, "MAVEN_OPTS=-Dmaven.repo.local="+mount+"/"+DepsMaven)
	}
	if has(DepsGo) {
		env = append(env, "GOMODCACHE="+mount+"/"+DepsGo)
	}
	if has(DepsPython) {
		env = append(env, "PYTHONPATH="+mount+"/"+DepsPython)
	}
	if has(DepsGradle) {
		env = append(env, "GRADLE_RO_DEP_CACHE="+mount+"/"+DepsGradle)
	}
	return env
}
