"""The `sessiondb` command: one small module per command group, each a thin face over the library."""

from __future__ import annotations

import io
import sys
from typing import Any

import click
from click.core import ParameterSource

from ..store.locations import URL_VARIABLE
from .checkpoints import checkpoints
from .context import CliContext, CliError, complete_profile
from .demo import demo
from .doctor import doctor, recover, restore_captured
from .forget import forget
from .gateway import gateway
from .importing import import_history
from .migrate import migrate
from .output import emit_error, spell_fields
from .policy import policy
from .recall import mcp
from .profiles import profiles
from .serve import serve
from .sessions import sessions
from .turns import turns
from . import maintenance, transfer as _transfer  # noqa: F401 - transfer adds export and import to `sessions`


class Cli(click.Group):
    """The root group. With --json (or --jq) anywhere before `--`, a failure is printed as
    the HTTP API's error object `{"code", "message", "detail"}` on stdout, with the same
    exit status. A word after `--json` is its FIELDS only when it names fields
    (output.spell_fields)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        for stream in (sys.stdout, sys.stderr):
            # Half a character (an unpaired surrogate a message's text may hold) has no UTF-8
            # form: it is printed as its escape \udXXX (in JSON, JSON's own), never a crash.
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(errors="backslashreplace")
        argv = spell_fields(list(sys.argv[1:] if args is None else args))
        options = argv[:argv.index("--")] if "--" in argv else argv
        if not standalone_mode or not any(a.startswith(("--json=", "--jq")) for a in options):
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            emit_error(_code(exc), exc.format_message(), getattr(exc, "detail", ""))
            sys.exit(exc.exit_code)
        except click.Abort:
            emit_error("aborted", "aborted: nothing was changed", "")
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


def _code(exc: click.ClickException) -> str:
    if isinstance(exc, CliError):
        return exc.code
    return "usage" if isinstance(exc, click.UsageError) else "refused"


@click.group(cls=Cli, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sessiondb", prog_name="sessiondb", message="%(prog)s %(version)s")
@click.option("--home", type=click.Path(file_okay=False), envvar="SESSIONDB_HOME",
              help="The sessiondb home (default: $SESSIONDB_HOME or ~/.sessiondb).")
@click.option("--store", metavar="URL", envvar=URL_VARIABLE,
              help="The store to use instead of the home's: a PostgreSQL URL, whose server holds the "
                   "profiles, or a store file (default: $SESSIONDB_URL, unless --home is given).")
@click.option("-p", "--profile", default=None, shell_complete=complete_profile,
              help="The profile whose store to use (default: main); create one with `profiles create`.")
@click.pass_context
def main(ctx: click.Context, home: str | None, store: str | None, profile: str | None) -> None:
    """sessiondb: the durable memory of AI agents."""
    typed = {name: ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE for name in ("home", "store")}
    if typed["home"] and typed["store"]:
        raise click.UsageError("give --home or --store, not both")
    if typed["home"]:
        store = None  # a home on the command line beats $SESSIONDB_URL; otherwise the URL wins, as in open_store()
    ctx.obj = CliContext(home=home, profile=profile, store=store or None, store_given=typed["store"])
    if ctx.invoked_subcommand is None:  # bare `sessiondb`: the help, and success
        click.echo(ctx.get_help())


main.add_command(demo)
main.add_command(doctor)
main.add_command(forget)
main.add_command(recover)
main.add_command(restore_captured)
main.add_command(gateway)
main.add_command(import_history)
main.add_command(mcp)
main.add_command(maintenance.backup)
main.add_command(maintenance.vectors)
main.add_command(profiles)
main.add_command(migrate)
main.add_command(policy)
main.add_command(serve)
main.add_command(sessions)
main.add_command(turns)
main.add_command(checkpoints)
for _command in (maintenance.optimize, maintenance.vacuum, maintenance.prune):
    sessions.add_command(_command)
