"""Shared by the `tfm serve` tests (serve_*_test.py): a server on a free loopback port, HTTP
requests (the standard library's client, and raw sockets for what a client library will not
send), the server's memory, and pass/fail counting. Standard library only."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

failures: list[str] = []
passed = 0


def check(cond: bool, what: str) -> bool:
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def summary(name: str) -> int:
    print(f"{name}: {passed} passed, {len(failures)} failed", flush=True)
    return 1 if failures else 0


class Server:
    """A `tfm serve` process on a free loopback port; its stderr collected on a thread."""

    def __init__(self, tfm: str, model: str, *flags: str, threads: str = "1"):
        self.proc = subprocess.Popen(
            [tfm, "serve", "--model", model, "--port", "0", "--threads", threads, *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.port = None
        ready = threading.Event()

        def drain():
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=drain, daemon=True)
        self.reader.start()
        if not ready.wait(60) or self.port is None:
            self.proc.kill()
            raise RuntimeError("server did not start: " + "\n".join(self.lines))

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def rss_mb(self) -> float:
        """Resident memory now (MB)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(f.read().split("VmRSS:")[1].split()[0]) / 1024

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None when it did not exit in time (then killed)."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.reader.join(5)
        return rc

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM; the exit status, or None when it did not exit in time (then killed)."""
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)


class PeakRss:
    """The server's peak resident memory while the block runs (sampled every 5 ms)."""

    def __init__(self, server: Server):
        self.server, self.peak, self.stop = server, 0.0, threading.Event()

    def __enter__(self):
        def watch():
            while not self.stop.is_set():
                try:
                    self.peak = max(self.peak, self.server.rss_mb())
                except (OSError, IndexError):
                    return
                time.sleep(0.005)

        self.thread = threading.Thread(target=watch, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def request(url: str, body=None, headers=None, method=None, timeout: float = 60):
    """(status, headers, body text); HTTP errors are answers too."""
    data = None
    hdrs = dict(headers or {})
    if isinstance(body, (dict, list)):
        data = json.dumps(body, ensure_ascii=False).encode()
        hdrs.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        data = body.encode()
        hdrs.setdefault("Content-Type", "application/json")
    elif isinstance(body, bytes):
        data = body
    req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def reference(tfm: str, model: str, lines: list[str], *flags: str) -> list[str]:
    """`tfm translate`'s lines for `lines`."""
    out = subprocess.run([tfm, "translate", "--model", model, "--threads", "1", *flags],
                         input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                         timeout=120, check=True)
    return out.stdout.split("\n")[:len(lines)]


def wait_for(cond, timeout: float) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False


def bomb(encoding: str, size: int = 200 << 20) -> bytes:
    """A JSON body of `size` bytes ({"text": "aaa..."}) compressed: ~200 KB of gzip or deflate,
    a few hundred bytes of brotli (through libbrotlienc, which Debian's libbrotli1 installs)."""
    head, tail, chunk = b'{"text": "', b'"}', b"a" * (1 << 20)
    if encoding in ("gzip", "deflate"):
        c = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
        out = [c.compress(head)] + [c.compress(chunk) for _ in range(size >> 20)]
        return b"".join(out + [c.compress(tail), c.flush()])
    lib = ctypes.CDLL(ctypes.util.find_library("brotlienc") or "libbrotlienc.so.1")
    data = head + b"a" * size + tail
    out = ctypes.create_string_buffer(1 << 20)
    n = ctypes.c_size_t(len(out))
    assert lib.BrotliEncoderCompress(5, 22, 0, ctypes.c_size_t(len(data)), data, ctypes.byref(n),
                                     out)
    return out.raw[:n.value]


# --- Raw HTTP over a socket: pipelining, half-closes, trickles, bad framing. ---

def connect(port: int, timeout: float = 10) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def raw_request(method: str, path: str, body: bytes = b"", headers: dict | None = None,
                port: int = 0) -> bytes:
    """One request's bytes, with Content-Length unless the headers frame the body otherwise."""
    hdrs = {"Host": f"127.0.0.1:{port}", **(headers or {})}
    if body and "Transfer-Encoding" not in hdrs:
        hdrs.setdefault("Content-Length", str(len(body)))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
    return head.encode() + b"\r\n" + body


class Response:
    def __init__(self, status: int, headers: dict, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.body[:200]!r}>"


def read_response(sock: socket.socket, buf: bytearray | None = None,
                  head: bool = False) -> Response | None:
    """One response from `sock` (Content-Length or chunked; interim 1xx skipped); `buf` carries
    bytes read past it to the next call. None when the connection closed first."""
    buf = buf if buf is not None else bytearray()

    def fill() -> bool:
        chunk = sock.recv(65536)
        if not chunk:
            return False
        buf.extend(chunk)
        return True

    while True:
        while b"\r\n\r\n" not in buf:
            if not fill():
                return None
        end = buf.index(b"\r\n\r\n")
        lines = buf[:end].decode("latin-1").split("\r\n")
        del buf[:end + 4]
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if 100 <= status < 200:
            continue
        break
    if head:
        return Response(status, headers, b"")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            while b"\r\n" not in buf:
                if not fill():
                    return None
            i = buf.index(b"\r\n")
            size = int(buf[:i].split(b";")[0], 16)
            del buf[:i + 2]
            while len(buf) < size + 2:
                if not fill():
                    return None
            body += buf[:size]
            del buf[:size + 2]
            if size == 0:
                return Response(status, headers, bytes(body))
    n = int(headers.get("content-length", "0"))
    while len(buf) < n:
        if not fill():
            return None
    body = bytes(buf[:n])
    del buf[:n]
    return Response(status, headers, body)


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """True when the server closes `sock` (EOF or reset) within `timeout`; bytes it sends first
    (an error answer) are skipped."""
    sock.settimeout(timeout)
    end = time.time() + timeout
    try:
        while time.time() < end:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def signal_name(rc: int | None) -> str:
    if rc is None:
        return "did not exit"
    if rc < 0:
        return f"killed by {signal.Signals(-rc).name}"
    return f"exit {rc}"


def main_guard(fn) -> None:
    try:
        sys.exit(fn())
    except Exception:  # a crash of the test itself is a failure with its traceback
        import traceback
        traceback.print_exc()
        sys.exit(1)
