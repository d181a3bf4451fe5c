"""Fetching a web page for ``docs_ingest`` / ``ccmemory docs ingest --url`` without crossing the network boundary.

A URL comes from the model or the user, and a page can redirect anywhere, so
every hop is checked the same way:

* only ``http`` and ``https``, at most :data:`MAX_REDIRECTS` redirects, each
  followed by this module (never by a library) and checked again;
* the host is resolved once per hop, and the hop is refused when **any** of its
  addresses is not public (loopback, private, carrier-grade NAT, link-local,
  multicast, unspecified, reserved, site-local, or such an address inside an
  IPv4-mapped, 6to4, Teredo or NAT64 one); the connection then goes to the
  address that was checked (the host name still goes in ``Host`` and, for https,
  in SNI and the certificate check), so a second DNS answer cannot swap it;
* the whole fetch has one deadline (:data:`DEADLINE_SECONDS`), every read waits
  only as long as the deadline and a byte-rate floor (:data:`MIN_BYTES_PER_SECOND`
  after :data:`GRACE_SECONDS`) allow, and the body is capped at the caller's size;
* a host that refuses, cannot be reached, answers too slowly or not with HTTP
  gets one message, which says nothing about which of these it was.

Intranet pages are the user's choice: hosts, addresses or networks listed in the
user's own setting ``docs.allow_private_hosts`` (``config.json`` in the data
directory, never a project file) may resolve to non-public addresses.
"""

from __future__ import annotations

import http.client
import io
import ipaddress
import queue
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable
from urllib.parse import urljoin, urlsplit

from . import __version__
from .errors import ValidationError

DEADLINE_SECONDS = 20.0
GRACE_SECONDS = 10.0
MIN_BYTES_PER_SECOND = 1024
MAX_REDIRECTS = 5
SCHEMES = {"http": 80, "https": 443}
REDIRECTS = (301, 302, 303, 307, 308)
ALLOW_SETTING = "docs.allow_private_hosts"
_READ_SIZE = 64 * 1024

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class FetchError(ValidationError):
    """A page that could not be fetched; the message is safe to show (no internal detail)."""


class RefusedAddress(FetchError):
    """A URL whose host is not public and not allowed by the user."""


class _TooSlow(Exception):
    """The deadline passed or the server sends too slowly (reported as a generic failure)."""


@dataclass
class Page:
    body: bytes
    content_type: str
    charset: str | None
    url: str  # after redirects


@dataclass(frozen=True)
class Allowed:
    """The user's exceptions to the public-address rule: host names and address networks."""

    names: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "Allowed":
        """Entries are host names (``wiki.corp``), addresses (``10.0.0.5``, ``::1``) or networks (``10.0.0.0/8``)."""
        names, networks = set(), []
        for entry in entries:
            text = entry.strip().strip("[]").lower().rstrip(".")
            if not text:
                continue
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                names.add(text)
        return cls(frozenset(names), tuple(networks))

    def permits(self, host: str, address: IPAddress) -> bool:
        return host in self.names or any(address in network for network in self.networks)


