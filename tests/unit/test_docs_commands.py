"""The README's command synopses follow the CLI: every command is listed, with only options it has."""

import re
from pathlib import Path

from ndbchaos.cli import build_parser, command_names

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands_block() -> str:
    text = README.read_text()
    body = text.split("\n## Commands\n", 1)[1]
    return body.split("```sh\n", 1)[1].split("```", 1)[0]


def _options(name: str) -> set[str]:
    parser = build_parser([name])
    sub = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices[name]
    opts = set()
    for action in sub._actions:
        opts.update(o for o in action.option_strings if o.startswith("--"))
    for action in sub._actions:  # a command with kinds (fault): their options count too
        if isinstance(action.choices, dict):
            for kind in action.choices.values():
                for a in kind._actions:
                    opts.update(o for o in a.option_strings if o.startswith("--"))
    return opts


def test_every_command_has_a_synopsis_line():
    listed = set(re.findall(r"^bin/chaos (\w+)", _commands_block(), re.M))
    missing = set(command_names()) - listed
    assert not missing, f"README's Commands block lists no line for {sorted(missing)}"


def test_synopsis_options_exist():
    wrong = []
    for line in _commands_block().splitlines():
        m = re.match(r"^bin/chaos (\w+)(.*?)(#|$)", line)
        if not m or m.group(1) not in command_names():
            continue
        for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", m.group(2)):
            if opt not in _options(m.group(1)):
                wrong.append(f"{m.group(1)} {opt}")
    assert not wrong, f"README names options the CLI does not have: {wrong}"


def test_architecture_lists_every_command():
    text = README.read_text()
    m = re.search(r"ndbchaos/commands/\s+the `ndbchaos` CLI \(([^)]*)\)", text)
    assert m, "the architecture's line for ndbchaos/commands/ is missing"
    listed = {w.strip() for w in m.group(1).replace("\n", " ").split(",")}
    assert listed == set(command_names())
