"""The plugin catalogue: arguments read as Go's flag package reads them, the problems
admission rejects, the dependencies it adds."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.plugins import FlagSet, problems, with_dependencies

# --- arguments ------------------------------------------------------------------------

FLAGS = FlagSet("demo", {"ps": "ps", "port": 2222, "dry": False}, ports={"port"})


@pytest.mark.parametrize(
    ("args", "values", "error"),
    [
        pytest.param([], {"ps": "ps", "port": 2222, "dry": False}, "", id="defaults"),
        pytest.param(["--ps=param", "--port=3333"], {"ps": "param", "port": 3333}, "", id="equals"),
        pytest.param(["-ps", "server", "-port", "1"], {"ps": "server", "port": 1}, "", id="separate-value"),
        pytest.param(["--dry"], {"dry": True}, "", id="bare-bool"),
        pytest.param(["--dry=false"], {"dry": False}, "", id="bool-value"),
        pytest.param(["--port=0x10"], {"port": 16}, "", id="hex-int"),
        pytest.param(["--dry", "--"], {"dry": True}, "", id="terminator-at-end"),
        pytest.param(
            ["--ps=a", "extra", "--port=1"], {"ps": "a", "port": 2222},
            "plugin demo: 'extra' is not a flag, and Volcano would silently ignore it and "
            "everything after it; write flags as --name=value",
            id="non-flag-is-an-error",
        ),
        pytest.param(
            ["--", "--port=1"], {"port": 2222},
            "plugin demo: '--port=1' is not a flag, and Volcano would silently ignore it and "
            "everything after it; write flags as --name=value",
            id="arguments-after-terminator",
        ),
        pytest.param(
            ["--ps=a", "--nope", "--port=1"], {"ps": "a", "port": 2222},
            "plugin demo: flag provided but not defined: -nope (demo takes --ps, --port, --dry)",
            id="unknown-flag",
        ),
        pytest.param(
            ["--port=70000"], {"port": 2222},
            "plugin demo: -port=70000 is not a port number; use 1 to 65535", id="port-range",
        ),
        pytest.param(
            ["--port=many"], {"port": 2222},
            'plugin demo: invalid value "many" for flag -port', id="bad-int",
        ),
        pytest.param(
            ["--dry=maybe"], {"dry": False},
            'plugin demo: invalid boolean value "maybe" for -dry', id="bad-bool",
        ),
        pytest.param(["--ps"], {"ps": "ps"}, "plugin demo: flag needs an argument: -ps", id="missing-value"),
        pytest.param(["---ps=a"], {"ps": "ps"}, "plugin demo: bad flag syntax: ---ps=a", id="bad-syntax"),
    ],
)  # fmt: skip
def test_arguments_parse_like_go_flag(args: list[str], values: dict[str, Any], error: str) -> None:
    parsed = FLAGS.parse(args)
    assert {name: parsed.values[name] for name in values} == values
    assert parsed.error == error


def test_problems_name_each_plugin_that_admission_rejects() -> None:
    plugins = {
        "svc": ["--publish-not-ready-addresses", "--bogus"],
        "env": [],
        "tensorflow": ["--port=x"],
        "gang": [],
        "mpi": ["--master=launcher"],
        "ray": [],
    }
    assert list(problems(plugins, {"master", "worker"})) == [
        ("svc", "plugin svc: flag provided but not defined: -bogus (svc takes "
         "--publish-not-ready-addresses, --disable-network-policy, --inject-hosts-env)"),
        ("tensorflow", 'plugin tensorflow: invalid value "x" for flag -port'),
        ("gang", "unknown plugin; lavalog has env, svc, ssh, tensorflow, pytorch, mpi, ray, "
         "hcclrank"),
        ("mpi", "the mpi master task 'launcher' does not exist; name an existing task with "
         "--master=<task> (the default is 'master')"),
        ("ray", "the ray head task 'head' does not exist; name an existing task with "
         "--head=<task> (the default is 'head')"),
    ]  # fmt: skip
    assert list(problems({"mpi": [], "ray": ["--head=master"]}, {"master"})) == []


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        pytest.param({"env": []}, {"env": []}, id="no-dependencies"),
        pytest.param(
            {"tensorflow": ["--port=1"]}, {"tensorflow": ["--port=1"], "svc": []}, id="tensorflow"
        ),
        pytest.param({"pytorch": []}, {"pytorch": [], "svc": []}, id="pytorch"),
        pytest.param({"mpi": []}, {"mpi": [], "svc": [], "ssh": []}, id="mpi"),
        pytest.param({"ray": []}, {"ray": [], "svc": []}, id="ray"),
        pytest.param({"hcclrank": []}, {"hcclrank": []}, id="hcclrank"),
        pytest.param(
            {"mpi": [], "svc": ["--disable-network-policy"]},
            {"mpi": [], "svc": ["--disable-network-policy"], "ssh": []},
            id="listed-dependency-keeps-its-arguments",
        ),
    ],
)
def test_dependencies_added_as_volcano_admission_does(
    plugins: dict[str, list[str]], expected: dict[str, list[str]]
) -> None:
    assert with_dependencies(plugins) == expected
