"""Checks of single values that reach a shell, a job script or a container: one printable line,
an operand (never an option), environment variable names, host names, docker image references, container names.

Standard library only, so that every layer may check a value (the launchers before they build a
command, the study and launch schemas through `fields`, which wraps these for pydantic). Each check
returns the value or raises ValueError saying what is allowed.
"""

from __future__ import annotations

import re

#: What reaches a shell or a job script: variable names, and no control character (a newline starts a command).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
HOST = re.compile(r"[A-Za-z0-9_\[][A-Za-z0-9_.:%\[\]-]*")
# A docker image reference, as the distribution/reference grammar writes it (docker's own parser):
# [domain[:port]/]path[:tag][@digest]; path components lowercase, separated by `.`, `_`, `__` or dashes.
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*" \
          r"|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
_TAG_DIGEST = r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
IMAGE = re.compile(rf"(?:{_DOMAIN}/)?{_PATH}{_TAG_DIGEST}")
#: What pyxis (`srun --container-image`) also reads: `[user@][registry#]image` or a squashfs file.
PYXIS_IMAGE = re.compile(rf"(?:[A-Za-z0-9_.-]+@)?(?:{_DOMAIN}#)?{_PATH}{_TAG_DIGEST}|\.{{0,2}}/[A-Za-z0-9_./+-]+")
#: A container name as docker allows it.
CONTAINER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")


def one_line(value: str) -> str:
    """A value that reaches a shell or a job script: one printable line."""
    if m := CONTROL.search(value):
        raise ValueError(f"holds the control character {m.group()!r}; values reach shell commands and job "
                         "scripts and must be one printable line")
    return value


def operand(value: str) -> str:
    """A value a command reads as an operand (a repository, a path): one printable line, not starting
    with '-' (`git clone '--upload-pack=touch X'` runs a command: quoting keeps a value one word, it
    does not keep it an operand)."""
    one_line(value)
    if value.startswith("-"):
        raise ValueError(f"{value!r} may not start with '-': the command it reaches would read it as an option")
    return value


def env_name(value: str) -> str:
    if not ENV_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not an environment variable name (letters, digits and _, "
                         "not starting with a digit)")
    return value


def host(value: str) -> str:
    if not HOST.fullmatch(value):
        raise ValueError(f"{value!r} is not a host name or address (letters, digits, '.', '-', '_', ':'; not "
                         "starting with '-', which ssh and mpirun would read as an option)")
    return value


def image(value: str) -> str:
    """A docker image (`docker run ... IMAGE`), or what pyxis reads under launcher slurm."""
    if len(value) > 255 or not (IMAGE.fullmatch(value) or PYXIS_IMAGE.fullmatch(value)):
        raise ValueError(f"{value!r} is not a docker image reference ([registry[:port]/]name[:tag][@digest], "
                         "name in lowercase letters, digits and . _ -; under launcher slurm also pyxis's "
                         "registry#name[:tag] or a squashfs file path); a name starting with '-' would be read "
                         "as a docker option")
    return value


def container_name(value: str) -> str:
    if not CONTAINER_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a docker container name (letters, digits, '_', '.', '-', starting "
                         "with a letter or digit; not starting with '-', which docker would read as an option)")
    return value
