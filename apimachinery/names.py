"""Names as Kubernetes checks them: RFC 1123 labels and subdomains.

Mirrors `IsDNS1123Label` and `IsDNS1123Subdomain` of k8s.io/apimachinery
(`pkg/util/validation/validation.go`): the same expressions, lengths and messages. Object
names, Volcano's task and queue names and the CRDs' `pattern`s all come from here.
"""

from __future__ import annotations

import re

#: `dns1123LabelFmt`: a DNS label, unanchored (as the Go messages quote it)
LABEL_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#: `dns1123SubdomainFmt`: labels joined by dots
SUBDOMAIN_FORMAT = LABEL_FORMAT + r"(\." + LABEL_FORMAT + ")*"
LABEL_MAX_LENGTH = 63
SUBDOMAIN_MAX_LENGTH = 253
#: anchored, as a CRD's `pattern` says them
LABEL_PATTERN = f"^{LABEL_FORMAT}$"
SUBDOMAIN_PATTERN = f"^{SUBDOMAIN_FORMAT}$"

_LABEL = re.compile(LABEL_FORMAT)
_SUBDOMAIN = re.compile(SUBDOMAIN_FORMAT)
_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def label_errors(value: str) -> list[str]:
    """What is wrong with `value` as a DNS label (`IsDNS1123Label`); empty if nothing."""
    errors = _too_long(value, LABEL_MAX_LENGTH)
    if not _LABEL.fullmatch(value):
        if _SUBDOMAIN.fullmatch(value):
            errors.append("must not contain dots")
        else:
            errors.append(_regex_error(_LABEL_MESSAGE, LABEL_FORMAT, "my-name", "123-abc"))
    return errors


def subdomain_errors(value: str) -> list[str]:
    """What is wrong with `value` as a DNS subdomain (`IsDNS1123Subdomain`), the rule of
    most object names; empty if nothing."""
    errors = _too_long(value, SUBDOMAIN_MAX_LENGTH)
    if not _SUBDOMAIN.fullmatch(value):
        errors.append(_regex_error(_SUBDOMAIN_MESSAGE, SUBDOMAIN_FORMAT, "example.com"))
    return errors


def _too_long(value: str, limit: int) -> list[str]:
    """`MaxLenError`."""
    return [f"must be no more than {limit} characters"] if len(value) > limit else []


def _regex_error(message: str, expression: str, *examples: str) -> str:
    """`RegexError`."""
    shown = " or ".join(f"'{example}'" for example in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{expression}')"
