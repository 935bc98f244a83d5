/*
 * murphy sandbox: the warm worker's job loop (see SECURITY.md).
 *
 * harness.py loads this library into the worker with ctypes.PyDLL (the GIL
 * stays held) once the interpreter is warm, and calls murphy_serve. From then
 * on the worker never runs Python again: every page the worker writes after
 * a fork is a copy-on-write fault while the job's process lives, and the
 * worker's Python loop cost each job about 200 of them. Per job it
 *
 *   receives the run request and its five descriptors on the control socket,
 *   makes the job directory, forks the job's process,
 *   waits for it, cleans up after it, and reports on the control socket.
 *
 * The job's process (the fork's child) moves its descriptors into place,
 * takes the job's session, directory, limits and uid, checks that no
 * privilege is left, says "armed" and returns 1 from murphy_serve: the
 * Python code after the call reads the program (descriptor 5) and runs it.
 * Anything that fails before "armed" is the sandbox's failure (exit 121, the
 * reason on the job's stderr); after it, the program's.
 *
 * The worker's side writes nothing but its stack between forks: no malloc,
 * no stdio (directories are read with getdents64 into stack buffers).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JOB_DIR "/tmp/job"
#define HARNESS_FAILURE 121
/* "MRUN": the run request's first word (murphy writes it in native order). */
#define RUN_MAGIC 0x4e55524du
#define RUN_VERSION 2

/* Set by harness.py before murphy_serve. */
struct murphy_worker {
	int32_t ctrl_fd;  /* the worker's control socket */
	int32_t judge_fd; /* the judge's, handed to the judge's process */
	int32_t job_uid;
	int32_t reserved;
	int64_t vmsize; /* the warm worker's address space, in bytes */
};

/* The sandbox's own processes: its init, the worker, the judge. */
static pid_t own_pids[3];

/* The run request (sandbox/slot.go encodeRun), native byte order, with five
 * descriptors: program, stdin, stdout, stderr, chan. */
struct run_request {
	uint32_t magic;
	uint32_t version;
	int64_t id;
	int64_t memory_bytes;
	int64_t cpu_seconds;
	int64_t file_bytes;
	int64_t procs;
	int64_t open_files;
};

enum { FD_PROGRAM, FD_STDIN, FD_STDOUT, FD_STDERR, FD_CHAN, NFDS };

/* ------------------------------------------------------------ messages */

static void send_msg(int fd, const char *buf, int n)
{
	if (n <= 0)
		return;
	while (send(fd, buf, (size_t)n, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* The why strings are ours: letters, digits, spaces and / only. */
static void send_error(const struct murphy_worker *w, int64_t id, const char *what, int err)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "{\"ev\":\"error\",\"id\":%lld,\"error\":\"%s%s%s\"}",
			 (long long)id, what, err ? ": " : "", err ? strerrorname_np(err) ?: "?" : "");
	send_msg(w->ctrl_fd, buf, n);
}

/* Reads a run request and its descriptors; returns its size, 0 when the
 * socket closed, -1 on a read error. *nfds is how many descriptors fds
 * holds; *extra says that more came (or were cut off) and were closed. */
static ssize_t recv_request(int fd, struct run_request *req, int fds[NFDS], int *nfds, int *extra)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = req, .iov_len = sizeof *req};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	*nfds = 0;
	*extra = 0;
	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int got[8];
		if (k > 8)
			k = 8;
		memcpy(got, CMSG_DATA(c), (size_t)k * sizeof(int));
		for (int i = 0; i < k; i++) {
			if (*nfds < NFDS) {
				fds[(*nfds)++] = got[i];
			} else {
				close(got[i]);
				*extra = 1;
			}
		}
	}
	if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		*extra = 1;
	return n;
}

/* ---------------------------------------------------------- /proc, dirs */

/* Calls fn on every name in the directory at fd but . and .. (stops when fn
 * returns non-zero, and returns that); -1 on error. */
static int each_entry(int fd, int (*fn)(const char *name, void *arg), void *arg)
{
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			int r = fn(d->d_name, arg);
			if (r != 0)
				return r;
		}
	}
}

