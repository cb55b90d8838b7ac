"""Running the CLI on a hostile case with bounded time and memory (shared by the scripts of
tests/hostile/).  Release builds run under a 1 GiB address-space limit; sanitized builds
(--sanitized) cannot (AddressSanitizer reserves terabytes of shadow memory), so there
AddressSanitizer's own hard_rss_limit_mb bounds them instead."""
import os
import resource
import signal
import subprocess
import sys

LIMIT_BYTES = 1 << 30


def sanitized():
    return "--sanitized" in sys.argv[2:]


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def run(cmd, timeout=30):
    """(exit status, stdout + stderr) of cmd; status -1 and 'hung' past the timeout."""
    env = dict(os.environ)
    pre = _limit_address_space
    if sanitized():
        pre = None
        env["ASAN_OPTIONS"] = ":".join(
            filter(None, [env.get("ASAN_OPTIONS", ""), f"hard_rss_limit_mb={LIMIT_BYTES >> 20}"]))
    # its own process group, killed whole on a timeout (a tracer's child would outlive it)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=pre, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return -1, "hung"
    return p.returncode, err + out
