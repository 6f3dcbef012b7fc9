"""Bearer-token authentication for the embedded API server: who a request is.

Tokens come from four places, checked in this order:
- the server's own admin token (the one in the kubeconfig it writes): user
  `kubernetes-admin` in `system:masters`, the superuser;
- a static token file in kube-apiserver's `--token-auth-file` format (CSV:
  `token,user,uid[,"group1,group2"]`);
- tokens issued in-process for tests (`issue_token`);
- ServiceAccount tokens minted through the TokenRequest subresource (`kubectl create
  token`): user `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts`,
  `system:serviceaccounts:<ns>`, valid until they expire or the ServiceAccount (or the
  object the token is bound to) is deleted.

Every authenticated user is also in `system:authenticated`, as kube-apiserver's
authenticated-group adder makes it; a request without a bearer token is
`system:anonymous` in `system:unauthenticated`; an unknown token is refused (401)."""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import io
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from .rbac import MASTERS, SERVICE_ACCOUNT_PREFIX, UserInfo

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = UserInfo("system:anonymous", groups=(UNAUTHENTICATED,))
ADMIN = UserInfo("kubernetes-admin", groups=(MASTERS, AUTHENTICATED))
# kube-apiserver's --api-audiences default to its service account issuer
DEFAULT_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)
ISSUER = "https://kubernetes.default.svc.cluster.local"


class TokenFileError(ValueError):
    """A token file that cannot be used; the message names the file and the line."""


def parse_token_file(path: str | Path) -> dict[str, UserInfo]:
    """kube-apiserver's `--token-auth-file`: one `token,user,uid[,groups]` record per line,
    groups a comma-separated list inside one (quoted) field. Records with an empty token are
    skipped and a repeated token takes the last record's user, as kube-apiserver does."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenFileError(f"token file '{name}': cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TokenFileError(f"token file '{name}': not UTF-8 text: {exc}") from None
    tokens: dict[str, UserInfo] = {}
    reader = csv.reader(io.StringIO(text), strict=True)
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise TokenFileError(f"token file '{name}': line {reader.line_num}: {exc}") from None
        if not record:
            continue  # a blank line
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{name}' must have at least 3 columns (token, user name, user uid), "
                f"found {len(record)} on line {reader.line_num}"
            )
        token, user, uid = record[0], record[1], record[2]
        if not token:
            continue
        if not user:
            raise TokenFileError(f"token file '{name}': line {reader.line_num}: the user name is empty")
        groups = tuple(g for g in record[3].split(",") if g) if len(record) >= 4 else ()
        tokens[token] = UserInfo(user, uid=uid, groups=groups)
    return tokens


def _with_authenticated(user: UserInfo) -> UserInfo:
    if AUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    return UserInfo(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        uid=uid,
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


@dataclass(frozen=True)
class BoundObject:
    kind: str
    api_version: str
    name: str
    uid: str


@dataclass(frozen=True)
class ServiceAccountToken:
    namespace: str
    name: str
    uid: str
    expires: float  # epoch seconds
    audiences: tuple[str, ...]
    bound: BoundObject | None = None


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires: float  # epoch seconds
    audiences: tuple[str, ...]


# What a ServiceAccount token still depends on: the uid of an object by (kind, namespace, name),
# or None when it is gone. The control plane answers from its stores.
UIDLookup = Callable[[str, str, str], str | None]


class Authenticator:
    def __init__(
        self,
        *,
        admin_token: str | None = None,
        static_tokens: dict[str, UserInfo] | None = None,
        uid_of: UIDLookup | None = None,
    ) -> None:
        self.admin_token: str | None = None
        self._admin_header: str | None = None
        self.set_admin_token(admin_token)
        self._static = {token: _with_authenticated(user) for token, user in (static_tokens or {}).items()}
        self._issued: dict[str, UserInfo] = {}
        self._service_accounts: dict[str, ServiceAccountToken] = {}
        self._uid_of = uid_of
        self._signing_key = secrets.token_bytes(32)

    def set_admin_token(self, token: str | None) -> None:
        """Replace the superuser token (the old one stops working at once)."""
        self.admin_token = token
        self._admin_header = f"Bearer {token}" if token else None

    # ------------------------------------------------------------ issuing
    def issue_token(self, user: str, groups: tuple[str, ...] | list[str] = (), *, uid: str = "") -> str:
        """A bearer token for `user` in `groups` (plus system:authenticated), valid for the
        server's lifetime: how tests act as a given identity."""
        if not user:
            raise ValueError("a token needs a user name")
        token = secrets.token_urlsafe(32)
        self._issued[token] = _with_authenticated(UserInfo(user, uid=uid, groups=tuple(groups)))
        return token

    def issue_service_account_token(
        self,
        namespace: str,
        name: str,
        *,
        expiration_seconds: int = 3600,
        audiences: tuple[str, ...] = DEFAULT_AUDIENCES,
        bound: BoundObject | None = None,
    ) -> IssuedToken:
        """A token for ServiceAccount `namespace/name`, which must exist (LookupError if not)."""
        uid = self._uid_of("ServiceAccount", namespace, name) if self._uid_of is not None else ""
        if uid is None:
            raise LookupError(f'serviceaccounts "{name}" not found')
        now = time.time()
        expires = now + expiration_seconds
        claims: dict[str, object] = {
            "aud": list(audiences),
            "exp": int(expires),
            "iat": int(now),
            "iss": ISSUER,
            "jti": secrets.token_hex(8),
            "kubernetes.io": {
                "namespace": namespace,
                "serviceaccount": {"name": name, "uid": uid},
                **({bound.kind.lower(): {"name": bound.name, "uid": bound.uid}} if bound else {}),
            },
            "nbf": int(now),
            "sub": f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        }
        token = self._jwt(claims)
        self._service_accounts[token] = ServiceAccountToken(namespace, name, uid, expires, tuple(audiences), bound)
        return IssuedToken(token, expires, tuple(audiences))

    def _jwt(self, claims: dict[str, object]) -> str:
        """A signed JWT in the shape kube-apiserver issues (clients may read its claims; this
        server checks tokens against what it issued, so the signature is only for the shape)."""

        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).decode().rstrip("=")

        head = b64(orjson.dumps({"alg": "HS256", "kid": "kubeplane"})) + "." + b64(orjson.dumps(claims))
        signature = hmac.new(self._signing_key, head.encode(), hashlib.sha256).digest()
        return head + "." + b64(signature)

    # ------------------------------------------------------------ authenticating
    def authenticate(self, authorization: str) -> UserInfo | None:
        """The user an Authorization header names: ANONYMOUS without a bearer token, None for a
        token this server does not know (or one no longer valid)."""
        if authorization == self._admin_header:
            return ADMIN
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return ANONYMOUS  # no bearer token: the request is anonymous, as kube-apiserver treats it
        user = self._static.get(token) or self._issued.get(token)
        if user is not None:
            return user
        sa = self._service_accounts.get(token)
        if sa is None:
            return None
        if time.time() >= sa.expires or not self._still_bound(sa):
            del self._service_accounts[token]
            return None
        return service_account_user(sa.namespace, sa.name, sa.uid)

    def _still_bound(self, sa: ServiceAccountToken) -> bool:
        if self._uid_of is None:
            return True
        if self._uid_of("ServiceAccount", sa.namespace, sa.name) != sa.uid:
            return False  # deleted, or deleted and created again
        if sa.bound is not None:
            namespace = "" if sa.bound.kind == "Node" else sa.namespace
            return self._uid_of(sa.bound.kind, namespace, sa.bound.name) == sa.bound.uid
        return True
