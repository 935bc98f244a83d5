# The build driver: runs inside a fresh build sandbox as uid 0 of the host
# (capabilities: SETUID, SETGID, CHOWN, DAC_READ_SEARCH only) and never runs
# task or candidate code itself. It copies the read-only snapshot and the
# job's changed files onto the size-capped /work tmpfs, then runs each
# command as the job uid with rlimits, its output on its own descriptor, and
# reports each command's end on the control descriptor, which no command
# holds. See SECURITY.md.
import json
import os
import shutil
import signal
import stat
import sys

CTRL = 3  # driver -> host: one JSON object per line
GO = 4  # host -> driver: one byte once the sandbox is in its cgroup
OUT0 = 6  # command i writes to OUT0 + i


def send(**msg):
    os.write(CTRL, (json.dumps(msg) + "\n").encode())


def drop(uid, lim):
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    import resource

    for name, value in (
        ("RLIMIT_NPROC", lim["procs"]),
        ("RLIMIT_NOFILE", lim["open_files"]),
        ("RLIMIT_FSIZE", lim["file_size"]),
        ("RLIMIT_CORE", 0),
    ):
        resource.setrlimit(getattr(resource, name), (value, value))


def kill_uid(uid):
    """Kills every process of uid (from that uid: kill(-1) spares the caller)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def link_tree(src, dst):
    """Gives the job a seed (a build cache) without copying it: its own
    writable directories whose files are symbolic links into the read-only
    seed. A cache reads its entries through the links and writes new ones
    beside them; the seed itself cannot change."""
    for root, dirs, files in os.walk(src):
        out = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(out, mode=0o755, exist_ok=True)
        for n in files:
            os.symlink(os.path.join(root, n), os.path.join(out, n))


def prepare(job, uid):
    """Fills /work as the job uid: the snapshot, then the changed files."""
    os.chown("/work", uid, uid)
    os.chmod("/tmp", 0o1777)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            drop(uid, job["limits"])
            os.umask(0o022)
            shutil.copytree("/src", "/work", symlinks=True, dirs_exist_ok=True, copy_function=shutil.copyfile)
            # The snapshot is read-only; its copy is the job's to build in.
            for root, dirs, files in os.walk("/work"):
                os.chmod(root, 0o755)
                for n in files:
                    p = os.path.join(root, n)
                    if os.stat("/src" + p[len("/work"):]).st_mode & stat.S_IXUSR:
                        os.chmod(p, 0o755)
            if os.path.isdir("/patch"):
                shutil.copytree("/patch", "/work", symlinks=False, dirs_exist_ok=True, copy_function=shutil.copyfile)
            for rel in job.get("deleted") or []:
                p = os.path.join("/work", rel)
                if os.path.isfile(p) and not os.path.islink(p):
                    os.unlink(p)
            for rel, content in (job.get("files") or {}).items():
                p = os.path.join("/tmp", rel)
                os.makedirs(os.path.dirname(p), mode=0o755, exist_ok=True)
                with open(p, "w") as f:
                    f.write(content)
            if os.path.isdir("/seed"):
                for name in os.listdir("/seed"):
                    link_tree(os.path.join("/seed", name), os.path.join("/tmp", name))
        except OSError as e:
            sys.stderr.write("prepare: %s\n" % e)
            code = 28 if getattr(e, "errno", 0) == 28 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def run(i, cmd, job, uid, env):
    pid = os.fork()
    if pid == 0:
        try:
            out = OUT0 + i
            os.setsid()
            drop(uid, job["limits"])
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.closerange(3, 1024)
            os.chdir("/work")
            os.umask(0o022)
            os.execvpe(cmd[0], cmd, env)
        except OSError as e:
            os.write(2, ("cannot run %s: %s\n" % (cmd[0], e.strerror)).encode())
            os._exit(127)
        os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    # The command is over when its main process is: whatever it left behind
    # goes with it, before the next command starts.
    kill_uid(uid)
    return status, ru


def main():
    with open("/opt/murphy-build/job.json") as f:
        job = json.load(f)
    uid = job["uid"]
    env = job["env"]
    # The host moves every process of the sandbox into the slot's cgroup
    # once they all exist (now), then lets the job go.
    send(ev="hello")
    if os.read(GO, 1) != b"g":
        return
    status = prepare(job, uid)
    st = os.statvfs("/work")
    send(ev="ready", status=status, free=st.f_bavail * st.f_frsize)
    if status != 0:
        return
    for i, cmd in enumerate(job["commands"]):
        send(ev="start", i=i)
        status, ru = run(i, cmd, job, uid, env)
        os.close(OUT0 + i)
        st = os.statvfs("/work")
        send(ev="end", i=i, status=status, utime=ru.ru_utime, stime=ru.ru_stime, maxrss=ru.ru_maxrss,
             free=st.f_bavail * st.f_frsize)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) and not job.get("keep_going"):
            break
    # Kept even when a command failed: a failing baseline still compiled
    # everything it depends on (the standard library) into the cache.
    keep(job, uid)
    send(ev="done")


def keep(job, uid):
    """Copies the job's kept /tmp directories to /export, as the job uid."""
    names = job.get("keep") or []
    if not names or not os.path.isdir("/export"):
        return
    pid = os.fork()
    if pid == 0:
        try:
            drop(uid, job["limits"])
            for name in names:
                src = os.path.join("/tmp", name)
                if os.path.isdir(src) and not os.path.islink(src):
                    shutil.copytree(src, os.path.join("/export", name), symlinks=False, dirs_exist_ok=True)
        except OSError as e:
            sys.stderr.write("keep: %s\n" % e)
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)


main()
