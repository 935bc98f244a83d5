"""Loads settings: the defaults, then a key=value file, then APP_* environment
variables; each value is converted to the type of its default."""

import os

from settings.defaults import DEFAULTS, LOG_LEVELS

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def convert(key, text):
    default = DEFAULTS[key]
    text = text.strip()
    if isinstance(default, bool):
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{key}: not a boolean: {text!r}")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def parse_file(text):
    values = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or key not in DEFAULTS:
            raise ValueError(f"line {number}: unknown setting {key!r}")
        values[key] = convert(key, value)
    return values


def load(path=None, environ=None):
    environ = os.environ if environ is None else environ
    settings = dict(DEFAULTS)
    if path is not None and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            settings.update(parse_file(f.read()))
    for key in DEFAULTS:
        name = "APP_" + key.upper()
        if name in environ:
            settings[key] = convert(key, environ[name])
    if settings["log_level"] not in LOG_LEVELS:
        raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")
    return settings
