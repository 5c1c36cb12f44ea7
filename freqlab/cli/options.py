"""Parameter types and the options several commands share, each defined once here (one help text, one default):
``--L``, ``--regime``, ``--tokens``, ``--tau``/``--tau-from``, ``--hist``, ``--weights``, ``--layout``, ``--seed``,
``--json`` and Megatron's settings; one size syntax (:mod:`freqlab.sizes`); renamed flags.

Where an option takes a parameter (:func:`window_option`, :func:`regime_option`), the difference is meaningful and
its help says why: ``freq``, ``stats``, ``scan`` and the figures compare several windows or regimes side by side, so
their ``--L``/``--regime`` repeat; a plan, a calibration and a schedule are computed from one frequency, so theirs
are single.

Every count flag takes a number with an optional suffix: positions (windows, target lengths, offsets) count
K = 1024 (``--L 2K`` is 2048, ``--extend-to 128K`` is 131072); tokens and other counts are decimal (``--tokens
1T`` is 10^12, ``--max-docs 100k`` is 100,000). A renamed flag keeps its old name as a hidden alias
(:func:`renamed_option`), so commands written for an earlier version still run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import click

from freqlab.errors import FreqlabError, ParameterError
from freqlab.files import has_freqlab_header
from freqlab.formats import LENGTHS_FILE, LENGTHS_FORMAT
from freqlab.frequency.mixture import PRESETS, Mixture
from freqlab.frequency.regimes import REGIMES
from freqlab.histogram import histogram_file
from freqlab.paths import expand_home, file_identity, writes_stdout
from freqlab.sizes import (
    DEFAULT_TAU,
    MAX_HEAD_DIM,
    MAX_POSITIONS,
    POSITIONS_HELP,
    TOKENS_HELP,
    parse_count,
    parse_positions,
    parse_tokens,
)


class HomePath(click.Path):
    """``click.Path`` with a leading ``~`` or ``~user`` expanded (:func:`freqlab.paths.expand_home`): the shell leaves
    it in ``'~/x'`` and after ``--out=``; every path option and argument of the CLI is one.
    """

    def convert(self, value, param, ctx):
        """The path, ``~`` expanded; an empty path, an unknown user or ``-`` (when no file has that name) is a usage
        error naming the option.
        """
        if value == "-" and not os.path.lexists(value):  # read as a file name, never as standard input or output
            self.fail(
                "'-' is no file here (standard input and output are not read or written): "
                "name a file (./- for one named -)",
                param,
                ctx,
            )
        if isinstance(value, str):
            try:
                value = expand_home(value)
            except FreqlabError as exc:
                self.fail(str(exc), param, ctx)
        return super().convert(value, param, ctx)


class HistogramPath(HomePath):
    """A length histogram's Parquet file, or the output folder of ``freqlab scan`` holding one
    (:func:`freqlab.histogram.histogram_file`): ``freqlab freq OUT`` after ``freqlab scan --out OUT``.
    """

    def __init__(self) -> None:
        super().__init__(dir_okay=False)

    def convert(self, value, param, ctx):
        """The histogram file: ``value``, or ``value/lengths.parquet`` when ``value`` is a folder holding one."""
        if isinstance(value, str) and value and value != "-":
            with contextlib.suppress(FreqlabError):  # HomePath's own conversion says why
                found = histogram_file(value)
                if found.is_dir():
                    self.fail(f"{value!r} is a folder without {LENGTHS_FILE} (give a histogram or a scan's --out)")
                if found != Path(expand_home(value)):
                    value = os.fspath(found)
        return super().convert(value, param, ctx)


class Size(click.ParamType):
    """A size in the syntax of :mod:`freqlab.sizes` (``2K``, ``128K``, ``1T``); ``parse`` says the base."""

    def __init__(self, parse, name: str, minimum: int = 1, maximum: int | None = None) -> None:
        self.parse, self.name, self.minimum, self.maximum = parse, name, minimum, maximum

    def within(self, minimum: int = 1, maximum: int | None = None) -> Size:
        """The same kind of size within other bounds: ``POSITIONS.within(2, 64)`` (no maximum: this one's)."""
        return Size(self.parse, self.name, minimum, self.maximum if maximum is None else maximum)

    def convert(self, value, param, ctx):
        """Parse a size with its suffix, or fail as a usage error naming the option."""
        try:
            # parsed against this option's own least value: -5 and 0 get one message ("a positive integer")
            size = (
                value
                if isinstance(value, int) and not isinstance(value, bool)
                else self.parse(value, minimum=self.minimum)
            )
        except FreqlabError as exc:
            self.fail(str(exc), param, ctx)
        if size < self.minimum or (self.maximum is not None and size > self.maximum):
            bounds = f">= {self.minimum}" if self.maximum is None else f"in {self.minimum}..{self.maximum:,}"
            self.fail(f"{value!r} is not {bounds}", param, ctx)
        return size


class PositiveNumber(click.ParamType):
    """A finite number > 0 (a RoPE base, a stride): ``inf`` and ``nan`` are refused as what they are."""

    name = "NUMBER"

    def convert(self, value, param, ctx):
        """Parse a positive number, or fail as a usage error naming the option."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"must be a finite number, got {value!r}", param, ctx)
        if number <= 0:
            self.fail(f"must be positive, got {number:g}", param, ctx)
        return number


POSITIVE_NUMBER = PositiveNumber()
#: a seed: numpy's generators take any non-negative integer
SEED = click.IntRange(min=0)
TOKENS = Size(parse_tokens, "TOKENS", maximum=2**63 - 1)  # counts stay exact int64


class Occurrences(Size):
    """The occurrence threshold tau: a whole number of occurrences >= 1 in the token syntax (``100B``), up to 2^63 - 1
    (f_T(i) >= tau compares exact int64 counts); anything else fails with a line saying what tau is.
    """

    def convert(self, value, param, ctx):
        """Parse tau, or fail as a usage error saying what tau must be."""
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            self.fail(
                f"tau must be a positive number of occurrences, a whole number from 1 to 2^63 - 1 (e.g. 100B), "
                f"got {value!r}",
                param,
                ctx,
            )


TAU = Occurrences(parse_tokens, "TAU", maximum=2**63 - 1)
POSITIONS = Size(parse_positions, "N", maximum=MAX_POSITIONS)  # f is computed as a dense array
COUNT = Size(parse_count, "N")


class FiniteFloat(click.FloatRange):
    """A float that is a number (``nan`` and ``inf`` are usage errors: they would reach printed configs), within
    click's optional range bounds (``FiniteFloat(1, min_open=True)``: above 1).
    """

    name = "float"

    def convert(self, value, param, ctx):
        """Parse a finite float (no nan or inf), or fail as a usage error naming the option."""
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        """No bounds, nothing to say (click's own text would be ``x<=None``)."""
        return "" if self.min is None and self.max is None else super()._describe_range()


class Share(FiniteFloat):
    """A share in (0, 1) (``max_open``) or (0, 1], written as a fraction or a percentage: ``0.9`` or ``90%``."""

    name = "share"

    def __init__(self, max_open: bool = True) -> None:
        super().__init__(0, 1, min_open=True, max_open=max_open)

    def convert(self, value, param, ctx):
        """Parse ``0.9`` or ``90%`` (the README writes shares as percentages), or fail naming the option."""
        if isinstance(value, str) and value.strip().endswith("%"):
            percent = click.FLOAT.convert(value.strip()[:-1], param, ctx)
            if not (0 < percent < 100 or (percent == 100 and not self.max_open)):  # nan too
                self.fail(f"{value!r} is not a share in {'(0%, 100%)' if self.max_open else '(0%, 100%]'}", param, ctx)
            return percent / 100
        return super().convert(value, param, ctx)


#: a RoPE base: finite and above 1 (b^(-2j/d) must fall with j)
ROPE_BASE = FiniteFloat(1, min_open=True)


class EvenInt(click.IntRange):
    """An even integer of at least ``min`` (a head dimension: RoPE rotates pairs of dimensions)."""

    def convert(self, value, param, ctx):
        """Parse the integer, or fail as a usage error naming the option when it is odd or below ``min``."""
        number = super().convert(value, param, ctx)
        if number % 2:
            self.fail(f"{number} is odd: RoPE rotates pairs of dimensions", param, ctx)
        return number


HEAD_DIM = EvenInt(min=4, max=MAX_HEAD_DIM)  # RoPE scaling: the NTK exponent d / (d - 2) needs d >= 4
#: a head dimension of HARPE's waveforms (a sum of cosines over the d / 2 rotary pairs: any even d)
WAVEFORM_HEAD_DIM = EvenInt(min=2, max=MAX_HEAD_DIM)

#: Appended to the help of every flag taking positions / tokens.
POSITIONS_NOTE = f"({POSITIONS_HELP})"
TOKENS_NOTE = f"({TOKENS_HELP})"


def renamed_option(new: str, old: str, dest: str, *, required: bool = False, **kwargs):
    """``--new`` as a visible option and ``--old`` as a hidden alias of it (the same value under ``dest``).

    Giving both with different values is a usage error; ``required`` and ``default`` apply across the two names.
    """
    alias = f"{dest}__alias"
    default = kwargs.pop("default", None)
    if default is not None and kwargs.pop("show_default", False):  # as click writes it (a string it would bracket)
        kwargs["help"] = f"{kwargs.get('help', '')}  [default: {default}]"

    def decorate(command):
        @functools.wraps(command)
        def merged(*args, **params):
            value, old_value = params.pop(dest), params.pop(alias)
            if old_value is not None:
                if value is not None and value != old_value:
                    raise click.UsageError(f"{new} and {old} (its old name) disagree: give one")
                value = old_value
            if value is None:
                value = default
            if value is None and required:
                raise click.UsageError(f"Missing option '{new}'.")
            return command(*args, **{dest: value}, **params)

        visible = click.option(new, dest, **kwargs)
        hidden_kwargs = {key: value for key, value in kwargs.items() if key not in ("show_default", "help")}
        hidden = click.option(old, alias, hidden=True, **hidden_kwargs)
        return visible(hidden(merged))

    return decorate


def megatron_options(default_data_path: str):
    """Megatron-LM's settings that decide the ``megatron`` regime's windows (``--data-path``, ``--megatron-seed``,
    ``--megatron-split``, ``--reset-attention-mask``, ``--train-samples``, ``--epochs``), shared by the commands
    that compute it; ``default_data_path`` says where the index comes from when ``--data-path`` is not given.
    :func:`megatron_settings` turns the values into :class:`~freqlab.frequency.megatron_replay.MegatronOptions`.
    """
    options = [
        click.option(
            "--data-path",
            default=None,
            metavar="'[W1] P1 [W2 P2 ...]'",
            help="--regime megatron: Megatron's --data-path (prefixes of .idx/.bin, optionally weighted). "
            f"Default: {default_data_path}. L is Megatron's --seq-length.",
        ),
        click.option(
            "--megatron-seed",
            type=click.IntRange(0, 2**32 - 1),
            default=1234,
            show_default=True,
            help="--regime megatron: Megatron's --seed.",
        ),
        click.option(
            "--megatron-split",
            default="969,30,1",
            show_default=True,
            help="--regime megatron: Megatron's --split (the train range is counted).",
        ),
        click.option(
            "--reset-attention-mask", is_flag=True, help="--regime megatron: Megatron's --reset-attention-mask."
        ),
        click.option(
            "--train-samples",
            type=COUNT.within(1, 2**63 - 1),
            default=None,
            help="--regime megatron: Megatron's --train-samples (default: one epoch).",
        ),
        click.option(
            "--epochs",
            type=COUNT.within(1, 2**63 - 1),
            default=None,
            help="--regime megatron: every sample of this many epochs instead of --train-samples.",
        ),
    ]

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def refuse_unused_megatron(regimes) -> None:
    """A usage error for Megatron's options given without ``--regime megatron``, which alone reads them (a review:
    ``freq --data-path x --train-samples 5`` ran without a word).
    """
    names = ("data_path", "megatron_seed", "megatron_split", "reset_attention_mask", "train_samples", "epochs")
    if "megatron" not in regimes and (unused := given_on_command_line(*names)):
        raise click.UsageError(
            f"{'/'.join(unused)} {'applies' if len(unused) == 1 else 'apply'} to --regime megatron alone, not given"
        )


#: the regimes whose segments depend on --seed: pack's stream order (megatron replays its .idx with its own
#: --megatron-seed; the commands refuse it without one, so --seed never reaches it: a review)
SEEDED_REGIMES = ("pack",)


def refuse_unused_seed(regimes, seeded=SEEDED_REGIMES, also: str = "") -> None:
    """A usage error for ``--seed`` given without a regime it orders (a review: ``freq --seed 7 --regime natural``
    ran and said nothing, as if the seed had mattered); ``seeded``: the regimes that read it, ``also``: what else
    does (scan's sample).
    """
    regimes = (regimes,) if isinstance(regimes, str) else tuple(regimes)
    if given_on_command_line("seed") and not set(regimes) & set(seeded):
        raise click.UsageError(
            f"--seed orders the documents of --regime {' or '.join(seeded)}{also}; none is given here: the "
            f"{', '.join(dict.fromkeys(regimes))} f(i) would be the same for every seed"
        )


def megatron_settings(data_path, megatron_seed, megatron_split, reset_attention_mask, train_samples, epochs):
    """The :class:`~freqlab.frequency.megatron_replay.MegatronOptions` of :func:`megatron_options`' values."""
    from freqlab.frequency.megatron_replay import MegatronOptions

    if data_path is not None and not data_path.strip():
        raise click.BadParameter("names no index; leave it out to read the scanned one", param_hint="'--data-path'")
    if train_samples is not None and epochs is not None:  # MegatronOptions names them as Python does (a review)
        raise click.UsageError("--train-samples and --epochs: give one (Megatron sizes its training by one of them)")
    options = MegatronOptions(
        data_path or "", megatron_seed, megatron_split, reset_attention_mask, train_samples, epochs
    )
    try:
        options.check_indexes()
    except FreqlabError as exc:  # before anything is read or counted
        raise click.BadParameter(str(exc), param_hint="'--data-path'") from None
    return options


def given_on_command_line(*names: str) -> list[str]:
    """The options among ``names`` (parameter names) given on the command line, as ``--option``; a
    :func:`renamed_option` counts as given under either of its names (``--target`` for ``--extend-to``: an
    adversary's review found it taken for the default).
    """
    ctx, given = click.get_current_context(), click.core.ParameterSource.COMMANDLINE
    flags = {param.name: param.opts[0] for param in ctx.command.params if param.opts}  # --format for input_format
    return [
        flags.get(n, f"--{n.replace('_', '-')}")
        for n in names
        if given in (ctx.get_parameter_source(n), ctx.get_parameter_source(f"{n}__alias"))
    ]


def refuse_unused(*names: str, needed: str) -> None:
    """A usage error naming the options among ``names`` given on the command line, which set nothing without
    ``needed`` (``--regime needs --hist (...)``): each was once dropped without a word.
    """
    if given := given_on_command_line(*names):
        raise click.UsageError(f"{'/'.join(given)} {'needs' if len(given) == 1 else 'need'} {needed}")


def with_tau_from(tau_option):
    """``tau_option`` plus ``--tau-from FILE``: tau read from a ``freqlab calibrate --out`` file (giving both
    ``--tau`` and ``--tau-from`` is a usage error).
    """

    def decorate(command):
        @functools.wraps(command)
        def merged(*args, tau_from=None, **params):
            if tau_from is not None:
                if given_on_command_line("tau"):
                    raise click.UsageError("give --tau or --tau-from, not both")
                from freqlab.frequency.calibrate import read_tau

                params["tau"] = usage_error(lambda: read_tau(tau_from), "--tau-from")
            return command(*args, **params)

        option = click.option(
            "--tau-from",
            "tau_from",
            type=HomePath(dir_okay=False),
            default=None,
            help="Read tau from a `freqlab calibrate --out` JSON file.",
        )
        return tau_option(option(merged))

    return decorate


def check_layout(ctx, param, value):
    """``--layout``: read before any work (a usage error, exit 2, names what is wrong); the parsed
    :class:`~freqlab.frequency.layouts.Layout` is passed on (``read_layout`` returns it as is: read once).
    """
    if value is None:
        return None
    from freqlab.frequency.layouts import read_layout  # loads numpy: only when the option is given

    try:
        return read_layout(value)
    except FreqlabError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


# output files: what --out / --usage-out may replace --------------------------------------------------------------

#: names of the formats freqlab reads or writes: an output of one format is not given a name of another (a typo of
#: an input's name, a summary.json, a figure)
FORMAT_SUFFIXES = (
    ".json", ".jsonl", ".yaml", ".yml", ".csv", ".txt", ".png", ".pdf", ".svg", ".gz", ".zst", ".idx", ".parquet",
    ".npy", ".bin", ".ds", ".arrow", ".tiktoken", ".model", ".pickle",  # token streams, tokenizers (a review)
)  # fmt: skip


def check_folder_reachable(out, option: str) -> None:
    """A usage error (``option``) when the folder ``out`` goes in cannot be made: a file stands where it or a
    folder above it should be, or ``out`` names a folder itself (``x.png/``; checked before long work, whose results
    the write comes after).
    """
    from freqlab.files import check_file_name

    usage_error(lambda: check_file_name(str(out)), option)
    folder = Path(expand_home(str(out))).parent
    try:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        blocked = folder.exists() and not folder.is_dir()
    except OSError as exc:  # a name too long, ...: the write says it where it fails
        raise click.BadParameter(f"{out!r}: {exc.strerror or exc}", param_hint=f"'{option}'") from None
    if blocked:
        raise click.BadParameter(f"{out!r}: {folder} is not a folder", param_hint=f"'{option}'")
    if folder.is_dir():  # a file made and dropped there (a review: an unwritable folder was found after the work)
        import tempfile

        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as exc:
            raise click.BadParameter(
                f"{out!r}: cannot write in {folder} ({exc.strerror or exc})", param_hint=f"'{option}'"
            ) from None


def check_output_free(
    out,
    option: str,
    *,
    ours: Callable[[str], bool],
    written_as: str,
    suffix: str,
    describe: Callable[[str], str | None] = lambda path: None,
    reads: Sequence[tuple[str, str]] = (),
) -> None:
    """A usage error (``option``) where writing ``out`` would lose a file: a name of another format (one of
    :data:`FORMAT_SUFFIXES` but ``suffix``, this output's), one of the files the command reads (``reads``: (path,
    what it is)), or an existing file that ``ours`` does not recognise as the ``written_as`` freqlab writes there
    (``describe`` says what it is: "not a Parquet file: ..."). An empty file is written (a shell's ``> f``). Stdout
    (a pipe, ``> f``, ``>> f``) is written at its place, as ``cat`` writes, whatever it holds, but for a length
    histogram (``>> HIST`` would end it with another table; hours to count again).
    """
    path = Path(out)
    to_stdout = writes_stdout(out)
    if not to_stdout and path.suffix.lower() in FORMAT_SUFFIXES and path.suffix.lower() != suffix:
        kind = {".parquet": "Parquet", ".json": "JSON"}[suffix]
        raise click.BadParameter(
            f"{out!r} names another format: {written_as} is written as {kind}", param_hint=f"'{option}'"
        )
    if not path.is_file() or not path.stat().st_size or ours(str(out)):
        return
    for read, what in [*reads, *_files_read(option)]:  # the named first: their wording is the caller's
        if read is not None and file_identity(str(out)) == file_identity(str(read)):
            raise click.BadParameter(f"{out!r} is {what}: give another file", param_hint=f"'{option}'")
    what = "a length histogram" if has_freqlab_header(str(out), LENGTHS_FORMAT) else None
    if what is None and to_stdout:  # the user's own stream (a log, > f), which the output follows
        return
    raise click.BadParameter(
        f"{out!r} exists and is {what or describe(str(out)) or 'a file freqlab did not write'}: {option} replaces "
        f"only {written_as} it wrote; give another file",
        param_hint=f"'{option}'",
    )


def _files_read(option: str) -> list[tuple[str, str]]:
    """Every file the current command was given to read (its path options and arguments but ``option``, a
    ``--weights`` mixture file, a ``--layout`` config), as
    (path, "the file read (--option)"): ``--usage-out /dev/stdout >> schedule.yaml`` appended to the schedule, and
    ``--out /dev/stdout >> tau.json`` to the --tau-from file (a review).
    """
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return []
    found = []
    for param in ctx.command.params:
        values = ctx.params.get(param.name)
        if values is None or option in param.opts:
            continue
        for value in values if isinstance(values, tuple | list) else [values]:
            if isinstance(param.type, click.Path) and value is not None:
                path = histogram_file(value) if isinstance(param.type, HistogramPath) else value
            elif param.name == "weights" and isinstance(value, str) and os.path.isfile(expand_home(value)):
                path = expand_home(value)  # --weights mix.yaml (not a choice's word that names a file: --regime)
            elif isinstance(source := getattr(value, "source", None), str) and os.path.isfile(source):
                path = source  # a value read from a file when parsed (--layout config.json: a Layout)
            else:
                continue
            found.append((path, f"a file read ({param.opts[0] if param.opts else param.name.upper()})"))
    return found


# the options several commands share ---------------------------------------------------------------------------

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@contextlib.contextmanager
def report_beside(*outputs) -> Iterator[None]:
    """Print the command's report where its output files are not: on stderr when one of ``outputs`` is this process's
    stdout (``--out /dev/stdout | reader``, or stdout redirected to a file), so that no report follows the file's bytes.
    """
    elsewhere = any(out and writes_stdout(out) for out in outputs)
    with contextlib.redirect_stdout(sys.stderr) if elsewhere else contextlib.nullcontext():
        yield


def echo_json(data) -> None:
    """What ``--json`` prints: ``data`` (a result's ``to_dict()``, with what the command adds) as indented JSON, valid
    UTF-8 whatever it holds (a file name that is not UTF-8 as the escape ``\\udcXX``, as ``ensure_ascii`` writes it).
    """
    text = json.dumps(data, indent=2, ensure_ascii=False)
    click.echo(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def window_option(
    *,
    multiple: bool = False,
    default=None,
    callback=None,
    help: str | None = None,
    type: Size = POSITIONS,
    required: bool = False,
):
    """``--L``, the training window. ``multiple``: repeatable, under ``Ls`` (commands that compare windows side by
    side), else one window under ``L`` (a plan or a figure of one window); ``help`` replaces the default help
    where the command's default needs saying (e.g. ``[default: the schedule's longest]``); ``type``: narrower
    bounds (a drawn position matrix: a small window).
    """
    if multiple:
        text = help or f"Training window, e.g. 2048 or 2K {POSITIONS_NOTE}; repeat for several."

        def distinct(ctx, param, value):  # --L 2K --L 2048 is one window: one row, one curve
            value = tuple(dict.fromkeys(value))
            return callback(ctx, param, value) if callback is not None else value

        return click.option(
            "--L", "Ls", type=type, multiple=True, default=default, show_default=True, callback=distinct, help=text
        )
    return click.option(
        "--L",
        "L",
        type=type,
        multiple=True,  # to see a second --L (click keeps the last silently): given_once refuses it
        default=() if default is None else (default,),
        show_default=default is not None,
        required=required,
        callback=given_once(callback),
        help=help or f"Training window {POSITIONS_NOTE}.",
    )


def given_once(then=None, instead: str = "this command takes one"):
    """The callback of a one-value option declared repeatable: given twice is a usage error naming both values
    and saying what to do ``instead`` (a plain click option keeps the last one silently: ``--regime natural
    --regime pack`` would plan for pack alone); the one value (None when not given and without default) goes on to
    ``then``.
    """

    def callback(ctx: click.Context, param: click.Parameter, values):
        if len(values) > 1:
            shown = ", ".join(str(value) for value in values)
            raise click.BadParameter(f"given {len(values)} times ({shown}): {instead}", ctx, param)
        value = values[0] if values else None
        return then(ctx, param, value) if then is not None else value

    return callback


def refuse_empty(ctx: click.Context, param: click.Parameter, value):
    """The callback of a name option (a path, a preset, a Hugging Face id; one value or several): an empty one is a
    usage error naming the option (pathlib would read it as the working folder).
    """
    values = value if isinstance(value, tuple) else (value,)
    if "" in values:
        raise click.BadParameter("is empty: it names nothing", ctx, param)
    return value


def regime_option(*, multiple: bool = False, default=None, choices=REGIMES, help: str | None = None):
    """``--regime``: how documents fill the training windows. ``multiple``: repeatable, under ``regimes``
    (commands that compare regimes side by side), else one under ``regime`` (default ``natural``: a plan is
    computed from one frequency); ``choices``: fewer regimes where only some make sense.
    """
    if multiple:
        return click.option(
            "--regime",
            "regimes",
            type=click.Choice(choices),
            multiple=True,
            default=("natural",) if default is None else default,
            show_default=True,
            callback=lambda ctx, param, value: tuple(dict.fromkeys(value)),  # a regime given twice is one row
            help=help or "Data regime (repeat for several).",
        )
    return click.option(
        "--regime",
        "regime",
        type=click.Choice(choices),
        multiple=True,  # to see a second --regime: given_once refuses it
        default=(default or "natural",),
        callback=given_once(),
        show_default=True,
        help=help or "Data regime (one: what is computed here comes from one frequency).",
    )


tokens_option = click.option(
    "--tokens",
    type=TOKENS,
    default=None,
    help=f"Training budget T for f_T and the effective-length prediction, e.g. 1T or 300B {TOKENS_NOTE} [default: 1T].",
)

#: ``--tau`` and ``--tau-from``: None when neither is given, so that a schedule's own tau applies
#: (:func:`tau_or_default` gives the default otherwise)
tau_option = with_tau_from(
    click.option(
        "--tau",
        type=TAU,
        default=None,
        help=f"Occurrence threshold (STRING Fig. 2b) {TOKENS_NOTE} [default: 100B, or the schedule file's own tau"
        " where a command reads one].",
    )
)


def tau_or_default(tau):
    """``--tau`` as given, else the default threshold (100B, STRING Fig. 2b)."""
    return int(DEFAULT_TAU) if tau is None else tau


def hist_option(help: str = "Length histogram (Parquet from `freqlab scan`).", *, old_name: str | None = None):
    """``--hist``: a length histogram; ``help`` says what it is the default for where it is one (the stages of a
    schedule, the rows of a calibration file); ``old_name``: the command's earlier name for it, kept as a hidden
    alias (:func:`renamed_option`).
    """
    if old_name is not None:
        return renamed_option("--hist", old_name, "hist", type=HistogramPath(), help=help)
    return click.option("--hist", type=HistogramPath(), default=None, help=help)


def layout_option(
    help: str = "Attention layout: f per layer kind, e.g. 5*swa1024+global, 3*chunk8K+nope, or a model "
    "config.json (sliding_window, layer_types, attention_chunk_size, no_rope_layers, ...).",
):
    """``--layout``, read and checked before any work (:func:`check_layout`)."""
    return click.option("--layout", default=None, metavar="SPEC|config.json", callback=check_layout, help=help)


#: ``--seed`` of the pack regime's stream order
seed_option = click.option("--seed", type=SEED, default=0, show_default=True, help="Stream order for the pack regime.")


def _checked_weights(ctx: click.Context, param, value):
    """A --weights that is no mix (bad syntax, a missing or malformed file) is a usage error, found before the
    histogram is read.
    """
    if value is not None:
        try:
            Mixture.parse(value)
        except FreqlabError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


WEIGHTS_HELP = (
    "Train on a weighted mix of the histogram's sources: epochs per source (SOURCE=W%,... for shares of training "
    f"tokens), a YAML/JSON mixture file, or a published mix ({', '.join(PRESETS)})."
)
weights_option = click.option(
    "--weights", default=None, metavar="SOURCE=W,...|FILE|PRESET", help=WEIGHTS_HELP, callback=_checked_weights
)


def require(ok: bool, option: str, message: str) -> None:
    """A usage error (exit 2) naming ``option`` unless ``ok``: options that contradict each other or the papers'
    bounds are the caller's to fix, not a failure of the data.
    """
    if not ok:
        raise click.BadParameter(message, param_hint=f"'{option}'")


def usage_error(check, option: str | None = None):
    """``check()``'s result, or its :class:`FreqlabError` as a usage error (exit 2) naming ``option``: a library
    check of values the command line gave. Without ``option``, only a :class:`ParameterError` (a value checked
    against what the library computed from the others) is one, naming its own option; other errors pass.
    """
    try:
        return check()
    except FreqlabError as exc:
        if option is None and not isinstance(exc, ParameterError):
            raise
        flag = option or exc.option
        hint = f"'{flag}'"
        param = next((p for p in click.get_current_context().command.params if flag in p.opts), None)
        if param is not None and param.default is not None and not given_on_command_line(param.name):
            hint += f" (its default {param.default})"  # the user typed none: say so
        raise click.BadParameter(str(exc), param_hint=hint) from None