/* A small file's first size-1 bytes, NUL-terminated; its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < size - 1) {
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	return (ssize_t)got;
}

static int is_pid(const char *s)
{
	if (*s == 0)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

struct uid_scan {
	int uid;
	int found;
};

static int count_uid(const char *name, void *arg)
{
	struct uid_scan *s = arg;
	if (!is_pid(name))
		return 0;
	long pid = strtol(name, NULL, 10);
	for (int i = 0; i < 3; i++)
		if (pid == own_pids[i])
			return 0;
	char path[64], status[2048];
	snprintf(path, sizeof path, "/proc/%s/status", name);
	if (read_small(path, status, sizeof status) < 0)
		return 0; /* gone meanwhile */
	const char *u = strstr(status, "\nUid:");
	if (u == NULL || strtol(u + 5, NULL, 10) != s->uid)
		return 0;
	/* A child of ours (a clone(CLONE_PARENT) sibling of the job's
	 * process has the fork server as its parent): reaped here, so a
	 * zombie of it never counts as a survivor. */
	const char *pp = strstr(status, "\nPPid:");
	if (pp != NULL && strtol(pp + 6, NULL, 10) == (long)own_pids[1] && waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid)
		return 0;
	s->found++;
	return 0;
}

/* The processes of the job's uid in the sandbox. */
static int uid_processes(const struct murphy_worker *w)
{
	struct uid_scan s = {.uid = w->job_uid};
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = each_entry(fd, count_uid, &s);
	close(fd);
	return r < 0 ? -1 : s.found;
}

/* kill(-1, SIGKILL) from the job's uid: every process of that uid at once,
 * so a fork bomb cannot outrun it. The helper only makes system calls, so
 * vfork is enough (and copies no page table). */
static void kill_as_job(int uid)
{
	pid_t pid = vfork();
	if (pid == 0) {
		if (syscall(SYS_setresuid, uid, uid, uid) == 0)
			syscall(SYS_kill, -1, SIGKILL);
		_exit(0);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Kills every process of the job's uid; returns how many are left. */
static int kill_all(const struct murphy_worker *w)
{
	int left = uid_processes(w);
	for (int attempt = 0; attempt < 200; attempt++) {
		if (left == 0)
			return 0;
		kill_as_job(w->job_uid);
		if (attempt > 0)
			sleep_ms(attempt < 20 ? attempt : 20);
		left = uid_processes(w);
	}
	return left < 0 ? 1 : left;
}

static int any_entry(const char *name, void *arg)
{
	const char *except = arg;
	return except == NULL || strcmp(name, except) != 0;
}

/* Whether the directory at path has entries (other than except); -1 when it
 * cannot be read. */
static int has_entries(const char *path, const char *except)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = each_entry(fd, any_entry, (void *)except);
	close(fd);
	return r;
}

/* ------------------------------------------------------------- wiping */

/* Removes everything in the directory at dfd (the job's uid owns all of
 * it): directories the job made unreadable are opened up first. Runs in a
 * forked helper holding the job's uid; depth bounds the recursion. */
static int wipe_at(int dfd, int depth)
{
	if (depth > 512)
		return -1;
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return -1;
	}
	int failed = 0;
	struct dirent *e;
	/* Names are removed while the directory is read: rewind until a
	 * pass finds nothing left to remove. */
	for (int removed = 1; removed && !failed;) {
		removed = 0;
		rewinddir(d);
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (unlinkat(dfd, e->d_name, 0) == 0) {
				removed = 1;
				continue;
			}
			if (errno != EISDIR && errno != EPERM) {
				failed = 1;
				break;
			}
			if (fchmodat(dfd, e->d_name, 0700, 0) != 0) {
				failed = 1;
				break;
			}
			int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0 || wipe_at(sub, depth + 1) != 0 || unlinkat(dfd, e->d_name, AT_REMOVEDIR) != 0) {
				failed = 1;
				break;
			}
			removed = 1;
		}
	}
	closedir(d);
	return failed ? -1 : 0;
}

/* Takes uid (and gid uid) for good, with no supplementary group and no
 * capability in any set: leaving uid 0 clears the permitted and effective
 * ones; the inheritable ones are cleared too, although no_new_privs (set by
 * bwrap) already keeps an exec from gaining through them. */
