"""``calipers review serve``: the rater, adjudicator and owner pages of one campaign, under
uvicorn, on loopback unless told otherwise."""

from __future__ import annotations

import click

from calipers.cli._app import Context, store_option
from calipers.cli._net import check_port, is_loopback
from calipers.cli._review import review_group
from calipers.errors import ConfigError

__all__ = ["serve_cmd"]


@review_group.command("serve")
@click.argument("name")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; only loopback addresses unless --allow-remote.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8766,
    show_default=True,
    help="Port (the dashboard, calipers ui, uses 8765).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host (every page still needs a personal link's session).",
)
@click.option(
    "--secure-cookies",
    is_flag=True,
    help="Mark the session cookie Secure: the pages are reached over HTTPS (a TLS proxy).",
)
@click.option(
    "--lease-minutes",
    type=click.FloatRange(min=0.5),
    default=15.0,
    show_default=True,
    help="How long an item stays with a rater who has not answered it.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name to answer to besides loopback and --host (repeatable; '*': any).",
)
@store_option
@click.pass_obj
def serve_cmd(
    obj: Context,
    /,
    name: str,
    host: str,
    port: int,
    allow_remote: bool,
    secure_cookies: bool,
    lease_minutes: float,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the review pages of campaign NAME.

    Each person opens their personal link (from `calipers review invite`), which signs them
    in: raters get their queue, adjudicators the disagreements, owners progress and raters.

    \b
    Examples:
      calipers review serve support-q4
      calipers review serve support-q4 --host 0.0.0.0 --allow-remote \\
          --allowed-host review.example.org --secure-cookies
    """
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"--host {host} would serve the review pages beyond this machine.",
            hint="Use --host 127.0.0.1, or pass --allow-remote (every page needs a personal "
            "link; put a TLS proxy in front and pass --secure-cookies).",
        )
    try:
        import uvicorn

        from calipers.web import review_app
    except ImportError as e:
        raise ConfigError(
            f"The review pages need {e.name or 'FastAPI and uvicorn'}.",
            hint="pip install 'calipers[ui]'",
        ) from None
    from calipers.cli._ui import _hosts  # the listening address's names, as for `calipers ui`
    from calipers.store import Store

    names = _hosts(host, allowed_hosts)
    with Store.open(obj.store_url) as store:
        app = review_app(
            store,
            name,
            allow_remote=allow_remote,
            secure_cookies=secure_cookies,
            lease_s=lease_minutes * 60,
            allowed_hosts=names,
        )
        check_port(host, port)
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
        click.echo(f"calipers review serve {name} on {url}  (store {store.url}; Ctrl-C to stop)")
        click.echo(f"Personal links are {url}r/TOKEN (calipers review invite prints them).")
        # access_log off: a personal link's path holds its token
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
