"""``calipers ui``: the web dashboard, under uvicorn, behind a Host check and a token."""

from __future__ import annotations

import contextlib
import socket
import threading
import webbrowser
from urllib.parse import quote

import click

from calipers.cli._app import Context, cli, store_option
from calipers.cli._net import check_port, is_loopback
from calipers.errors import ConfigError

__all__ = ["ui_cmd"]

_WILDCARDS = ("0.0.0.0", "::", "[::]")


def _token(token: str | None, no_token: bool, allow_remote: bool) -> tuple[str | None, bool]:
    """The token to require and whether it was made here (then it is printed)."""
    if no_token:
        if token is not None:
            raise ConfigError(
                "--no-token and --token (or CALIPERS_UI_TOKEN) contradict each other.",
                hint="Give one of them.",
            )
        if allow_remote:
            raise ConfigError(
                "--no-token is refused with --allow-remote: anyone who can "
                "reach the port would read every stored prompt and response.",
                hint="Drop --no-token; share the printed address (it holds "
                "the token) with those who may read the dashboard.",
            )
        return None, False
    if token is not None:
        return token, False
    from calipers.web import new_token

    return new_token(), True


def _hosts(host: str, allowed: tuple[str, ...]) -> list[str]:
    """The Host names to answer to besides the loopback ones: the listening address, the
    --allowed-host names, and for a wildcard address this machine's names and addresses."""
    names = list(allowed)
    if host not in _WILDCARDS:
        names.append(host)
    elif not allowed:
        me = socket.gethostname()
        names += [me, socket.getfqdn()]
        with contextlib.suppress(OSError):  # a host name that does not resolve
            names += sorted({str(i[4][0]) for i in socket.getaddrinfo(me, None)})
    return list(dict.fromkeys(names))


@cli.command("ui")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; only loopback addresses unless --allow-remote.",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=False,
    show_default=True,
    help="Open the dashboard in a web browser once it is up.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host. Anyone with the token (in the printed "
    "address) who can reach the port sees every stored prompt and response.",
)
@click.option(
    "--token",
    envvar="CALIPERS_UI_TOKEN",
    metavar="TOKEN",
    help="The access token (16+ characters) [default: a new random one, printed in "
    "the address; env CALIPERS_UI_TOKEN].",
)
@click.option(
    "--no-token",
    is_flag=True,
    help="No token (loopback only): any program or user of this machine can then "
    "read the dashboard.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name the dashboard answers to, besides 127.0.0.1, localhost, [::1] "
    "and --host (repeatable; '*': any, e.g. behind a proxy).",
)
@store_option
@click.pass_obj
def ui_cmd(
    obj: Context,
    /,
    host: str,
    port: int,
    open_browser: bool,
    allow_remote: bool,
    token: str | None,
    no_token: bool,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the web dashboard: runs, reports, comparisons, leaderboard, A/B status, monitoring.

    Pages are rendered on the server and work offline (no scripts, no CDN); the same data is
    under /api as JSON. Every request needs the access token: open the printed address once
    (it sets a cookie), or send "Authorization: Bearer TOKEN". Requests naming another Host
    are refused (DNS rebinding). Stop with Ctrl-C.

    \b
    Examples:
      calipers ui
      calipers ui --port 9000 --open
      CALIPERS_UI_TOKEN=$(cat ~/.ui-token) calipers ui --host 0.0.0.0 --allow-remote \\
          --allowed-host evals.example.org
    """
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"--host {host} would serve the dashboard beyond this machine.",
            hint="Use --host 127.0.0.1, or pass --allow-remote if every holder of the token "
            "on that network may see all stored prompts and responses.",
        )
    try:
        import uvicorn

        from calipers.web import create_app
    except ImportError as e:
        raise ConfigError(
            f"The dashboard needs {e.name or 'FastAPI and uvicorn'}.",
            hint="pip install 'calipers[ui]'",
        ) from None
    from calipers.store import Store

    secret, made = _token(token, no_token, allow_remote)
    names = _hosts(host, allowed_hosts)
    with Store.open(obj.store_url) as store:
        app = create_app(store, token=secret, allowed_hosts=names)
        check_port(host, port)
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
        click.echo(f"calipers ui on {url}  (store {store.url}; Ctrl-C to stop)")
        if secret is None:
            obj.err.print(
                "[bold yellow]Warning:[/] no token: any program or user of this "
                "machine can read every stored prompt and response."
            )
        elif made:
            click.echo(f"Open (the token is shown once): {url}?token={quote(secret)}")
        else:
            click.echo("Token: the one given (--token / CALIPERS_UI_TOKEN).")
        if not is_loopback(host):
            obj.err.print(
                f"[bold yellow]Note:[/] serving on {host}; answering to the Host "
                f"names {', '.join(names) or '(loopback only)'} and loopback "
                "(--allowed-host to add)."
            )
        if open_browser:
            target = url if secret is None else f"{url}?token={quote(secret)}"
            threading.Timer(1.0, webbrowser.open, args=(target,)).start()
        uvicorn.run(app, host=host, port=port, log_level="warning")