static int drop_to(int uid)
{
	if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
		return -1;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct c[2];
	memset(c, 0, sizeof c);
	if (syscall(SYS_capset, &h, c) != 0)
		return -1;
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (getresuid(&r, &e, &s) != 0 || r != (uid_t)uid || e != (uid_t)uid || s != (uid_t)uid)
		return -1;
	if (getresgid(&gr, &ge, &gs) != 0 || gr != (gid_t)uid || ge != (gid_t)uid || gs != (gid_t)uid)
		return -1;
	if (getgroups(0, NULL) != 0)
		return -1;
	if (syscall(SYS_capget, &h, c) != 0)
		return -1;
	for (int i = 0; i < 2; i++)
		if (c[i].effective || c[i].permitted || c[i].inheritable)
			return -1;
	return 0;
}

/* Wipes the job directory as the job's uid; 0 when done. */
static int wipe_job_dir(int uid)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int code = 1;
		if (drop_to(uid) == 0 && chmod(JOB_DIR, 0700) == 0) {
			int fd = open(JOB_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 && wipe_at(fd, 0) == 0)
				code = 0;
		}
		_exit(code);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* System V IPC objects in the slot's namespace: seccomp forbids creating
 * any, so this checks the filter rather than cleaning up after it. */
static int ipc_objects(void)
{
	static const char *const files[] = {"/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg"};
	int n = 0;
	for (int i = 0; i < 3; i++) {
		int fd = open(files[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		char buf[4096];
		int lines = 0;
		ssize_t got;
		while ((got = read(fd, buf, sizeof buf)) != 0) {
			if (got < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			for (ssize_t k = 0; k < got; k++)
				lines += buf[k] == '\n';
		}
		close(fd);
		if (lines > 1)
			n += lines - 1; /* the header */
	}
	return n;
}

struct cleanup {
	int ok;
	int left;
	char why[160];
};

/* Kills what is left of a job and wipes what it wrote; reports whether the
 * slot is back to its state before the job. */
static void clean_job(const struct murphy_worker *w, struct cleanup *c)
{
	c->ok = 1;
	c->why[0] = 0;
	c->left = kill_all(w);
	if (c->left != 0) {
		c->ok = 0;
		snprintf(c->why, sizeof c->why, "%d processes survived", c->left);
	}
	struct stat st;
	if (lstat(JOB_DIR, &st) == 0) {
		if (has_entries(JOB_DIR, NULL) != 0 && wipe_job_dir(w->job_uid) != 0) {
			c->ok = 0;
			snprintf(c->why, sizeof c->why, "job directory could not be wiped");
		}
		if (rmdir(JOB_DIR) != 0) {
			c->ok = 0;
			snprintf(c->why, sizeof c->why, "job directory could not be removed");
		}
	}
	if (has_entries("/dev/shm", NULL) != 0) {
		c->ok = 0;
		snprintf(c->why, sizeof c->why, "/dev/shm holds entries");
	}
	if (has_entries("/tmp", "job") != 0) {
		c->ok = 0;
		snprintf(c->why, sizeof c->why, "/tmp holds entries");
	}
	if (ipc_objects() != 0) {
		c->ok = 0;
		snprintf(c->why, sizeof c->why, "System V IPC objects exist");
	}
}

/* ------------------------------------------------------------- arenas */

/* CPython's PyObjectArenaAllocator. */
struct arena_allocator {
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};

#define HUGE_SIZE (2UL << 20)
#define ARENA_REGION (64UL << 20)

static char *region, *region_end, *region_next;
static int in_job; /* set in a job's process: its arenas are ordinary mappings */

static void *arena_alloc(void *ctx, size_t size)
{
	(void)ctx;
	if (!in_job && region != NULL) {
		if ((size_t)(region_end - region_next) >= size) {
			void *p = region_next;
			region_next += size;
			return p;
		}
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void arena_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	if ((char *)ptr >= region && (char *)ptr < region_end) {
		/* Returned to the kernel and never handed out again: CPython
		 * frees more than its arenas through this allocator (3.11's
		 * data-stack chunks, of other sizes), so a freed block is no
		 * arena to reuse. */
		madvise(ptr, size, MADV_DONTNEED);
		return;
	}
	munmap(ptr, size);
}

/* The warm image's object arenas in transparent huge pages: fork copies one
 * page-table entry per 2 MiB of them instead of 512. A job that writes into
 * one splits it in its own page table only, and still copies just the
 * 4 KiB it writes; the worker never writes there once it has forked (it
 * forks the judge from murphy_serve for that reason). Jobs' own arenas are
 * ordinary mappings: a huge page would zero 2 MiB for the first object.
 * Runs when the worker's interpreter loads this library (LD_PRELOAD, before
 * its first arena); a host without transparent huge pages keeps ordinary
 * pages. */
__attribute__((constructor)) static void arenas_in_huge_pages(void)
{
	void (*set)(struct arena_allocator *) = (void (*)(struct arena_allocator *))dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator");
	if (set == NULL)
		return;
	char *p = mmap(NULL, ARENA_REGION + HUGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return;
	region = (char *)(((uintptr_t)p + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1));
	region_end = region + ARENA_REGION;
	region_next = region;
	madvise(region, ARENA_REGION, MADV_HUGEPAGE);
	static struct arena_allocator a = {.alloc = arena_alloc, .free = arena_free};
	set(&a);
}

/* --------------------------------------------------------- job process */

static void child_fail(const char *step, int err)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "sandbox harness failure: %s: %s\n", step, strerror(err));
	if (n > 0 && write(2, buf, (size_t)n) < 0) {
		/* nothing left to tell */
	}
	_exit(HARNESS_FAILURE);
}

static void limit(int resource, int64_t soft, int64_t hard, const char *what)
{
	struct rlimit r = {.rlim_cur = (rlim_t)soft, .rlim_max = (rlim_t)hard};
	if (setrlimit(resource, &r) != 0)
		child_fail(what, errno);
}

static void close_from(int first)
{
	if (syscall(SYS_close_range, first, ~0U, 0) == 0)
		return;
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		child_fail("closing descriptors", errno);
	char buf[4096];
	long n;
	/* Closing while listing: list again until a pass closes nothing. */
	for (int closed = 1; closed;) {
		closed = 0;
		lseek(fd, 0, SEEK_SET);
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
			for (long off = 0; off < n;) {
				struct dirent64 *d = (struct dirent64 *)(buf + off);
				off += d->d_reclen;
				if (!is_pid(d->d_name))
					continue;
				int k = (int)strtol(d->d_name, NULL, 10);
				if (k >= first && k != fd && close(k) == 0)
					closed = 1;
			}
		}
	}
	close(fd);
}

/* Makes the fork's child the job's process: descriptors 0-5 are stdin,
 * stdout, stderr, chan, the armed pipe and the program, nothing else is
 * open; a new session in the job directory; the job's limits and uid. */
static void become_job(const struct murphy_worker *w, const struct run_request *req, int fds[NFDS], int armed_w)
{
	in_job = 1;
	int src[6] = {fds[FD_STDIN], fds[FD_STDOUT], fds[FD_STDERR], fds[FD_CHAN], armed_w, fds[FD_PROGRAM]};
	int high[6];
	for (int i = 0; i < 6; i++)
		if ((high[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16)) < 0)
			child_fail("dup", errno);
	for (int i = 0; i < 6; i++)
		if (dup2(high[i], i) < 0)
			child_fail("dup2", errno);
	close_from(6);
	if (setsid() < 0)
		child_fail("setsid", errno);
	if (chdir(JOB_DIR) != 0)
		child_fail("chdir", errno);
	/* The job, not the worker or the judge, is what an out-of-memory kill
	 * must hit. */
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1000", 4) != 4)
		child_fail("oom_score_adj", errno);
	close(fd);
	limit(RLIMIT_AS, w->vmsize + req->memory_bytes, w->vmsize + req->memory_bytes, "RLIMIT_AS");
	/* A backstop only: murphy enforces the job's CPU limit over all its
	 * processes from the slot's cgroup. */
	limit(RLIMIT_CPU, req->cpu_seconds, req->cpu_seconds + 1, "RLIMIT_CPU");
	limit(RLIMIT_FSIZE, req->file_bytes, req->file_bytes, "RLIMIT_FSIZE");
	limit(RLIMIT_NPROC, req->procs, req->procs, "RLIMIT_NPROC");
	limit(RLIMIT_NOFILE, req->open_files, req->open_files, "RLIMIT_NOFILE");
	limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE");
	limit(RLIMIT_MEMLOCK, 0, 0, "RLIMIT_MEMLOCK");
	if (drop_to(w->job_uid) != 0)
		child_fail("privileges were not dropped", errno ? errno : EPERM);
	/* One byte once the process holds the job's uid and limits: what
	 * happens after it is the program's doing, before it the sandbox's. */
	if (write(4, "1", 1) != 1)
		child_fail("armed", errno);
	close(4);
}

/* ------------------------------------------------------------- worker */

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Runs one job: 1 in the job's process (armed), 0 in the worker. */
static int run_job(const struct murphy_worker *w, const struct run_request *req, int fds[NFDS])
{
	struct cleanup c;
	struct stat st;
	if (lstat(JOB_DIR, &st) == 0)
		clean_job(w, &c);
	if (mkdir(JOB_DIR, 0700) != 0 || chown(JOB_DIR, (uid_t)w->job_uid, (gid_t)w->job_uid) != 0) {
		int err = errno;
		close_fds(fds, NFDS);
		send_error(w, req->id, "job directory", err);
		return 0;
	}
	int armed[2];
	if (pipe2(armed, O_CLOEXEC) != 0) {
		int err = errno;
		close_fds(fds, NFDS);
		send_error(w, req->id, "pipe", err);
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(armed[0]);
		close(w->ctrl_fd);
		become_job(w, req, fds, armed[1]);
		return 1;
	}
	int err = errno;
	close(armed[1]);
	close_fds(fds, NFDS);
	if (pid < 0) {
		close(armed[0]);
		send_error(w, req->id, "fork", err);
		return 0;
	}
	char b = 0;
	ssize_t n;
	do
		n = read(armed[0], &b, 1);
	while (n < 0 && errno == EINTR);
	close(armed[0]);
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			err = errno;
			send_error(w, req->id, "wait", err);
			return 0;
		}
	clean_job(w, &c);
	char msg[512];
	int k = snprintf(msg, sizeof msg,
			 "{\"ev\":\"end\",\"id\":%lld,\"status\":%d,\"armed\":%s,\"utime\":%ld.%06ld,\"stime\":%ld.%06ld,"
			 "\"maxrss\":%ld,\"ok\":%s,\"left\":%d,\"why\":\"%s\"}",
			 (long long)req->id, status, n == 1 && b == '1' ? "true" : "false", (long)ru.ru_utime.tv_sec,
			 (long)ru.ru_utime.tv_usec, (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss,
			 c.ok ? "true" : "false", c.left, c.why);
	send_msg(w->ctrl_fd, msg, k);
	return 0;
}

/* The worker's loop. It first forks the slot's judge: returns 2 in the
 * judge's process (the Python code after the call makes it the judge), and
 * then only 1, in a job's process (armed, holding the job's uid), or 0 when
 * the control socket closes (the worker exits). The judge is forked here,
 * not before the call, because a write of the worker's after a fork splits
 * the huge pages of its arenas (see arenas_in_huge_pages). */
int murphy_serve(const struct murphy_worker *w)
{
	pid_t judge = fork();
	if (judge == 0) {
		close(w->ctrl_fd);
		return 2;
	}
	if (judge < 0) {
		send_error(w, 0, "fork", errno);
		return 0;
	}
	close(w->judge_fd);
	own_pids[0] = 1;
	own_pids[1] = getpid();
	own_pids[2] = judge;
	char msg[128];
	send_msg(w->ctrl_fd, msg,
		 snprintf(msg, sizeof msg, "{\"ev\":\"ready\",\"pid\":%d,\"vmsize\":%lld}", (int)own_pids[1], (long long)w->vmsize));
	for (;;) {
		struct run_request req;
		int fds[NFDS], nfds, extra;
		memset(&req, 0, sizeof req);
		ssize_t n = recv_request(w->ctrl_fd, &req, fds, &nfds, &extra);
		if (n <= 0) {
			close_fds(fds, nfds);
			return 0;
		}
		if (n != (ssize_t)sizeof req || req.magic != RUN_MAGIC || req.version != RUN_VERSION || nfds != NFDS || extra) {
			close_fds(fds, nfds);
			send_error(w, n >= 16 ? req.id : 0, "bad request", 0);
			continue;
		}
		if (run_job(w, &req, fds))
			return 1;
	}
}
