# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Errors a user can cause, each with the exit code the CLI returns (docs/cli.md lists them)."""

EXIT_OK = 0
EXIT_ERROR = 1          # anything not listed below
EXIT_USAGE = 2          # bad command line (argparse)
EXIT_PORT = 3           # port missing, busy or not permitted
EXIT_NO_REPLY = 4       # the board did not answer
EXIT_VERSION = 5        # protocol version or parameter schema mismatch
EXIT_FAULT = 6          # the board is in FAULT
EXIT_BAD_VALUE = 7      # invalid parameter value or robot file
EXIT_LINK_LOST = 8      # persistent loss on the link
EXIT_INTERRUPTED = 130  # Ctrl-C / SIGTERM (the shell's 128 + SIGINT)
EXIT_BROKEN_PIPE = 141  # stdout closed early, e.g. `viperdrive ports | head` (128 + SIGPIPE)


class UserError(Exception):
    """A failure the user can fix; str() is the whole message, exit_code what the CLI returns."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class PortError(UserError):
    exit_code = EXIT_PORT


class BoardBusy(PortError):
    """Another client holds the board's link (the virtual board serves one link client at a time)."""


class LinkError(UserError):
    """The link to the board failed: a request went unanswered (NoReplyError) or the line itself is gone
    (LinkLost). A caller that only needs to know the board cannot be talked to now catches this."""


class NoReplyError(LinkError):
    """A request got no reply within its timeout (counted in board time): the board is not answering."""

    exit_code = EXIT_NO_REPLY


class VersionMismatch(UserError):
    exit_code = EXIT_VERSION


class BoardFault(UserError):
    exit_code = EXIT_FAULT


class BadValue(UserError):
    exit_code = EXIT_BAD_VALUE


class LinkLost(LinkError):
    """The line is gone (the port vanished, the socket closed) or too many cycles in a row went unanswered."""

    exit_code = EXIT_LINK_LOST


class FuseError(UserError):
    """The input or output file cannot be used (`viperdrive fuse`, and the recordings and outputs it shares with
    the config lint: viperdrive.recording.mcap)."""
