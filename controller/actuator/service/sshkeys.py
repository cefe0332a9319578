"""The ssh plugin's key pairs, made by `ssh-keygen` (Volcano makes an RSA pair per job).

The pure half takes a key generator instead of making randomness itself; this is the one
the actuator passes. `ssh-keygen` rather than a crypto library, because lavalog does not
depend on one; it must be on the PATH of a controller that serves MPI jobs.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from lavalog.controller.actuator.core.plugins import KeyPair, PluginError

RSA_BITS = 2048


def generate_key_pair() -> KeyPair:
    """A fresh RSA pair: PEM private key, `authorized_keys` line. Blocking (tens of ms)."""
    with tempfile.TemporaryDirectory(prefix="lavalog-ssh-") as directory:
        key = Path(directory) / "id_rsa"
        command = ["ssh-keygen", "-q", "-t", "rsa", "-b", str(RSA_BITS), "-m", "PEM", "-N", ""]
        try:
            subprocess.run([*command, "-C", "", "-f", str(key)], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise PluginError(f"cannot make the ssh plugin's key pair: {exc}") from exc
        return KeyPair(key.read_text(), key.with_suffix(".pub").read_text())
