"""The exception tree of parity.

Every error a user can cause maps to exit code 2 with one line that names the
problem and the fix; a side that fails at run time is not an exception of the
parent but a recorded result (exit code 1 through the verdict).

    ParityError                      base of everything parity raises on purpose
    ├── UsageError                   bad input: exit code 2, one clear line
    │   ├── SpecError                malformed or unknown side/workload spec or option
    │   ├── WorkloadError            unknown workload, bad size knob, broken user workload
    │   ├── OptionError              an option or keyword argument out of its range or type
    │   ├── PlanError                a plan file (parity.toml) that cannot be used
    │   ├── ResumeError              --resume on a directory it cannot finish
    │   ├── BundleError              missing, corrupt, tampered or other-schema bundle
    │   ├── CheckError               a check result (check.json) that cannot be used
    │   ├── ContractError            the two sides did not run the same frozen workload
    │   └── DeviceError              a side this machine cannot run (found in the pre-flight)
    ├── SideError                    a worker process failed (crash, timeout, exception)
    ├── CheckpointError              a training checkpoint cannot be written or read back
    ├── OutputError                  what was measured cannot be written (disk full, I/O)
    └── CapacityError                a cluster pool never free within --wait: exit code 4

Library code raises these, never ``ValueError`` or ``TypeError`` for bad input: a
model class's ``__post_init__`` may raise ``ValueError`` (the codec and the request turn
it into a ``BundleError`` or an ``OptionError`` with the key named).
"""

from __future__ import annotations

#: exit codes, one meaning each across every command
EXIT_OK = 0  # the target passes every gate (a check passes)
EXIT_FAIL = 1  # a gate fails, or a side failed
EXIT_USAGE = 2  # bad input or usage, or the user's own workload failing on its own
EXIT_INCONCLUSIVE = 3  # a check or comparison that could not decide
EXIT_CAPACITY = 4  # a cluster pool never available within --wait


class ParityError(Exception):
    """Base class of the errors parity raises on purpose."""


class UsageError(ParityError):
    """Bad input or usage: the CLI prints the message on one line and exits with 2."""


class SpecError(UsageError):
    """A side spec or workload spec that cannot be parsed or names something unknown."""


class WorkloadError(UsageError):
    """An unknown workload, a size knob out of range, or a user workload that is broken."""


class OptionError(UsageError):
    """An option (or a keyword argument of the Python API) of the wrong type or range."""


class PlanError(UsageError):
    """A plan file that cannot be read, or a key in it that is unknown or out of range."""


class ResumeError(UsageError):
    """``--resume`` on a directory that holds no comparison, or with conflicting options."""


class BundleError(UsageError):
    """A run bundle that is missing, unreadable, corrupt, tampered with or of another schema."""


class CheckError(UsageError):
    """A ``check.json`` that is missing, unreadable or not a parity check result."""


class ContractError(UsageError):
    """The two bundles did not run the same frozen workload and no difference was allowed."""


class DeviceError(UsageError):
    """A side this machine cannot run: a device that is not there, an unknown compile
    backend, more threads than cores. Found by the worker that prepares the workload,
    before anything is written."""


class SideError(ParityError):
    """A worker process failed; carries the reason recorded in its bundle."""


class CheckpointError(ParityError):
    """A training checkpoint that cannot be written or read back safely (a worker error:
    it ends the side as failed with this reason)."""


class CapacityError(ParityError):
    """A side's cluster pool (a node with its resource) was busy or absent for all of
    ``--wait``: a transient condition of the cluster, not bad input (exit code 4)."""

    exit_code = EXIT_CAPACITY


class OutputError(ParityError):
    """A file parity writes could not be written (the disk is full, an I/O error).

    A side that hits one ends as failed with the reason in this error: nothing is left
    under its bundle's final name (the partial bundle stays hidden, with a failed manifest
    where space allowed), so ``--resume`` runs it again once there is space. Exit code 1."""


def denied(exc: PermissionError, path: object = None) -> UsageError:
    """A file or directory this user may not read or write, as bad input (exit 2): one
    line naming it (never "a bug in parity")."""
    import os

    where = exc.filename if exc.filename is not None else path
    parent = os.path.dirname(str(where)) if where else ""
    if parent and not os.access(parent, os.R_OK | os.X_OK):
        where = parent  # the directory that cannot be read, not a file inside it
    return UsageError(
        f"{where or 'a file'} cannot be read or written by this user (permission denied): "
        "give it access (chmod, chown) or pass another path"
    )


#: a value (a run of text without spaces) longer than this is shortened in the middle
LONGEST_VALUE = 200


def one_line(message: object, *, longest: int = LONGEST_VALUE) -> str:
    """``message`` as one printable line, as every error line parity prints is: control
    and format characters (newlines, escapes, lone surrogates from undecodable
    arguments) escaped, each value longer than ``longest`` characters shortened in the
    middle, and the whole line kept under ten such values."""
    from parity.printable import printable

    text = printable(message, layout=False)
    text = " ".join(_shorten(word, longest) for word in text.split(" "))
    return _shorten(text, 10 * longest)


def _shorten(text: str, longest: int) -> str:
    if len(text) <= longest:
        return text
    head = longest * 2 // 3
    return f"{text[:head]}...({len(text) - longest} more)...{text[-(longest - head) :]}"