def user_allowed() -> Allowed:
    """The exceptions from the user's config (plugin options and the data directory's config.json only)."""
    from . import config

    return Allowed.parse(config.load().get(*ALLOW_SETTING.split(".")))


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _stands_for(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv4-mapped or NAT64 (64:ff9b::/96) address reaches, else the address itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def is_public(address: IPAddress) -> bool:
    """Whether ``address`` is a globally routed unicast address, judged by the IPv4 address it stands for
    (IPv4-mapped, NAT64) and by the IPv4 addresses a tunnel carries (6to4, Teredo) too."""
    address = _stands_for(address)
    carried: list[IPAddress] = []
    if isinstance(address, ipaddress.IPv6Address):
        if address.is_site_local:
            return False
        carried = [address.sixtofour] if address.sixtofour else list(address.teredo or ())
    for one in [address, *carried]:
        if (not one.is_global or one.is_multicast or one.is_reserved or one.is_unspecified or one.is_loopback
                or one.is_link_local or one.is_private):
            return False
    return True


def _resolve(host: str, port: int, deadline: float) -> list[IPAddress]:
    """The host's addresses; the lookup runs in a daemon thread so it cannot outlast the deadline."""
    answers: queue.Queue[Any] = queue.Queue()

    def lookup() -> None:
        try:
            answers.put(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except Exception as exc:  # handed to the caller
            answers.put(exc)

    threading.Thread(target=lookup, name="ccmemory-dns", daemon=True).start()
    try:
        found = answers.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        raise _TooSlow() from None
    if isinstance(found, Exception):
        raise found
    addresses: list[IPAddress] = []
    for family, _, _, _, sockaddr in found:
        if family in (socket.AF_INET, socket.AF_INET6):
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in addresses:
                addresses.append(address)
    if not addresses:
        raise OSError("no address")
    return addresses


def checked_addresses(host: str, addresses: list[IPAddress], allowed: Allowed) -> list[IPAddress]:
    """``addresses`` if every one may be contacted; RefusedAddress otherwise (one bad answer taints the host)."""
    for address in addresses:
        if not is_public(address) and not allowed.permits(host, address):
            raise RefusedAddress(
                f"Refused to fetch from {host}: the address is not public (loopback, private, link-local or "
                f"reserved); ccmemory fetches only public pages. A user who wants intranet pages lists the host in "
                f"the `{ALLOW_SETTING}` setting of their own ccmemory config.")
    return addresses


class _Budget:
    """The fetch's deadline and byte-rate floor: how long the next read may wait."""

    def __init__(self, seconds: float) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + seconds
        self.received = 0

    def wait(self) -> float:
        """Seconds the next socket operation may take; _TooSlow when none are left."""
        now = time.monotonic()
        floor_until = self.start + max(GRACE_SECONDS, self.received / MIN_BYTES_PER_SECOND)
        left = min(self.deadline, floor_until) - now
        if left <= 0:
            raise _TooSlow()
        return left

    def count(self, received: int) -> None:
        self.received += received


class _PacedReader(io.RawIOBase):
    """A socket's incoming bytes, each read bounded by the budget (what ``http.client`` reads through)."""

    def __init__(self, sock: socket.socket, budget: _Budget) -> None:
        self.sock = sock
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.sock.settimeout(self.budget.wait())
        try:
            received = self.sock.recv_into(buffer)
        except TimeoutError:
            raise _TooSlow() from None
        self.budget.count(received)
        return received

    def close(self) -> None:
        if not self.closed:
            self.sock.close()
        super().close()


class _PacedSocket:
    """The connection's socket as ``http.client`` uses it: sendall, makefile, close."""

    def __init__(self, sock: socket.socket, budget: _Budget) -> None:
        self.sock = sock
        self.budget = budget

    def sendall(self, data: bytes) -> None:
        self.sock.settimeout(self.budget.wait())
        self.sock.sendall(data)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_PacedReader(self.sock, self.budget))

    def close(self) -> None:
        """Nothing: ``http.client`` closes the connection once the headers say so, and the response's
        reader (which closes the socket, see :func:`get`) still has the body to read."""


def _connect(addresses: list[IPAddress], port: int, budget: _Budget) -> socket.socket:
    """A TCP connection to the first of the checked addresses that answers."""
    failure: Exception = OSError("no address")
    for address in addresses:
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(budget.wait())
            sock.connect((str(address), port))
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
    raise failure


def _request(url: str, allowed: Allowed, budget: _Budget) -> http.client.HTTPResponse:
    """One GET of ``url`` over a connection to a checked address; the response, headers read."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES or not parts.hostname:
        raise FetchError(f"Only http(s) URLs with a host can be fetched, got {url!r}")
    try:
        host = parts.hostname.encode("idna").decode("ascii").rstrip(".") if not _is_literal(parts.hostname) \
            else parts.hostname
        port = parts.port or SCHEMES[scheme]
    except (UnicodeError, ValueError):
        raise FetchError(f"{url!r} has an invalid host or port") from None
    addresses = checked_addresses(host, _resolve(host, port, budget.deadline), allowed)
    sock = _connect(addresses, port, budget)
    try:
        if scheme == "https":
            sock.settimeout(budget.wait())
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        connection = http.client.HTTPConnection(host, port)
        connection.default_port = SCHEMES[scheme]  # Host carries the port only when it is not the scheme's
        connection.sock = _PacedSocket(sock, budget)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", target, headers={
            "User-Agent": f"ccmemory/{__version__} (docs_ingest)", "Accept-Encoding": "identity",
            "Accept": "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5", "Connection": "close"})
        return connection.getresponse()
    except BaseException:
        sock.close()
        raise


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def get(url: str, max_bytes: int, *, accept: Callable[[str], bool] = lambda kind: True,
        allowed: Allowed | None = None, deadline_seconds: float = DEADLINE_SECONDS) -> Page:
    """GET ``url`` (following checked redirects) and return its body of at most ``max_bytes``.

    ``accept(content_type)`` refuses a page by its type before its body is read.
    Raises :class:`RefusedAddress` for a host that is not public and not allowed,
    :class:`FetchError` for everything else that goes wrong.
    """
    allowed = user_allowed() if allowed is None else allowed
    budget = _Budget(deadline_seconds)
    current = url
    try:
        for _ in range(MAX_REDIRECTS + 1):
            response = _request(current, allowed, budget)
            try:
                if response.status in REDIRECTS:
                    location = response.getheader("Location")
                    if not location:
                        raise FetchError(f"Could not fetch {url}: a redirect without a Location")
                    current = urljoin(current, location.strip())
                    if urlsplit(current).scheme.lower() not in SCHEMES:
                        raise FetchError(f"Refused to fetch {url}: it redirects to a non-http(s) address")
                    continue
                if response.status != 200:
                    raise FetchError(f"Could not fetch {url}: the server answered HTTP {response.status}")
                length = response.getheader("Content-Length")
                if length and length.strip().isdigit() and int(length) > max_bytes:
                    raise FetchError(f"{url} is larger than {max_bytes:,} bytes")
                content_type = response.headers.get_content_type()
                if not accept(content_type):
                    raise FetchError(f"{url} is {content_type}, not text; save it as text and ingest the file")
                encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
                if encoding != "identity":  # asked for none: a compressed body would be stored as binary noise
                    raise FetchError(f"{url} came compressed ({encoding}) although none was asked for; save the "
                                     "page as text and ingest the file")
                charset = response.headers.get_content_charset()
                body = _read_body(response, max_bytes)
            finally:
                response.close()
            if len(body) > max_bytes:
                raise FetchError(f"{url} is larger than {max_bytes:,} bytes")
            return Page(body, content_type, charset, current)
        raise FetchError(f"Could not fetch {url}: more than {MAX_REDIRECTS} redirects")
    except FetchError:
        raise
    except (_TooSlow, OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        raise FetchError(
            f"Could not fetch {url}: no complete answer within {deadline_seconds:g} s (the host refused or could "
            "not be reached, sent too slowly, or did not answer HTTP). Save the page to a file and ingest it by "
            "path.") from exc


def _read_body(response: http.client.HTTPResponse, max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of the body (one more tells the caller it was too large)."""
    parts: list[bytes] = []
    size = 0
    while size <= max_bytes:
        data = response.read(min(_READ_SIZE, max_bytes + 1 - size))
        if not data:
            break
        parts.append(data)
        size += len(data)
    return b"".join(parts)
