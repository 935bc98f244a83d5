"""Default settings and the type of each one."""

DEFAULTS = {
    "host": "127.0.0.1",
<<<<<<< HEAD
    "port": 8000,
    "workers": 2,
=======
    "port": 8080,
    "workers": 4,
>>>>>>> deploy-defaults
    "debug": False,
    "log_level": "info",
    "timeout_seconds": 30.0,
}

LOG_LEVELS = ("debug", "info", "warning", "error")
