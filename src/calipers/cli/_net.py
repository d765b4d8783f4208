"""Listening addresses for the commands that serve (``calipers gateway``, ``calipers ui``)."""

from __future__ import annotations

import ipaddress
import socket

from calipers.errors import ConfigError

__all__ = ["check_port", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_port(host: str, port: int) -> None:
    """Fail early, with the reason, when ``host:port`` cannot be listened on."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as e:
        raise ConfigError(
            f"Cannot listen on {host}:{port}: {e.strerror or e}.",
            hint="Choose another --port or --host.",
        ) from None
