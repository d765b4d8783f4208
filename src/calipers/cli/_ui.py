"""``calipers ui``: the web dashboard, under uvicorn."""

from __future__ import annotations

import threading
import webbrowser

import click

from calipers.cli._app import Context, cli, store_option
from calipers.cli._net import check_port, is_loopback
from calipers.errors import ConfigError

__all__ = ["ui_cmd"]


@cli.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; only loopback addresses unless --allow-remote.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--open/--no-open", "open_browser", default=False, show_default=True,
              help="Open the dashboard in a web browser once it is up.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host. The dashboard has no login: anyone who can "
              "reach the port sees every stored prompt and response.")
@store_option
@click.pass_obj
def ui_cmd(obj: Context, /, host: str, port: int, open_browser: bool,
           allow_remote: bool) -> None:
    """Serve the web dashboard: runs, reports, comparisons, leaderboard, A/B status, monitoring.

    Pages are rendered on the server and work offline (no scripts, no CDN); the same data is
    under /api as JSON. Stop with Ctrl-C.

    \b
    Examples:
      calipers ui
      calipers ui --port 9000 --open
      calipers ui --store postgresql+psycopg://user@db/calipers
    """
    if not is_loopback(host):
        if not allow_remote:
            raise ConfigError(
                f"--host {host} would serve the dashboard beyond this machine, and it has no "
                "login.", hint="Use --host 127.0.0.1, or pass --allow-remote if every reader "
                "of that network may see all stored prompts and responses.")
        obj.err.print(f"[bold yellow]Warning:[/] serving on {host} with no authentication: "
                      "anyone who can reach it sees every stored prompt and response.")
    try:
        import uvicorn

        from calipers.web import create_app
    except ImportError as e:
        raise ConfigError(f"The dashboard needs {e.name or 'FastAPI and uvicorn'}.",
                          hint="pip install 'calipers[ui]'") from None
    from calipers.store import Store

    check_port(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    with Store.open(obj.store_url) as store:
        click.echo(f"calipers ui on {url}  (store {store.url}; Ctrl-C to stop)")
        if open_browser:
            threading.Timer(1.0, webbrowser.open, args=(url,)).start()
        uvicorn.run(create_app(store), host=host, port=port, log_level="warning")
