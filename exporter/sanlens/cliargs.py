"""argparse types shared by the subcommands: a bad value is a usage error (exit 2) naming the argument."""

from __future__ import annotations

import argparse
import math

from sanlens.config import host_problem, listen_problem

# Read by serve (below its flags, above the config file) and by healthcheck, so a container sets
# them once for both: the image's HEALTHCHECK and the chart's exec probes find the server the way
# it was told to listen.
ENV_LISTEN = "SANLENS_LISTEN"
ENV_WEB_CONFIG_FILE = "SANLENS_WEB_CONFIG_FILE"


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a port number from 0 to 65535") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("expected a port number from 0 to 65535")
    return value


def listen_address(text: str) -> str:
    """``host:port`` or ``:port``, checked as the config's ``listen`` is."""
    problem = listen_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def host(text: str) -> str:
    """An IPv4 address or a host name to listen on."""
    problem = host_problem(text)
    if problem or text.startswith("["):
        raise argparse.ArgumentTypeError("expected an IPv4 address or a host name")
    return text


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of seconds") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError("expected a finite number of seconds")
    return value


def seconds(text: str) -> float:
    """A finite number of seconds, 0 or more."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError("expected 0 or more seconds")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds, more than 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("expected more than 0 seconds")
    return value


def positive_number(text: str) -> float:
    """A finite number, more than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("expected a finite number more than 0")
    return value
