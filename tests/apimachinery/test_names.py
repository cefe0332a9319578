"""Names checked as k8s.io/apimachinery's IsDNS1123Label and IsDNS1123Subdomain check them."""

from __future__ import annotations

import pytest

from lavalog.apimachinery import names

LABEL_REGEX = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name' or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_REGEX = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        pytest.param("worker-0", [], id="valid"),
        pytest.param("0", [], id="one-digit"),
        pytest.param("Worker_1", [LABEL_REGEX], id="upper-case-and-underscore"),
        pytest.param("-worker", [LABEL_REGEX], id="leading-dash"),
        pytest.param("a.b", ["must not contain dots"], id="a-subdomain-is-no-label"),
        pytest.param("a" * 63, [], id="longest"),
        pytest.param("a" * 64, ["must be no more than 63 characters"], id="too-long"),
        pytest.param("", [LABEL_REGEX], id="empty"),
    ],
)
def test_labels(value: str, errors: list[str]) -> None:
    assert names.label_errors(value) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        pytest.param("example.com", [], id="valid"),
        pytest.param("team-a", [], id="one-label"),
        pytest.param("a..b", [SUBDOMAIN_REGEX], id="empty-label"),
        pytest.param("a.-b", [SUBDOMAIN_REGEX], id="label-starting-with-dash"),
        pytest.param("Team_A", [SUBDOMAIN_REGEX], id="upper-case"),
        pytest.param("a" * 253, [], id="longest"),
        pytest.param("a" * 254, ["must be no more than 253 characters"], id="too-long"),
        pytest.param(
            "A" * 254, ["must be no more than 253 characters", SUBDOMAIN_REGEX], id="both"
        ),
    ],
)
def test_subdomains(value: str, errors: list[str]) -> None:
    assert names.subdomain_errors(value) == errors
